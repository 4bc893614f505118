// resctrlfsd: the resctrl filesystem daemon (see daemon/options.cc for its
// command line).
#include "daemon/daemon.h"
#include "daemon/real_parts.h"

int main(int argc, char** argv) {
  return resctrlfs::daemon::daemon_main(argc, argv, resctrlfs::daemon::make_real_parts);
}
