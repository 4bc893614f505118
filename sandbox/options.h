// Defines the command line of resctrlfs-sandbox:
//   resctrlfs-sandbox [SANDBOX OPTIONS] [DAEMON OPTIONS] [-- COMMAND [ARGS...]]
// Daemon options are passed to resctrlfsd unchanged (its mount point is
// always /sys/fs/resctrl and it always runs in the foreground); the sandbox
// also reads the ones that decide what /proc and sysfs must show
// (--platform, --backend, --hw-root, -o).
#pragma once

#include <string>
#include <vector>

#include "base/result.h"

namespace resctrlfs::sandbox {

struct Options {
  std::vector<std::string> daemon_args;  // for resctrlfsd, in the given order
  std::string daemon_path;               // --daemon PATH ("" = search)
  std::string platform = "host";         // from --platform
  std::string backend = "sim";           // from --backend
  std::string hw_root = "/";             // from --hw-root (with the real backend)
  std::string mount_options;             // every -o value, joined by ','
  bool has_state_dir = false;            // --state-dir given
  bool ignore_topology = false;          // --ignore-topology
  bool verbose = false;                  // -v / --verbose: the daemon's info lines too
  bool has_log_level = false;            // --log-level given (for the daemon)
  std::string intercept = "all";         // --intercept all|statfs-only|none
  std::string cpus = "host";             // --cpus host|platform
  bool help = false;                     // -h / --help
  bool version = false;                  // --version
  bool list_platforms = false;           // --list-platforms
  std::vector<std::string> command;      // after "--"; empty = shell
};

// Parses the arguments after argv[0]. An option that is neither the
// sandbox's nor the daemon's (daemon/option_names.h) is refused with a
// suggestion, as is an argument before "--" that is no option.
Result<Options> parse_options(const std::vector<std::string>& args);

// Sets the platform, also in the daemon's arguments (the last --platform
// there is replaced; one is added if there is none).
void set_platform(Options& o, const std::string& platform);

// The daemon options without the kernel's resctrl mount options (cdp,
// cdpl2, mba_MBps, debug) in their -o values (an -o left empty is dropped):
// what every daemon of the sandbox gets, whatever it is mounted with.
std::vector<std::string> daemon_args_without_resctrl_options(const Options& o);

// Whether the daemon options name a --boot-state-dir.
bool has_boot_state_dir(const Options& o);

// The --help text.
std::string usage();

}  // namespace resctrlfs::sandbox
