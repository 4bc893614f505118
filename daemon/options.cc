// Implements resctrlfsd's command line parsing (CLI11) and the -o split.
#include "daemon/options.h"

#include <CLI/CLI.hpp>
#include <sstream>

#include "base/cli_help.h"
#include "base/version.h"
#include "hw/platform_factory.h"

namespace resctrlfs::daemon {

namespace {

// The kernel's resctrl mount parameters (rdt_fs_parameters) and ours
// (fs::kMountOptions): flags only.
bool* resctrl_flag(fs::MountOptions& m, std::string_view name) {
  const fs::MountOptionRow* r = fs::find_mount_option(name);
  return r != nullptr ? &(m.*(r->flag)) : nullptr;
}

// "resctrl's cdp, cdpl2, mba_MBps, debug (and ours: iordt, cba, ...)".
std::string mount_options_help() {
  std::string kernel, ours;
  for (const fs::MountOptionRow& r : fs::kMountOptions) {
    std::string& list = r.kind == fs::MountOptionKind::kKernel ? kernel : ours;
    list += (list.empty() ? "" : ", ") + std::string(r.name);
  }
  return "mount options: resctrl's " + kernel + " (and ours: " + ours +
         ") mixed with FUSE options (comma separated; may be repeated)";
}

}  // namespace

Result<SplitMountOptions> split_mount_options(const std::vector<std::string>& o_args) {
  SplitMountOptions out;
  for (const std::string& arg : o_args) {
    size_t pos = 0;
    while (pos <= arg.size()) {
      size_t comma = arg.find(',', pos);
      if (comma == std::string::npos) comma = arg.size();
      std::string item = arg.substr(pos, comma - pos);
      pos = comma + 1;
      if (item.empty()) continue;
      const size_t eq = item.find('=');
      const std::string key = item.substr(0, eq);
      if (bool* flag = resctrl_flag(out.mount, key)) {
        // The kernel's fs_parameter parser refuses a value on a flag.
        if (eq != std::string::npos) {
          return Error::make(EINVAL, "resctrl option '" + key + "' takes no value");
        }
        *flag = true;
        continue;
      }
      out.fuse_options.push_back(item);
    }
  }
  return out;
}

namespace {

// The command line, its values stored into `opts`, `o_args` and `backend`.
void define_options(CLI::App& app, DaemonOptions& opts, std::vector<std::string>& o_args,
                    std::string& backend, bool& list_platforms) {
  app.description(
      "resctrlfsd: the Linux resctrl filesystem (Intel RDT / AMD PQoS) as a FUSE daemon.\n"
      "Mounts a resctrl tree at MOUNTPOINT, backed by a simulated platform or by the\n"
      "real MSRs through resctrl-msrd. Runs as root.\n"
      "Log: stderr until it detaches (always with -f); once detached, syslog (facility\n"
      "daemon) or, where no syslog daemon listens at /dev/log, stderr still (unless it\n"
      "is a pipe). The start line says which.");
  use_help_formatter(app);
  app.add_flag("-f,--foreground", opts.foreground,
               "stay in the foreground (without it the daemon detaches once mounted)");
  app.add_option("-o", o_args, mount_options_help())->allow_extra_args(false)->type_name("OPTIONS");
  // The built-in names come from the simulators' own lists, as
  // --list-platforms prints them (the bash completion asks that).
  const std::vector<std::string> platforms = hw::platform_names();
  std::string platform_names;
  for (const std::string& n : platforms) platform_names += (platform_names.empty() ? "" : ", ") + n;
  app.add_option(
         "--platform", opts.platform,
         "simulated platform: a built-in name (" + platform_names + ") or a JSON profile file")
      ->type_name("NAME|FILE.json")
      ->capture_default_str();
  app.add_flag("--list-platforms", list_platforms,
               "print the built-in platform names, one a line, and exit");
  app.add_option("--backend", backend, "hardware backend")
      ->check(CLI::IsMember(hw::backend_names()))
      ->capture_default_str();
  app.add_option("--state-dir", opts.state_dir,
                 "state journal (groups survive a restart of the daemon) and the instance "
                 "lock; without it the lock lives in /run/resctrlfs")
      ->type_name("DIR");
  app.add_option("--boot-state-dir", opts.boot_state_dir,
                 "what resctrl keeps from one mount to the next until reboot "
                 "(max_threshold_occupancy, RMID limbo, counter assignment settings), one file "
                 "per mount point; empty keeps nothing")
      ->type_name("DIR")
      ->capture_default_str();
  app.add_flag("--journal-fsync,!--no-journal-fsync", opts.journal_fsync,
               "fsync each journal commit (default; survives power loss). With "
               "--no-journal-fsync the journal survives crashes of the daemon only");
  app.add_option("--control", opts.control_socket,
                 "Unix socket for resctrlfsctl (one JSON object per line)")
      ->type_name("SOCKET");
  app.add_option("--broker", opts.broker_socket, "resctrl-msrd socket (with --backend msr)")
      ->type_name("SOCKET")
      ->capture_default_str();
  app.add_option("--virtual-cpus", opts.virtual_cpus_file,
                 "the table of threads' virtual CPUs that resctrlfs-sandbox keeps when it "
                 "gives the platform's CPUs (it passes this option): real threads count on "
                 "their virtual CPU")
      ->type_name("FILE");
  app.add_option("--hw-root", opts.hw_root,
                 "with --backend msr: read CPUID from ROOT/dev/cpu/N/cpuid and the topology "
                 "from ROOT/sys/devices/system/cpu (tests point it at an emulation)")
      ->type_name("ROOT")
      ->capture_default_str();
  app.add_flag("--tasks-from-proc", opts.walk_proc_for_tasks,
               "list tasks files by walking /proc at each open (what the daemon does without "
               "the proc connector) instead of from the thread table its events keep");
  app.add_option("--task-model", opts.task_model,
                 "simulated backend: what real threads in groups do drives their groups' "
                 "occupancy and bandwidth: auto (bandwidth from per-task perf events where the "
                 "host has a PMU, else modelled from CPU time and page faults), model (always "
                 "modelled), none (only `resctrlfsctl workload` drives the counters)")
      ->check(CLI::IsMember({"auto", "model", "none"}))
      ->type_name("MODE")
      ->capture_default_str();
  app.add_flag("--rdt-from-cpuid", opts.rdt_from_hardware,
               "with --backend msr: judge whether the CPU has RDT/PQoS by its CPUID leaves "
               "instead of /proc/cpuinfo's flags");
  app.add_option("--rdt", opts.rdt,
                 "the kernel's rdt= boot parameter: features forced on or (with !) off, e.g. "
                 "l3cat,!mba; like Linux, Skylake/Cascade Lake servers need l3cat for L3 CAT")
      ->type_name("LIST");
  app.add_option("--log-level", opts.log_level,
                 "the least severe messages logged: trace, debug, info, warn, error, off (where "
                 "the log goes: see above)")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "off"}))
      ->capture_default_str();
  app.add_option("--dump-registers-on-exit", opts.dump_registers_on_exit,
                 "test aid: after the unmount on exit, write the simulated registers as JSON "
                 "to FILE")
      ->type_name("FILE");
  app.add_flag("--self-check", opts.self_check,
               "instead of mounting: report, read-only, how this machine's CPUID, RDT registers "
               "(read through resctrl-msrd at --broker) and the kernel's resctrl compare with "
               "what resctrlfs would show; safe on a production machine");
  app.add_flag("--json", opts.json, "with --self-check: the report as JSON");
  app.add_option("--kernel-resctrl", opts.kernel_resctrl,
                 "with --self-check: where the kernel's resctrl is (or would be) mounted")
      ->type_name("DIR")
      ->capture_default_str();
  app.add_flag("--keeper", opts.keeper,
               "keep the FUSE connection across crashes and upgrades of the daemon: mount, hold "
               "/dev/fuse, run resctrlfsd (this program's path, read again at each start) "
               "serving it, and start it again with --takeover when it dies or on SIGHUP "
               "(an upgrade); needs --state-dir");
  app.add_option("--fuse-fd", opts.fuse_fd,
                 "serve the mounted FUSE connection on inherited descriptor FD instead of "
                 "mounting (the keeper passes it)")
      ->type_name("FD");
  app.add_flag("--takeover", opts.takeover,
               "with --fuse-fd: the connection was served by a daemon that died; restore "
               "the journal, take it over without a second INIT and have the kernel resend "
               "the requests that daemon had read");
  app.add_flag("--fd-store", opts.fd_store,
               "under systemd: keep the FUSE connection in the service's file descriptor store "
               "(FDSTORE=1) and, when started again, take it over from there "
               "(FileDescriptorStoreMax=1 in the unit); needs --state-dir");
  app.add_option("mountpoint", opts.mountpoint,
                 "where to mount the resctrl tree (not with --self-check)")
      ->type_name("MOUNTPOINT");
  app.set_version_flag("--version", std::string("resctrlfsd ") + kVersion);
}

}  // namespace

hw::PlatformOptions platform_options(const DaemonOptions& opts) {
  hw::PlatformOptions p;
  p.backend = opts.backend;
  p.platform = opts.platform;
  p.rdt = opts.rdt;
  p.broker_socket = opts.broker_socket;
  p.hw_root = opts.hw_root;
  return p;
}

std::vector<std::pair<std::string, bool>> daemon_cli_options() {
  CLI::App app{"", "resctrlfsd"};
  DaemonOptions opts;
  std::vector<std::string> o_args;
  std::string backend;
  bool list_platforms = false;
  define_options(app, opts, o_args, backend, list_platforms);
  std::vector<std::pair<std::string, bool>> out;
  for (const CLI::Option* o : app.get_options()) {
    const bool value = o->get_items_expected_max() != 0;
    for (const std::string& n : o->get_snames()) out.emplace_back("-" + n, value);
    for (const std::string& n : o->get_lnames()) out.emplace_back("--" + n, value);
  }
  return out;
}

ParsedArgs parse_daemon_args(int argc, const char* const* argv) {
  ParsedArgs out;
  DaemonOptions opts;
  std::vector<std::string> o_args;
  std::string backend = "sim";
  CLI::App app{"", "resctrlfsd"};
  bool list_platforms = false;
  define_options(app, opts, o_args, backend, list_platforms);
  const std::vector<std::string> platforms = hw::platform_names();

  std::ostringstream os_out, os_err;
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    out.exit_code = app.exit(e, os_out, os_err);
    out.output = out.exit_code == 0 ? os_out.str() : os_err.str();
    return out;
  }

  if (list_platforms) {
    for (const std::string& n : platforms) out.output += n + "\n";
    return out;
  }
  if (opts.self_check != opts.mountpoint.empty()) {
    out.exit_code = 2;
    out.output = opts.self_check ? "resctrlfsd: --self-check takes no MOUNTPOINT\n"
                                 : "resctrlfsd: MOUNTPOINT is required\n"
                                   "Run with --help for more information.\n";
    return out;
  }
  if (opts.json && !opts.self_check) {
    out.exit_code = 2;
    out.output = "resctrlfsd: --json needs --self-check\n";
    return out;
  }
  if (Result<void> rdt = hw::check_rdt_list(opts.rdt); !rdt.ok()) {
    out.exit_code = 2;
    out.output = "resctrlfsd: --rdt: " + rdt.error().message + "\n";
    return out;
  }
  const int live = int{opts.keeper} + int{opts.fuse_fd >= 0} + int{opts.fd_store};
  if (live > 1) {
    out.exit_code = 2;
    out.output = "resctrlfsd: --keeper, --fuse-fd and --fd-store exclude each other\n";
    return out;
  }
  if (opts.takeover && opts.fuse_fd < 0) {
    out.exit_code = 2;
    out.output =
        "resctrlfsd: --takeover needs --fuse-fd (the keeper passes both; under systemd "
        "--fd-store takes the connection over by itself)\n";
    return out;
  }
  if (live > 0 && opts.state_dir.empty()) {
    out.exit_code = 2;
    out.output =
        "resctrlfsd: --keeper, --fuse-fd and --fd-store need --state-dir: a daemon that takes "
        "the mount over restores the groups from its journal\n";
    return out;
  }
  opts.backend = hw::backend_named(backend).value_or(BackendKind::kSim);
  Result<SplitMountOptions> split = split_mount_options(o_args);
  if (!split.ok()) {
    out.exit_code = 2;
    out.output = "resctrlfsd: " + split.error().message + "\n";
    return out;
  }
  opts.mount = split->mount;
  opts.fuse_options = std::move(split->fuse_options);
  out.options = std::move(opts);
  return out;
}

}  // namespace resctrlfs::daemon
