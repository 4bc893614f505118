// Implements daemon_main(): resctrlfsd from argv to exit status. Parsing,
// logging, detaching, the instance lock and the backend preconditions live
// here; the mounted instance is a Daemon.
#include <signal.h>
#include <syslog.h>
#include <unistd.h>

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/sinks/syslog_sink.h>
#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>

#include "daemon/daemon.h"
#include "daemon/private_dir.h"
#include "daemon/self_check.h"
#include "daemon/startup.h"
#include "daemon/takeover.h"

namespace resctrlfs::daemon {

namespace {

std::string absolute_path(const std::string& p) {
  if (p.empty()) return p;
  std::error_code ec;
  std::filesystem::path a = std::filesystem::absolute(p, ec);
  if (ec) return p;
  std::string s = a.lexically_normal().string();
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s;
}

// Replaces the default logger (loggers are built unregistered, so the
// syslog one can take over the stderr one's name).
void use_sink(spdlog::sink_ptr sink, const std::string& level) {
  auto logger = std::make_shared<spdlog::logger>("resctrlfsd", std::move(sink));
  logger->set_level(spdlog::level::from_str(level));
  spdlog::set_default_logger(std::move(logger));
}

}  // namespace

namespace {

int daemon_main_unguarded(int argc, const char* const* argv, const PartsFactory& factory) {
  ParsedArgs pa = parse_daemon_args(argc, argv);
  if (!pa.options) {
    std::fputs(pa.output.c_str(), pa.exit_code == 0 ? stdout : stderr);
    return pa.exit_code;
  }
  DaemonOptions opts = std::move(*pa.options);
  if (opts.self_check) {
    // Read-only; mounts nothing, takes no lock (a daemon may be serving).
    SelfCheckOptions sc;
    sc.broker_socket = opts.broker_socket;
    sc.rdt = opts.rdt;
    sc.hw_root = opts.hw_root;
    sc.kernel_resctrl = absolute_path(opts.kernel_resctrl);
    sc.json = opts.json;
    std::string report;
    const int rc = run_self_check(sc, report);
    std::fputs(report.c_str(), rc == 2 ? stderr : stdout);
    return rc;
  }
  // Said first: as another user every later step fails for a reason of its
  // own (the lock directory, the mount point, allow_other), none of which
  // says what to do.
  if (::geteuid() != 0) {
    std::fputs(
        "resctrlfsd: must run as root: it mounts a FUSE filesystem that every user sees "
        "(allow_other), keeps its lock and state in root's directories and follows every "
        "user's tasks. Run it with sudo, e.g. sudo resctrlfsd --platform intel-2s "
        "/sys/fs/resctrl (or try it in a private mount namespace: sudo resctrlfs-sandbox "
        "--platform intel-2s)\n",
        stderr);
    return 1;
  }
  // Resolved now: a detached daemon moves to "/".
  opts.mountpoint = absolute_path(opts.mountpoint);
  opts.control_socket = absolute_path(opts.control_socket);
  opts.state_dir = absolute_path(opts.state_dir);
  opts.dump_registers_on_exit = absolute_path(opts.dump_registers_on_exit);

  use_sink(std::make_shared<spdlog::sinks::stderr_sink_st>(), opts.log_level);
  spdlog::set_pattern("resctrlfsd[%P]: %l: %v");
  signal(SIGPIPE, SIG_IGN);

  // The mount whose connection outlives the daemon (daemon/takeover.h):
  // mounted by the keeper (which runs resctrlfsd --fuse-fd from here on),
  // or kept for this service by systemd.
  if (opts.fd_store) {
    if (const int fd = fd_from_systemd(); fd >= 0) {
      opts.fuse_fd = fd;
      opts.takeover = true;
    }
  }
  if (opts.keeper) {
    Result<std::string> mp = prepare_mountpoint(opts.mountpoint);
    if (!mp.ok()) {
      std::fprintf(stderr, "resctrlfsd: %s\n", mp.error().message.c_str());
      return 1;
    }
    opts.mountpoint = *mp;
    std::vector<std::string> args(argv, argv + argc);
    return run_keeper(opts, args);
  }

  StartupPipe startup;
  if (!opts.foreground) startup = StartupPipe::detach();
  auto fail = [&](const std::string& msg) {
    if (opts.foreground) {
      std::fprintf(stderr, "resctrlfsd: %s\n", msg.c_str());
    } else {
      startup.report_error("resctrlfsd: " + msg);
    }
    return 1;
  };

  // The daemon writes, renames and removes files in the state and
  // boot-state directories as root: one that another user owns or may write
  // to would let that user point those writes anywhere with a symlink, or
  // hand the daemon a journal to restore. Both are checked before anything
  // in them is touched (daemon/private_dir.h); a missing state directory is
  // created 0700 here, a missing boot-state one when its file is first
  // written.
  if (!opts.state_dir.empty()) {
    Result<PrivateDir> d = PrivateDir::open(opts.state_dir, "--state-dir", true);
    if (!d.ok()) return fail(d.error().message);
  }
  if (!opts.boot_state_dir.empty()) {
    Result<PrivateDir> d = PrivateDir::open(opts.boot_state_dir, "--boot-state-dir", false);
    if (!d.ok() && d.error().code != ENOENT) return fail(d.error().message);
  }

  // One instance per (mount namespace, mount point). A state directory is
  // one journal, whoever uses it: its lock is keyed by mount point alone.
  Result<MountNamespace> ns = current_mount_namespace();
  if (!ns.ok()) return fail(ns.error().message);
  opts.mount_ns_key = ns->key();
  opts.mount_ns_identity = ns->identity();
  const bool own_dir = !opts.state_dir.empty();
  Result<InstanceLock> lock =
      InstanceLock::acquire(own_dir ? opts.state_dir : kDefaultLockDir, opts.mountpoint,
                            own_dir ? std::string() : opts.mount_ns_key, kExitingDaemonWait);
  if (!lock.ok()) return fail(lock.error().message);
  // A mount point served by a connection this daemon takes (--fuse-fd) is
  // not looked at: nobody answers there until this daemon does.
  if (opts.fuse_fd < 0) {
    Result<std::string> mp = prepare_mountpoint(opts.mountpoint);
    if (!mp.ok()) return fail(mp.error().message);
    opts.mountpoint = *mp;
  }
  if (opts.backend == BackendKind::kReal) {
    // Messages name the option that chose the backend ("--backend NAME: ").
    const std::string which = "--backend " + std::string(hw::backend_name(opts.backend)) + ": ";
    std::string cpuinfo = read_text_file("/proc/cpuinfo");
    if (opts.rdt_from_hardware) {
      Result<std::string> flags = hw::cpuinfo_flags_from_hardware(platform_options(opts));
      if (!flags.ok()) return fail(which + flags.error().message);
      cpuinfo = *flags;
    }
    Result<void> pre = hw::check_real_preconditions(read_text_file("/proc/mounts"), cpuinfo);
    // Model-specific allocation (TCC L3 CAT, STLB QoS; ours) has no cpuinfo
    // flag: with its option the decoder decides, and the mount is refused
    // with that option's message on a machine without it.
    bool model_specific = false;
    for (const fs::MountOptionRow& r : fs::kMountOptions)
      model_specific = model_specific || (r.model_specific && opts.mount.*(r.flag));
    if (!pre.ok() && pre.error().code == ENODEV && model_specific) {
      spdlog::info("{}{}; going on for the model-specific options", which, pre.error().message);
    } else if (!pre.ok()) {
      return fail(which + pre.error().message);
    }
  }

  Daemon daemon(opts);
  Result<void> started = daemon.start(factory);
  if (!started.ok()) return fail(started.error().message);
  // Where the log goes from here on, said in the line every start logs.
  // Detached, syslog takes it, unless nothing listens at /dev/log (a
  // container, a chroot): syslog(3) would drop every line, so stderr, the
  // caller's, stays open for it -- unless it is a pipe or socket, whose
  // reader (a shell's $(...), a test's capture) waits for its end and
  // would wait as long as the daemon runs.
  const bool to_syslog = !opts.foreground && syslog_listens();
  const bool keep_stderr = !opts.foreground && !to_syslog && stderr_is_kept_open_safely();
  const std::string log_to =
      opts.foreground ? "log: stderr"
      : to_syslog     ? "log: syslog (facility daemon) from now on"
      : keep_stderr   ? "log: stderr (no syslog daemon at /dev/log)"
                      : "log: none once detached (no syslog daemon at /dev/log, and stderr is a "
                        "pipe): run with -f, or send stderr to a file";
  // --platform means nothing to the real backend: name the broker instead.
  if (opts.backend == BackendKind::kReal) {
    spdlog::info("resctrl mounted at {} (backend {}, broker {}); {}", opts.mountpoint,
                 hw::backend_name(opts.backend), opts.broker_socket, log_to);
  } else {
    spdlog::info("resctrl mounted at {} (backend {}, platform {}); {}", opts.mountpoint,
                 hw::backend_name(opts.backend), opts.platform, log_to);
  }
  notify_systemd_ready();
  if (!opts.foreground) {
    startup.report_ready(keep_stderr);
    if (to_syslog) {
      use_sink(std::make_shared<spdlog::sinks::syslog_sink_st>("resctrlfsd", LOG_PID, LOG_DAEMON,
                                                               /*enable_formatting=*/false),
               opts.log_level);
    }
  }
  return daemon.run();
}

}  // namespace

int daemon_main(int argc, const char* const* argv, const PartsFactory& factory) {
  try {
    return daemon_main_unguarded(argc, argv, factory);
  } catch (const std::exception& e) {
    // Exceptions never cross layers; one reaching here is a daemon bug.
    spdlog::critical("fatal: {}", e.what());
    std::fprintf(stderr, "resctrlfsd: fatal: %s\n", e.what());
    return 1;
  }
}

}  // namespace resctrlfs::daemon
