// Defines `resctrlfsd --self-check` (ours): a read-only report, safe on a
// production machine, of how resctrlfs sees this machine next to what the
// machine and the kernel's resctrl (where mounted) show. What every CPU
// enumerates, the resctrl registers read (never written) through the
// broker (the probe of hw/platform_factory.h), and every info/ file and
// group schemata of the kernel's tree compared with a private resctrl tree
// that resctrlfs builds in memory for the same enumeration (its register
// writes go to an in-memory register file, never the machine).
#pragma once

#include <string>

namespace resctrlfs::daemon {

struct SelfCheckOptions {
  std::string broker_socket;
  std::string rdt;
  std::string hw_root = "/";
  std::string kernel_resctrl = "/sys/fs/resctrl";
  bool json = false;
};

// Writes the report to `out`. Exit status: 0 when nothing differs (some
// checks may have been impossible), 1 when something differs, 2 when not
// even the CPU topology could be read.
int run_self_check(const SelfCheckOptions& opts, std::string& out);

}  // namespace resctrlfs::daemon
