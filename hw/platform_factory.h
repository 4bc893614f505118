// Defines the one door from a program's options to the platform it runs:
// which backend (a simulated machine or the real one), which architecture
// builds it, and what the daemon and the sandbox need of it besides the
// Arch (the real backend's preconditions, the self-check's probe, the CPUs
// /proc/cpuinfo shows, the register listing's fields). daemon/ and sandbox/
// speak of platforms and backends only through this header; its .cc is the
// only file outside hw/<arch>/ that names an architecture, in one table
// with a row per architecture (docs/architecture.md, "Adding an
// architecture").
//
// daemon/ and sandbox/ include this; fs/ never does.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "hw/backend.h"
#include "hw/probe.h"

namespace resctrlfs::hw {

// Which machine the Arch programs: a simulated one built from a platform
// profile, or this machine's registers through the privileged broker.
enum class BackendKind { kSim, kReal };

// The backend's name on command lines and in `resctrlfsctl status`:
// "sim", "msr".
std::string_view backend_name(BackendKind kind);
// The backend called `name`, or nullopt.
std::optional<BackendKind> backend_named(std::string_view name);
// Every backend's name, in the order above.
std::vector<std::string> backend_names();

// Where the broker listens unless told otherwise, and so where the real
// backend looks for it: in the runtime directory its systemd unit creates
// (mode 0700, root's), which the broker also creates when started by hand.
// (packaging/CMakeLists.txt reads the value from this line.)
inline constexpr const char* kDefaultBrokerSocket = "/run/resctrl-msrd/msrd.sock";

// What a program chose.
struct PlatformOptions {
  BackendKind backend = BackendKind::kSim;
  // kSim: a built-in platform name (platform_names()), NAME@host, or a JSON
  // profile's path.
  std::string platform = "host";
  // The kernel's rdt= boot parameter (e.g. "l3cat,!mba").
  std::string rdt;
  // kReal: where the broker listens, and where the CPU devices and sysfs
  // are read ("/" on a real machine; elsewhere, a test's emulation of them).
  std::string broker_socket = kDefaultBrokerSocket;
  std::string hw_root = "/";
};

// The built-in simulated platforms of every architecture.
std::vector<std::string> platform_names();
// A built-in platform fitted to this host's CPUs: "NAME@host".
std::string fitted_to_host(const std::string& platform);

// Builds the backend `opts` names: the simulated machine of the
// architecture whose platform it is, or the real machine.
Result<Backend> make_platform(const PlatformOptions& opts);

// kReal only, before anything else of the real backend: the resctrl
// feature flags the CPUs under opts.hw_root enumerate, as a /proc/cpuinfo
// "flags" line (before any rdt= option): the evidence to check instead of
// the kernel's /proc/cpuinfo (resctrlfsd --rdt-from-cpuid).
Result<std::string> cpuinfo_flags_from_hardware(const PlatformOptions& opts);
// kReal only: refuses a machine on which the real backend must not run: a
// kernel resctrl is mounted (`proc_mounts`, the text of /proc/mounts; EBUSY)
// or the CPUs have no resctrl features (`cpuinfo`, the text of
// /proc/cpuinfo or cpuinfo_flags_from_hardware(); ENODEV).
Result<void> check_real_preconditions(std::string_view proc_mounts, std::string_view cpuinfo);
// kReal only: the CPUs under opts.hw_root as /proc/cpuinfo would show them
// (before any rdt= option), read without the broker.
Result<CpuDescription> real_cpu_description(const PlatformOptions& opts);
// kReal only: the read-only probe of `resctrlfsd --self-check`.
Result<std::unique_ptr<HwProbe>> probe_platform(const PlatformOptions& opts);

// One number of a register's place in `resctrlfsctl registers`: the field's
// name and value, shown also as NAME_hex where `hex`.
struct RegisterField {
  const char* name;
  uint64_t value;
  bool hex;
};
// Where register `r` lives, as named fields (a per-CPU register: its CPU
// and number; a memory-mapped one: its address and width).
std::vector<RegisterField> register_place(const RegisterValue& r);

}  // namespace resctrlfs::hw
