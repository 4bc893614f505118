// Defines the command line of resctrlfsd (DaemonOptions, parse_daemon_args)
// and the split of `-o` into the kernel's resctrl mount options and the
// options handed to libfuse.
//
// Pure functions: nothing here touches the system, so the parser is unit
// tested directly.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "fs/filesystem.h"
#include "hw/platform_factory.h"

namespace resctrlfs::daemon {

using BackendKind = hw::BackendKind;

inline constexpr const char* kDefaultLockDir = "/run/resctrlfs";
// How long a new daemon waits for the previous one on its mount point to
// exit (after `fusermount3 -u`, it still saves its boot state).
inline constexpr std::chrono::milliseconds kExitingDaemonWait{10000};
// The boot-state files (boot_state.h): on tmpfs, gone at reboot.
inline constexpr const char* kDefaultBootStateDir = "/run/resctrlfs/boot";

struct DaemonOptions {
  bool foreground = false;
  std::string mountpoint;
  std::string platform = "host";
  BackendKind backend = BackendKind::kSim;
  std::string state_dir;  // empty: no state directory (no journal)
  // Where what outlives an unmount (daemon/boot_state.h) waits for the next daemon on the
  // same mount point; empty: nothing is kept.
  std::string boot_state_dir = kDefaultBootStateDir;
  // Not options: the daemon's mount namespace (MountNamespace in
  // startup.h), which keys its lock and boot state; empty: not keyed.
  std::string mount_ns_key;       // "mnt-<inode>"
  std::string mount_ns_identity;  // "mnt-<inode>-<pid>-<start>"
  // fsync every journal commit (the default): survives power loss, not
  // only a crash of the daemon, at ~16 ms instead of ~0.2 ms per command on
  // ext4 (tmpfs: no difference). --no-journal-fsync trades that away.
  bool journal_fsync = true;
  std::string control_socket;  // empty: no control socket
  std::string broker_socket = hw::kDefaultBrokerSocket;
  // The kernel's rdt= boot parameter (e.g. "l3cat" on a Cascade Lake).
  std::string rdt;
  // The real backend: where the CPU devices and topology are read, under
  // ROOT/dev and ROOT/sys/devices/system/cpu ("/" on a real machine; a test
  // tool emulating them for the real backend's test label).
  std::string hw_root = "/";
  // The sandbox's table of virtual CPUs (resctrlfs-sandbox --cpus platform;
  // thread_cpu.h); empty: the host's CPU numbers are the platform's.
  std::string virtual_cpus_file;
  // The real backend: take the evidence that the CPU has resctrl features
  // from the hardware (through hw_root) instead of /proc/cpuinfo's flags.
  bool rdt_from_hardware = false;
  std::string log_level = "info";
  // --tasks-from-proc (ours): list tasks files by walking /proc at each open,
  // as without the proc connector, instead of from the thread table the
  // connector's fork/exec/exit events keep.
  bool walk_proc_for_tasks = false;
  // --task-model (ours, daemon/task_model.h): on the simulated backend, what
  // the real threads in groups do moves their groups' counters: "auto"
  // (per-task perf events for bandwidth where the host has them, else the
  // model), "model" (never perf events), "none" (only declared workloads).
  std::string task_model = "auto";
  // --self-check (ours): print a read-only report comparing this machine,
  // its registers and the kernel's resctrl with resctrlfs, and exit; no
  // MOUNTPOINT (daemon/self_check.h). --json: the report as JSON.
  bool self_check = false;
  bool json = false;
  std::string kernel_resctrl = "/sys/fs/resctrl";
  // Written with the simulated registers after the unmount on exit, so tests
  // can check that unmount reset the hardware (the process is gone by then).
  std::string dump_registers_on_exit;
  // Live restart (ours; docs/reliability.md, daemon/takeover.h):
  // --keeper: this process mounts and keeps the /dev/fuse connection and
  // runs resctrlfsd (again at each crash or SIGHUP) serving it;
  // --fuse-fd N: serve the connection on inherited descriptor N instead of
  // mounting (the keeper passes it); --takeover: that connection was served
  // by a daemon that died: no new INIT, the kernel resends what it had
  // read; --fd-store: under systemd, keep the connection in the service's
  // file descriptor store and take it over from there after a restart.
  bool keeper = false;
  int fuse_fd = -1;
  bool takeover = false;
  bool fd_store = false;
  fs::MountOptions mount;                 // the resctrl options of -o
  std::vector<std::string> fuse_options;  // the rest of -o, for libfuse
};

// Splits the comma-separated `-o` arguments. `cdp`, `cdpl2`, `mba_MBps` and
// `debug` are resctrl flags (like the kernel's parser, giving them a value is
// EINVAL); everything else is a FUSE option, validated later by libfuse.
struct SplitMountOptions {
  fs::MountOptions mount;
  std::vector<std::string> fuse_options;
};
Result<SplitMountOptions> split_mount_options(const std::vector<std::string>& o_args);

// The outcome of parsing argv: either options to run with, or an exit (help,
// version, usage error) with the text to print.
struct ParsedArgs {
  std::optional<DaemonOptions> options;  // set when the daemon should run
  int exit_code = 0;
  std::string output;  // for stdout when exit_code == 0, else for stderr
};
ParsedArgs parse_daemon_args(int argc, const char* const* argv);

// The platform the options choose, as hw/platform_factory.h takes it.
hw::PlatformOptions platform_options(const DaemonOptions& opts);

// Every option parse_daemon_args knows ("-o", "--platform", ...), with
// whether it takes a value: for the test that keeps daemon/option_names.h
// in step.
std::vector<std::pair<std::string, bool>> daemon_cli_options();

}  // namespace resctrlfs::daemon
