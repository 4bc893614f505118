// resctrlfsd's command-line option names and whether each takes a value:
// what resctrlfs-sandbox, which passes the daemon's options on, needs to tell
// a mistyped option from one of the daemon's and an option's value from
// the next option. Header-only (the sandbox never links the daemon);
// daemon_unit_tests checks it against the parser in daemon/options.cc, so
// an option added there and not here fails a test.
#pragma once

#include <string_view>

namespace resctrlfs::daemon {

struct OptionName {
  std::string_view name;  // "--platform", "-o"
  bool takes_value;
};

inline constexpr OptionName kDaemonOptionNames[] = {
    {"-h", false},
    {"--help", false},
    {"--version", false},
    {"-f", false},
    {"--foreground", false},
    {"-o", true},
    {"--platform", true},
    {"--list-platforms", false},
    {"--backend", true},
    {"--state-dir", true},
    {"--boot-state-dir", true},
    {"--journal-fsync", false},
    {"--no-journal-fsync", false},
    {"--control", true},
    {"--broker", true},
    {"--virtual-cpus", true},
    {"--task-model", true},
    {"--hw-root", true},
    {"--tasks-from-proc", false},
    {"--rdt-from-cpuid", false},
    {"--rdt", true},
    {"--log-level", true},
    {"--dump-registers-on-exit", true},
    {"--self-check", false},
    {"--json", false},
    {"--kernel-resctrl", true},
    {"--keeper", false},
    {"--fuse-fd", true},
    {"--takeover", false},
    {"--fd-store", false},
};

}  // namespace resctrlfs::daemon
