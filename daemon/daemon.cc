// Implements Daemon: start-up of one instance, its event loop, the control
// socket commands and the orderly shutdown (resctrl unmount, then FUSE
// unmount).
#include "daemon/daemon.h"

#include <fcntl.h>
#include <linux/fuse.h>
#include <sched.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "base/cpulist.h"
#include "base/json_input.h"
#include "daemon/boot_state.h"
#include "daemon/private_dir.h"
#include "daemon/takeover.h"

namespace resctrlfs::daemon {

namespace asio = boost::asio;
using nlohmann::json;

namespace {

// How many FUSE requests one loop turn serves before letting the timer,
// the control socket and the proc connector run.
constexpr int kFuseBatch = 64;
constexpr std::chrono::milliseconds kTickInterval{1000};
// The simulated time a clock advance covers before it lets queued work run:
// 100 ticks (a tick with 66 groups took up to ~130 us).
constexpr uint64_t kAdvanceSliceMs = 100 * 1000;
// Bounds the passes over the fork buffers in one drain (see drain_proc) so a
// fork storm cannot hold the loop.
constexpr int kMaxForkPasses = 8;

// With the sandbox's virtual CPUs the task model counts a real thread on
// the virtual CPU its affinity names (thread_cpu.h); a thread the table
// cannot place falls back to the host CPU's place on the platform.
class VirtualCpuLocator final : public CpuLocator {
 public:
  VirtualCpuLocator(ThreadCpus& cpus, std::vector<unsigned> online)
      : cpus_(cpus), host_(std::move(online)) {}
  int platform_cpu(int host_cpu) const override { return host_.platform_cpu(host_cpu); }
  int thread_cpu(pid_t tid, int host_cpu) override {
    Result<unsigned> c = cpus_.cpu_of(tid);
    return c ? static_cast<int>(*c) : host_.platform_cpu(host_cpu);
  }

 private:
  ThreadCpus& cpus_;
  HostCpuLocator host_;
};

std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

// Requests that look at or change task membership: forks and exits the
// kernel already reported must be known to fs/ before they run.
bool needs_task_events(uint32_t opcode) {
  switch (opcode) {
    case FUSE_OPEN:
    case FUSE_WRITE:
    case FUSE_MKDIR:
    case FUSE_RMDIR:
    case FUSE_RENAME:
    case FUSE_RENAME2:
      return true;
    default:
      return false;
  }
}

// Why the proc connector cannot be trusted to report every thread of what
// /proc shows, or "" when it can. The kernel sends its events only to
// listeners in the initial user and pid namespaces (a subscription from
// elsewhere is accepted and then hears nothing), with ids of the initial pid
// namespace.
std::string connector_blind_spot() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("NSpid:", 0) != 0) continue;
    std::istringstream ids(line.substr(6));
    int n = 0;
    for (std::string id; ids >> id;) ++n;
    if (n > 1) return "the daemon runs in a pid namespace of its own";
  }
  std::ifstream uid_map("/proc/self/uid_map");
  unsigned long inside = 1, outside = 1, count = 0;
  if (uid_map >> inside >> outside >> count &&
      (inside != 0 || outside != 0 || count != 4294967295UL))
    return "the daemon runs in a user namespace of its own";
  return "";
}

// The errno a command gets when the journal cannot be written: what the
// filesystem said when it says something a user can act on (make room,
// remount read-write, replace the disk), else EIO.
int journal_errno(const Error& e) {
  switch (e.code) {
    case ENOSPC:
    case EDQUOT:
    case EROFS:
    case EFBIG:
    case EIO:
      return e.code;
    default:
      return EIO;
  }
}

// The line last_cmd_status gets then (`after`: the command ran, only its
// journal record failed).
std::string journal_status(const Error& e, bool after) {
  std::string text = "State journal not writable: ";
  text += std::strerror(journal_errno(e));
  if (after) text += "; the change is in effect but not saved";
  text += '\n';
  return text;
}

bool thread_exists(int tid) {
  cpu_set_t set;
  return tid > 0 && (sched_getaffinity(tid, sizeof(set), &set) == 0 || errno != ESRCH);
}

// Frees the LWP units of threads that exited without an exit event the
// daemon saw (no proc connector, or a zombie leader not yet looked for).
void forget_dead_lwp_units(hw::SimControl& s) {
  for (int tid : s.lwp_threads())
    if (!thread_exists(tid)) s.lwp_forget(tid);
}

}  // namespace

Daemon::Daemon(DaemonOptions opts)
    : opts_(std::move(opts)),
      thread_cpus_(opts_.virtual_cpus_file),
      timer_(io_),
      signals_(io_),
      clock_base_(std::chrono::steady_clock::now()) {}

Daemon::~Daemon() { shutdown("daemon destroyed"); }

std::chrono::steady_clock::time_point Daemon::fs_now() const {
  if (parts_ && parts_->backend.sim != nullptr) {
    return clock_base_ + std::chrono::milliseconds(parts_->backend.sim->now_ms());
  }
  return std::chrono::steady_clock::now();
}

void Daemon::keep_counters() {
  Result<PrivateDir> dir = PrivateDir::open(opts_.state_dir, "--state-dir", true);
  const std::string path = opts_.state_dir + "/" + kCounterFile;
  if (!dir.ok()) {
    spdlog::warn("{}: {}; counters are kept in memory only", path, dir.error().message);
    return;
  }
  const int fd = openat(dir->fd(), kCounterFile, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    spdlog::warn("{}: {}; counters are kept in memory only", path, strerror(errno));
    return;
  }
  Result<std::unique_ptr<hw::CounterStore>> s =
      hw::keep_counters(parts_->backend, fd, opts_.takeover);
  ::close(fd);
  if (!s.ok()) {
    spdlog::warn("{}: {}; counters are kept in memory only", path, s.error().message);
    return;
  }
  counter_store_ = std::move(s).value();
  if (counter_store_->carried_over())
    spdlog::info("{}: counters carried over from the previous daemon", path);
  else if (opts_.takeover)
    spdlog::warn("{}: {}: not used, the counters start from zero", path,
                 counter_store_->why_fresh().empty() ? "none" : counter_store_->why_fresh());
}

Result<void> Daemon::start(const PartsFactory& factory) {
  // A table that cannot be read is a bad command line, said before anything mounts.
  if (thread_cpus_.virtual_cpus()) RESCTRLFS_RETURN_IF_ERROR(thread_cpus_.load());
  RESCTRLFS_ASSIGN_OR_RETURN(DaemonParts parts, factory(opts_, &inval_));
  parts_.emplace(std::move(parts));
  fs::Filesystem& fs = *parts_->fs;
  if (hw::SimControl* s = parts_->backend.sim) {
    RESCTRLFS_ASSIGN_OR_RETURN(TaskModelMode mode, parse_task_model_mode(opts_.task_model));
    if (mode != TaskModelMode::kNone) {
      std::string why;
      std::unique_ptr<TaskEventSource> events;
      if (mode == TaskModelMode::kAuto) events = make_perf_event_source(&why);
      const std::vector<unsigned> online = parts_->backend.arch->info().online.cpus();
      std::unique_ptr<CpuLocator> cpus;
      if (thread_cpus_.virtual_cpus())
        cpus = std::make_unique<VirtualCpuLocator>(thread_cpus_, online);
      else
        cpus = std::make_unique<HostCpuLocator>(online);
      task_model_ = std::make_unique<TaskModel>(*s, mode, make_proc_source(), std::move(events),
                                                std::move(cpus), why);
      spdlog::info("task model: {}, bandwidth from {}", task_model_mode_name(mode),
                   task_model_->bandwidth_source());
    }
  }

  if (!opts_.state_dir.empty()) keep_counters();
  // What the previous mount on this mount point left behind (the kernel's
  // state that outlives an unmount; daemon/boot_state.h).
  load_boot_state();
  // The kernel's mount: options the platform cannot honour fail here with
  // the kernel's errno.
  Result<void> m = fs.mount(opts_.mount);
  if (!m.ok()) {
    std::string msg = std::string("mount: ") + strerror(m.error().code);
    if (!m.error().message.empty()) msg += ": " + m.error().message;
    while (!msg.empty() && msg.back() == '\n') msg.pop_back();
    return Error::make(m.error().code, msg);
  }
  fs_mounted_ = true;
  if (!opts_.state_dir.empty()) {
    Result<std::unique_ptr<StateJournal>> j =
        StateJournal::open_and_restore(opts_.state_dir, parts_->backend.platform_name, fs);
    if (!j.ok()) {
      shutdown("start-up failed");
      return std::move(j).error();
    }
    journal_ = std::move(j).value();
    journal_->set_fsync(opts_.journal_fsync);
  }
  restore_workloads();

  FuseSettings settings;
  settings.mountpoint = opts_.mountpoint;
  settings.fuse_options = opts_.fuse_options;
  Result<std::unique_ptr<FuseBridge>> bridge = FuseBridge::create(fs, stats_, settings);
  if (!bridge.ok()) {
    shutdown("start-up failed");
    return std::move(bridge).error();
  }
  bridge_ = std::move(bridge).value();
  Result<void> fm = Ok();
  const std::string init_file = opts_.state_dir + "/" + kFuseInitFile;
  // Under systemd's store on a kernel that cannot resend, this daemon
  // serves a clone only it holds (daemon/takeover.h); the store keeps the
  // connection.
  auto serve = [](int fd) {
    if (kernel_resends(fd)) return fd;
    const int c = clone_connection(fd);
    if (c >= 0) ::close(fd);
    return c;
  };
  if (opts_.fuse_fd >= 0) {
    // The keeper's connection, or the one systemd kept (daemon/takeover.h).
    const int fd = opts_.fd_store ? serve(opts_.fuse_fd) : opts_.fuse_fd;
    fm = fd < 0 ? Result<void>(Error::make(EIO, "cannot clone the FUSE connection"))
                : bridge_->adopt(fd, init_file, opts_.takeover);
    if (fm.ok() && opts_.takeover)
      spdlog::info("took over the FUSE connection of {}", opts_.mountpoint);
  } else if (opts_.fd_store) {
    Result<int> fd = FuseBridge::mount_connection(settings);
    if (!fd.ok()) {
      fm = std::move(fd).error();
    } else {
      (void)store_fd_in_systemd(*fd);
      const int s = serve(*fd);
      fm = s < 0 ? Result<void>(Error::make(EIO, "cannot clone the FUSE connection"))
                 : bridge_->adopt(s, init_file, false);
    }
  } else {
    fm = bridge_->mount();
  }
  if (!fm.ok()) {
    shutdown("start-up failed");
    return fm;
  }
  bridge_->set_request_hook([this](uint32_t opcode) {
    if (needs_task_events(opcode)) drain_proc();
  });
  worker_ = std::make_unique<CommandWorker>();
  bridge_->set_command_runner([this](std::function<void()> job) {
    worker_->post([this, job = std::move(job)] {
      job();
      // The reply is out: now the kernel may be told about what fs/ changed.
      flush_invalidations();
    });
  });
  bridge_->set_write_reply_hook([this] { flush_invalidations(); });
  bridge_->set_prepare_hook([this] { return prepare_journal(); });
  bridge_->set_applied_hook([this](uint64_t unique) -> std::optional<int64_t> {
    if (!journal_) return std::nullopt;
    return journal_->applied(unique);
  });
  bridge_->set_commit_hook([this]() -> Result<void> {
    // Serialising the boot state (the RMID order alone is num_rmids numbers)
    // on every command cost more than the command; it only has to outlive
    // the mount, which the shutdown path writes, so a change is written on
    // the next tick.
    boot_state_dirty_ = true;
    Result<void> r = commit_journal();
    if (!r.ok()) {
      // Only an error prepare_journal() could not foresee (the device
      // failed, or the change outgrew the room kept for it): the change is
      // in the tree but not in the journal. Commands are refused until a
      // snapshot holds it.
      parts_->fs->set_command_status(journal_status(r.error(), true));
      return Error::make(journal_errno(r.error()), r.error().message);
    }
    return Ok();
  });

  // The loop reads /dev/fuse until EAGAIN; Asio gets its own descriptor so
  // that closing its copy never closes libfuse's.
  const int fuse_fd = bridge_->fd();
  fcntl(fuse_fd, F_SETFL, fcntl(fuse_fd, F_GETFL) | O_NONBLOCK);
  fuse_fd_ =
      std::make_unique<asio::posix::stream_descriptor>(io_, fcntl(fuse_fd, F_DUPFD_CLOEXEC, 3));

  Result<std::unique_ptr<ForkTracepoint>> tp = ForkTracepoint::open();
  if (tp.ok()) {
    forks_ = std::move(tp).value();
    for (int fd : forks_->fds()) {
      fork_fds_.push_back(
          std::make_unique<asio::posix::stream_descriptor>(io_, fcntl(fd, F_DUPFD_CLOEXEC, 3)));
    }
  }
  Result<std::unique_ptr<ProcConnector>> pc = ProcConnector::open();
  if (pc.ok()) {
    proc_ = std::move(pc).value();
    proc_fd_ = std::make_unique<asio::posix::stream_descriptor>(
        io_, fcntl(proc_->fd(), F_DUPFD_CLOEXEC, 3));
    // Every exit and exec is reported from now on: the tasks files are
    // listed from the thread table, read from /proc once here and again
    // only when the connector overflows. Without the connector every
    // listing walks /proc.
    const std::string blind = connector_blind_spot();
    if (!blind.empty()) {
      spdlog::warn("proc connector: {}: tasks files walk /proc at each listing", blind);
    } else if (!opts_.walk_proc_for_tasks) {
      parts_->fs->track_threads(true);
    }
  }
  if (!tp.ok() && pc.ok()) {
    spdlog::warn(
        "fork tracepoint: {}: inheritance is per process (a new thread inherits its process's "
        "main thread's group, a clone(CLONE_PARENT) child its real parent's)",
        tp.error().message);
  } else if (!tp.ok()) {
    spdlog::warn("fork tracepoint: {}; {}: children will not inherit their parent's group",
                 tp.error().message, pc.error().message);
  } else if (!pc.ok()) {
    spdlog::warn("{}: tasks files walk /proc at each listing (no thread table)",
                 pc.error().message);
  }

  if (!opts_.control_socket.empty()) {
    Result<std::unique_ptr<ControlServer>> cs = ControlServer::create(
        io_, opts_.control_socket, [this](std::string line, ControlServer::Done done) {
          // A command like any other: after the one running; the loop goes
          // on meanwhile and writes the reply when it comes.
          worker_->post([this, line = std::move(line), done = std::move(done)] {
            run_control_line(line, done);
          });
        });
    if (!cs.ok()) {
      shutdown("start-up failed");
      return std::move(cs).error();
    }
    control_ = std::move(cs).value();
  }

  signals_.add(SIGTERM);
  signals_.add(SIGINT);
  // A foreground daemon whose terminal goes away unmounts cleanly instead
  // of dying and leaving a dead mount behind.
  signals_.add(SIGHUP);
  signals_.async_wait([this](const boost::system::error_code& ec, int sig) {
    if (ec) return;
    spdlog::info("signal {}: unmounting", strsignal(sig));
    shutdown("signal");
  });
  arm_fuse();
  arm_proc();
  for (size_t i = 0; i < fork_fds_.size(); ++i) arm_fork_fd(i);
  arm_timer();
  return Ok();
}

int Daemon::run() {
  io_.run();
  shutdown("event loop ended");
  return exit_code_;
}

void Daemon::arm_fuse() {
  fuse_fd_->async_wait(asio::posix::descriptor_base::wait_read,
                       [this](const boost::system::error_code& ec) {
                         if (ec || stopping_) return;
                         serve_fuse_batch();
                       });
}

void Daemon::serve_fuse_batch() {
  for (int i = 0; i < kFuseBatch; ++i) {
    // Task events the kernel queued before this request was sent are
    // applied first: a thread that a caller saw exit (its wait() returned)
    // is not in a tasks file the caller opens afterwards, as in the
    // kernel's. Nothing queued costs one recv() that finds nothing.
    drain_proc();
    const FuseBridge::Step step = bridge_->process_one();
    // The reply is out: now the kernel may be told about what fs/ changed.
    flush_invalidations();
    if (step == FuseBridge::Step::kEnded) {
      spdlog::info("{} was unmounted", opts_.mountpoint);
      shutdown("unmounted");
      return;
    }
    if (step == FuseBridge::Step::kAgain) {
      arm_fuse();
      return;
    }
  }
  // More may be queued: come back after the other event sources had a turn
  // (the descriptor is edge-triggered, so waiting could miss them).
  asio::post(io_, [this] {
    if (!stopping_) serve_fuse_batch();
  });
}

void Daemon::arm_proc() {
  if (!proc_fd_) return;
  proc_fd_->async_wait(asio::posix::descriptor_base::wait_read,
                       [this](const boost::system::error_code& ec) {
                         if (ec || stopping_) return;
                         drain_proc();
                         arm_proc();
                       });
}

void Daemon::arm_fork_fd(size_t i) {
  fork_fds_[i]->async_wait(asio::posix::descriptor_base::wait_read,
                           [this, i](const boost::system::error_code& ec) {
                             if (ec || stopping_) return;
                             drain_proc();
                             arm_fork_fd(i);
                           });
}

void Daemon::drain_proc() {
  if ((!proc_ && !forks_) || !parts_) return;
  std::vector<ProcEvent> traced;
  uint64_t lost = 0;
  // A task's fork record is complete before the task first runs, so before
  // any record of a task it creates. Reading the per-CPU buffers until a pass
  // finds nothing therefore yields, with every fork read, the fork of its
  // parent too (which may sit in another CPU's buffer, written after that
  // buffer was read in the previous pass).
  auto read_forks = [&] {
    if (!forks_) return;
    for (int pass = 0; pass < kMaxForkPasses && forks_->drain(traced, &lost) > 0; ++pass) {
    }
  };
  read_forks();
  bool overflowed = false;
  std::vector<ProcEvent> connector;
  if (proc_) connector = proc_->drain(&overflowed);
  // The connector reports a fork just before the tracepoint does, and a task
  // exits after its fork record was written: read the buffers again so that
  // what the connector said is matched with the tracepoint's records.
  if (!connector.empty()) read_forks();
  if (overflowed) {
    spdlog::warn(
        "proc connector overflowed: some forks/exits were missed; the thread table is read again "
        "from /proc");
  }
  if (lost != 0) {
    spdlog::warn("fork tracepoint buffers overflowed: {} forks were missed", lost);
  }
  const std::vector<ProcEvent> events = merge_task_events(traced, connector);
  fs::Filesystem& fs = *parts_->fs;
  for (const ProcEvent& e : events) {
    switch (e.kind) {
      case ProcEvent::Kind::kFork:
        fs.on_thread_fork(e.parent_tid, e.tid, e.tgid);
        break;
      case ProcEvent::Kind::kExit:
        fs.on_thread_exit(e.tid, e.tgid);
        break;
      case ProcEvent::Kind::kExec:
        fs.on_exec(e.tid);
        break;
    }
  }
  // Events were lost: the thread table cannot be trusted until it is read
  // again (the tasks files are rendered from it).
  if (overflowed) fs.rescan_threads();
  if (!events.empty() || overflowed) flush_invalidations();
}

void Daemon::arm_timer() {
  timer_.expires_after(kTickInterval);
  timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec || stopping_) return;
    // One tick at a time waits for the worker: behind a command stuck on a
    // slow broker, the ticks of the wait are one tick (fs/ measures the
    // time since the last one).
    if (!tick_queued_.exchange(true)) worker_->post([this] { tick_work(); });
    arm_timer();
  });
}

void Daemon::log_hw_write_failures() {
  std::vector<std::string> texts = parts_->fs->take_hw_write_failures();
  const auto now = std::chrono::steady_clock::now();
  if (now - failure_log_minute_ >= std::chrono::minutes(1)) {
    if (failures_unlogged_ > 0) {
      spdlog::warn(
          "{} more failed CPU association writes in the last minute were not logged "
          "(resctrlfsctl status counts them under cpu_association)",
          failures_unlogged_);
    }
    failure_log_minute_ = now;
    failure_lines_ = 0;
    failures_unlogged_ = 0;
  }
  for (const std::string& t : texts) {
    if (failure_lines_ >= kFailureLines) {
      ++failures_unlogged_;
      continue;
    }
    ++failure_lines_;
    spdlog::warn("{}; the CPU keeps its previous CLOSID/RMID until a later change writes it again",
                 t);
  }
}

void Daemon::tick_work() {
  tick_queued_ = false;
  log_hw_write_failures();
  // Real threads' activity is sampled on the real tick whatever the
  // simulated clock: a manual clock then counts it only as it advances.
  if (task_model_) task_model_->sample(std::chrono::steady_clock::now());
  // With a manual clock the workers run only when the clock is advanced.
  hw::SimControl* s = parts_->backend.sim;
  if (s == nullptr || !s->manual_clock()) {
    if (opts_.backend == BackendKind::kReal) follow_cpu_hotplug();
    parts_->fs->tick(fs_now());
    flush_invalidations();
  }
  // Forks and exits since the last command, and what a failed command did
  // before it failed (tasks moved before a bad pid): fs/ reports nothing
  // when nothing changed, so this costs nothing on an idle daemon.
  (void)commit_journal();
  // The log's records go into a new snapshot here, off the path of any
  // command, when the journal's policy says it is time (see
  // StateJournal::compaction_due).
  compact_journal();
  if (boot_state_dirty_) {
    boot_state_dirty_ = false;
    save_boot_state();
  }
}

void Daemon::run_control_line(const std::string& line, const ControlServer::Done& done) {
  Result<ControlRequest> req = parse_control_request(line);
  if (req.ok()) {
    if (const auto* adv = std::get_if<ClockAdvanceRequest>(&*req)) {
      advance_in_slices(adv->ms, 0, done);
      return;
    }
  }
  std::string reply;
  if (req.ok() && std::holds_alternative<WorkloadRequest>(*req)) {
    // Kept for a takeover once accepted, before the reply.
    try {
      const json r = run_control_request(*this, *req);
      const auto ok = r.find("ok");
      if (ok != r.end() && *ok == true) keep_workload(*req, line);
      reply = reply_line(r);
    } catch (const std::exception& e) {  // as handle_control_line
      reply = reply_line(control_error(std::string("internal error: ") + e.what()));
    }
  } else {
    reply = handle_control_line(*this, line);
  }
  flush_invalidations();
  done(std::move(reply));
}

void Daemon::keep_workload(const ControlRequest& req, const std::string& line) {
  if (opts_.state_dir.empty()) return;
  const auto& w = std::get<WorkloadRequest>(req);
  const std::string key = w.channel ? "channel:" + std::to_string(*w.channel)
                          : w.tid   ? "tid:" + std::to_string(*w.tid)
                                    : "cpu:" + std::to_string(w.cpu.value_or(0));
  std::string one = line;
  while (!one.empty() && (one.back() == '\n' || one.back() == '\r')) one.pop_back();
  workloads_[key] = one;
  std::string text;
  for (const auto& [k, l] : workloads_) text += l + "\n";
  // A new temporary file (O_EXCL after removing a stale one), then an
  // atomic rename: a kill at any point leaves the old list or the new one.
  const std::string path = opts_.state_dir + "/" + kWorkloadFile;
  Result<PrivateDir> dir = PrivateDir::open(opts_.state_dir, "--state-dir", false);
  if (!dir.ok()) {
    spdlog::warn("{}: {}; workloads are not kept for a takeover", path, dir.error().message);
    return;
  }
  const std::string tmp = std::string(kWorkloadFile) + ".tmp";
  (void)unlinkat(dir->fd(), tmp.c_str(), 0);
  const int fd =
      openat(dir->fd(), tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  bool ok = fd >= 0;
  if (ok) {
    ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) &&
         (!opts_.journal_fsync || fdatasync(fd) == 0);
    ::close(fd);
  }
  if (ok) ok = renameat(dir->fd(), tmp.c_str(), dir->fd(), kWorkloadFile) == 0;
  if (!ok) {
    spdlog::warn("{}: {}; workloads are not kept for a takeover", path, strerror(errno));
    (void)unlinkat(dir->fd(), tmp.c_str(), 0);
  }
}

void Daemon::restore_workloads() {
  if (opts_.state_dir.empty()) return;
  Result<PrivateDir> dir = PrivateDir::open(opts_.state_dir, "--state-dir", false);
  if (!dir.ok()) return;
  const std::string path = opts_.state_dir + "/" + kWorkloadFile;
  if (!opts_.takeover || parts_->backend.sim == nullptr) {
    (void)unlinkat(dir->fd(), kWorkloadFile, 0);
    return;
  }
  const int fd = openat(dir->fd(), kWorkloadFile, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return;  // none declared
  std::string text;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof(buf))) > 0 && text.size() < (size_t{1} << 20))
    text.append(buf, static_cast<size_t>(n));
  ::close(fd);
  size_t kept = 0;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    // The control socket's own parser and checks: a damaged line is a log
    // line, never a crash; a thread that exited meanwhile is dropped.
    Result<ControlRequest> req = parse_control_request(line);
    if (!req.ok() || !std::holds_alternative<WorkloadRequest>(*req)) {
      spdlog::warn("{}: not a workload request, ignored: {}", path,
                   req.ok() ? line : req.error().message);
      continue;
    }
    Result<json> r = attach_workload(std::get<WorkloadRequest>(*req));
    if (!r.ok()) {
      spdlog::info("{}: {}: not given again: {}", path, line, r.error().message);
      continue;
    }
    keep_workload(*req, line);
    ++kept;
  }
  if (kept > 0) spdlog::info("{}: {} declared workload(s) given again", path, kept);
}

void Daemon::advance_in_slices(uint64_t ms, uint64_t done_ms, ControlServer::Done done) {
  for (;;) {
    hw::SimControl* s = parts_ ? parts_->backend.sim : nullptr;
    if (done_ms > 0 && (s == nullptr || !s->manual_clock())) {
      done(reply_line(control_error("the clock was set to real after " + std::to_string(done_ms) +
                                    " ms of this advance; the remaining " + std::to_string(ms) +
                                    " ms were not advanced")));
      return;
    }
    // The last slice, or an advance refused (its error is the reply): one
    // request as any other.
    if (ms <= kAdvanceSliceMs || s == nullptr || !s->manual_clock()) {
      std::string reply = reply_line(run_control_request(*this, ClockAdvanceRequest{ms}));
      flush_invalidations();
      done(std::move(reply));
      return;
    }
    (void)advance_clock(kAdvanceSliceMs);  // cannot fail: simulated, manual
    flush_invalidations();
    ms -= kAdvanceSliceMs;
    done_ms += kAdvanceSliceMs;
    // Behind what was queued meanwhile; a stopping worker runs no more
    // jobs, so the rest is advanced here.
    if (worker_->post_if_running(
            [this, ms, done_ms, done] { advance_in_slices(ms, done_ms, done); }))
      return;
  }
}

void Daemon::flush_invalidations() {
  if (!bridge_) return;
  std::vector<Invalidation> items = inval_.take();
  if (!items.empty()) bridge_->post_invalidations(std::move(items));
}

void Daemon::shutdown(const char* why) {
  if (stopping_) return;
  stopping_ = true;
  spdlog::debug("shutting down: {}", why);
  // libfuse before 3.18 can hang in teardown; never outlive a stuck unmount
  // (SIGALRM's default action ends the process).
  alarm(20);
  if (control_) control_->close();
  boost::system::error_code ec;
  timer_.cancel();
  signals_.cancel(ec);
  if (proc_fd_) proc_fd_->close(ec);
  for (auto& d : fork_fds_) d->close(ec);
  if (fuse_fd_) fuse_fd_->close(ec);
  // The commands queued so far run (and reply) first; from now on
  // everything runs on this thread.
  if (worker_) worker_->stop();
  if (parts_ && fs_mounted_) {
    // A user's unmount resets everything, like the kernel's, so nothing is
    // left to restore; a daemon stopped by a signal keeps its journal and
    // the next start restores the groups.
    if (journal_ && std::string_view(why) == "unmounted") {
      Result<void> c = journal_->clear();
      if (!c.ok()) spdlog::warn("{}", c.error().message);
    } else if (std::string_view(why) != "start-up failed") {
      (void)commit_journal();
    }
    // The kernel's unmount: controls back to defaults, CPUs and tasks back
    // to the default group.
    parts_->fs->unmount();
    fs_mounted_ = false;
    if (std::string_view(why) != "start-up failed") save_boot_state(true);
    if (!opts_.dump_registers_on_exit.empty() && parts_->backend.sim != nullptr) {
      Result<json> regs = registers();
      std::ofstream out(opts_.dump_registers_on_exit);
      out << (regs.ok() ? regs->dump() : std::string("{}")) << "\n";
    }
  }
  // A connection the keeper holds stays mounted when this daemon fails to
  // start: the keeper decides.
  if (bridge_ && !(opts_.fuse_fd >= 0 && std::string_view(why) == "start-up failed"))
    bridge_->unmount();
  if (opts_.fd_store && std::string_view(why) != "start-up failed") remove_fd_from_systemd();
  io_.stop();
}

void Daemon::load_boot_state() {
  if (opts_.boot_state_dir.empty()) return;
  boot_state_path_ =
      boot_state_path(opts_.boot_state_dir, opts_.mountpoint, opts_.mount_ns_identity);
  // Files of earlier namespaces with this one's inode number are theirs
  // alone, and those namespaces are gone.
  remove_stale_boot_states(opts_.boot_state_dir, opts_.mountpoint, opts_.mount_ns_key,
                           boot_state_path_);
  int64_t saved_ms = -1;
  Result<std::optional<std::string>> doc =
      read_boot_state(boot_state_path_, parts_->backend.platform_name, opts_.mountpoint, &saved_ms);
  // A file that is damaged or does not fit is kept aside for inspection,
  // never applied in part, and the daemon mounts with boot defaults: refusing
  // to start would turn one bad file under /run into a daemon that never
  // comes back under systemd. A file that cannot be read is left alone.
  auto set_aside = [this](const std::string& why) {
    Result<std::string> aside = set_boot_state_aside(boot_state_path_);
    if (!aside.ok()) {
      spdlog::error("{}; cannot move it to {}{}: {}; starting from boot defaults", why,
                    boot_state_path_, kBootStateRejectedSuffix, aside.error().message);
      return;
    }
    spdlog::error("{}; moved to {}; starting from boot defaults", why, *aside);
  };
  if (!doc.ok()) {
    if (doc.error().code == EINVAL) return set_aside(doc.error().message);
    spdlog::warn("{}: starting from boot defaults", doc.error().message);
    return;
  }
  if (!doc->has_value()) return;
  Result<void> r = parts_->fs->restore_boot_state_json(**doc);
  if (!r.ok()) {
    if (r.error().code == EINVAL) return set_aside(boot_state_path_ + ": " + r.error().message);
    spdlog::warn("{}: {}: starting from boot defaults", boot_state_path_, r.error().message);
    return;
  }
  // The kernel's limbo worker goes on while resctrl is unmounted: when at
  // least one of its 1 s intervals passed since the last daemon stopped,
  // its pass runs now, before the mount (a remount right after an unmount
  // finds the limbo as it was left).
  boot_restore_ = json{{"restored", true}};
  if (saved_ms >= 0) {
    const int64_t down_ms = boottime_ms() - saved_ms;
    const bool pass = down_ms < 0 || down_ms >= kTickInterval.count();
    boot_restore_["unmounted_ms"] = std::max<int64_t>(down_ms, 0);
    boot_restore_["limbo_pass"] = pass;
    if (pass) parts_->fs->tick(fs_now());
  }
  boot_state_written_ = parts_->fs->save_boot_state_json();
}

void Daemon::save_boot_state(bool stopping) {
  if (boot_state_path_.empty() || !parts_) return;
  std::string doc = parts_->fs->save_boot_state_json();
  // At the stop the file is written even unchanged: its time is when this
  // daemon's limbo worker stopped.
  if (doc == boot_state_written_ && !stopping) return;
  Result<void> w = write_boot_state(boot_state_path_, parts_->backend.platform_name,
                                    opts_.mountpoint, doc, boottime_ms());
  // The command is done either way; only a later remount would miss it.
  if (!w.ok()) {
    spdlog::warn("{}", w.error().message);
    return;
  }
  boot_state_written_ = std::move(doc);
}

Result<void> Daemon::prepare_journal() {
  if (!journal_ || !parts_ || !fs_mounted_) return Ok();
  Result<void> r = journal_->prepare(parts_->backend.platform_name, *parts_->fs);
  if (r.ok()) return r;
  // Refused before it ran: nothing of it is in the tree.
  spdlog::error("{}: command refused", r.error().message);
  parts_->fs->set_command_status(journal_status(r.error(), false));
  return Error::make(journal_errno(r.error()), r.error().message);
}

Result<void> Daemon::commit_journal() {
  if (!journal_ || !parts_ || !fs_mounted_) return Ok();
  // A FUSE command's id and result go into its record (0 elsewhere).
  const uint64_t unique = FuseBridge::current_unique();
  journal_->set_request(unique, FuseBridge::current_result());
  Result<void> r = journal_->commit_state(parts_->backend.platform_name, *parts_->fs);
  if (!r.ok()) spdlog::error("state journal: {}", r.error().message);
  // Test aid: die between the journal and the reply, once per file made.
  static const char* kill_file = std::getenv("RESCTRLFS_TEST_KILL_AFTER_COMMIT_FILE");
  if (r.ok() && unique != 0 && kill_file != nullptr && ::unlink(kill_file) == 0) {
    spdlog::warn("test aid: killed after journaling request {}", unique);
    ::raise(SIGKILL);
  }
  return r;
}

void Daemon::compact_journal() {
  if (!journal_ || !parts_ || !fs_mounted_) return;
  // The real clock even when the simulated one is manual: this is about
  // the files, not the model.
  if (!journal_->compaction_due(std::chrono::steady_clock::now())) return;
  Result<void> r = journal_->compact(parts_->backend.platform_name, *parts_->fs);
  if (!r.ok()) spdlog::error("state journal: {}", r.error().message);
}

Result<hw::SimControl*> Daemon::sim() {
  if (!parts_ || parts_->backend.sim == nullptr) {
    return Error::make(EOPNOTSUPP, "not available: the backend is not simulated");
  }
  return parts_->backend.sim;
}

Result<json> Daemon::status() {
  json j = parse_json(parts_->fs->status_json()).value_or(json::object());
  if (!j.is_object()) j = json::object();
  json d = {{"platform", parts_->backend.platform_name},
            {"backend", std::string(hw::backend_name(opts_.backend))},
            {"mountpoint", opts_.mountpoint},
            {"pid", getpid()}};
  if (hw::SimControl* s = parts_->backend.sim) {
    d["clock"] = {{"mode", s->manual_clock() ? "manual" : "real"}, {"now_ms", s->now_ms()}};
    forget_dead_lwp_units(*s);
    const hw::SimControl::LwpUsage u = s->lwp_usage();
    d["lwp"] = {{"units", u.units}, {"bytes", u.bytes}, {"limit_bytes", u.limit_bytes}};
    d["task_model"] = task_model_ ? task_model_->status() : json{{"mode", "none"}};
  }
  json online = json::array();
  for (unsigned c : parts_->backend.arch->info().online.cpus()) online.push_back(c);
  d["online_cpus"] = std::move(online);
  if (parts_->backend.broker_counts) {
    const auto [round_trips, ops] = parts_->backend.broker_counts();
    d["broker"] = {{"round_trips", round_trips}, {"ops", ops}};
  }
  if (!j.contains("platform")) j["platform"] = parts_->backend.platform_name;
  if (const std::optional<hw::CpuDescription>& cpu = parts_->backend.cpu;
      cpu && j["platform"].is_object()) {
    j["platform"]["vendor"] = cpu->vendor;
    j["platform"]["family"] = cpu->family;
    j["platform"]["model"] = cpu->model;
  }
  if (!boot_restore_.is_null()) d["boot_state"] = boot_restore_;
  j["daemon"] = std::move(d);
  return j;
}

Result<json> Daemon::set_clock_mode(bool manual) {
  RESCTRLFS_ASSIGN_OR_RETURN(hw::SimControl * s, sim());
  s->set_manual_clock(manual);
  return json{{"mode", manual ? "manual" : "real"}, {"now_ms", s->now_ms()}};
}

Result<json> Daemon::advance_clock(uint64_t ms) {
  RESCTRLFS_ASSIGN_OR_RETURN(hw::SimControl * s, sim());
  if (!s->manual_clock()) {
    return Error::make(EINVAL, "the clock is real; set it to manual before advancing it");
  }
  // Step at most one worker interval at a time so every 1000 ms worker run
  // the kernel would have made (limbo, MBM overflow, mba_sc) happens.
  uint64_t left = ms;
  while (left > 0) {
    const uint64_t step = std::min<uint64_t>(left, kTickInterval.count());
    s->advance_ms(step);
    parts_->fs->tick(fs_now());
    left -= step;
  }
  return json{{"now_ms", s->now_ms()}};
}

namespace {

// Where thread `tid` may run, for its workload on the simulated machine:
// its real affinity (sched_getaffinity) when that leaves out some of this
// machine's online CPUs (taskset, cgroup cpusets), the CPU numbers taken as
// the simulated machine's; empty when it may run anywhere (then it spreads
// over every domain of the simulated machine, whatever its size). ESRCH for
// a thread that does not exist.
Result<std::vector<unsigned>> thread_affinity(int tid) {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(tid, sizeof(set), &set) != 0) {
    if (errno == ESRCH) return Error::make(ESRCH, "no thread " + std::to_string(tid));
    return Error::make(
        errno, "thread " + std::to_string(tid) + ": sched_getaffinity: " + std::strerror(errno));
  }
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  if (online > 0 && CPU_COUNT(&set) >= online) return std::vector<unsigned>{};
  std::vector<unsigned> cpus;
  for (unsigned c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  return cpus;
}

}  // namespace

Result<json> Daemon::attach_workload(const WorkloadRequest& req) {
  RESCTRLFS_ASSIGN_OR_RETURN(hw::SimControl * s, sim());
  if (req.channel) {
    RESCTRLFS_RETURN_IF_ERROR(s->attach_channel_workload(*req.channel, req.workload));
  } else if (req.tid) {
    // The thread must exist (its group decides what it is counted in), as
    // a tasks write would insist.
    RESCTRLFS_ASSIGN_OR_RETURN(std::vector<unsigned> allowed, thread_affinity(*req.tid));
    hw::Workload w = req.workload;
    if (req.cpu) {
      w.cpu = static_cast<int>(*req.cpu);  // pinned: --tid T --cpu C
    } else {
      w.allowed_cpus = std::move(allowed);
    }
    RESCTRLFS_RETURN_IF_ERROR(s->attach_thread_workload(*req.tid, w));
  } else {
    RESCTRLFS_RETURN_IF_ERROR(s->attach_cpu_workload(*req.cpu, req.workload));
  }
  return json::object();
}

namespace {

std::string to_hex(const std::string& bytes) {
  static const char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out.push_back(kDigits[c >> 4]);
    out.push_back(kDigits[c & 15]);
  }
  return out;
}

json lwp_status_json(const hw::LwpThreadStatus& st) {
  return json{{"active", st.active},
              {"generation", st.generation},
              {"lwpcb_address", st.lwpcb_address},
              {"flags", st.flags},
              {"buffer_size", st.buffer_size},
              {"head", st.head},
              {"tail", st.tail},
              {"missed", st.missed},
              {"interrupts", st.interrupts},
              {"pending_records", st.pending_records},
              {"lwpcb_hex", to_hex(st.lwpcb)}};
}

}  // namespace

Result<json> Daemon::lwp(const LwpRequest& req) {
  RESCTRLFS_ASSIGN_OR_RETURN(hw::SimControl * s, sim());
  forget_dead_lwp_units(*s);
  switch (req.action) {
    case LwpRequest::Action::kArm: {
      // A unit is memory held for a thread until it exits: only for one
      // that exists.
      if (!thread_exists(static_cast<int>(req.tid)))
        return Error::make(ESRCH, "no thread " + std::to_string(req.tid) +
                                      ": lwp arm takes the id of a live thread");
      hw::LwpArm arm;
      arm.value = req.value;
      arm.instructions = req.instructions;
      arm.branches = req.branches;
      arm.dcache = req.dcache;
      arm.buffer_bytes = req.buffer_bytes;
      arm.threshold = req.threshold;
      arm.min_latency = req.min_latency;
      arm.random = req.random;
      arm.clf = req.clf;
      arm.nbc = req.nbc;
      arm.rdc = req.rdc;
      arm.ram = req.ram;
      arm.oth = req.oth;
      RESCTRLFS_ASSIGN_OR_RETURN(hw::LwpThreadStatus st, s->lwp_arm_events(req.tid, arm));
      return lwp_status_json(st);
    }
    case LwpRequest::Action::kDisarm: {
      RESCTRLFS_ASSIGN_OR_RETURN(hw::LwpThreadStatus st, s->lwp_arm(req.tid, ""));
      return lwp_status_json(st);
    }
    case LwpRequest::Action::kIns:
    case LwpRequest::Action::kVal: {
      hw::LwpInsert op;
      op.value = req.action == LwpRequest::Action::kVal;
      op.data2 = req.data2;
      op.data1 = req.data1;
      op.flags = req.flags;
      op.count = req.count;
      RESCTRLFS_ASSIGN_OR_RETURN(hw::LwpInsertResult r, s->lwp_insert(req.tid, op));
      json out = lwp_status_json(r.status);
      out["written"] = r.written;
      if (!op.value) out["full"] = r.full;  // executions that returned CF = 1
      return out;
    }
    case LwpRequest::Action::kDrain: {
      hw::LwpThreadStatus st;
      RESCTRLFS_ASSIGN_OR_RETURN(std::string recs,
                                 s->lwp_drain(req.tid, std::min(req.max, kMaxLwpDrain), &st));
      json out = lwp_status_json(st);
      out["records"] = recs.size() / hw::kLwpRecordSize;
      out["data_hex"] = to_hex(recs);
      return out;
    }
    case LwpRequest::Action::kStatus:
    default: {
      RESCTRLFS_ASSIGN_OR_RETURN(hw::LwpThreadStatus st, s->lwp_status(req.tid));
      return lwp_status_json(st);
    }
  }
}

Result<json> Daemon::inject_fault(const FaultRequest& req) {
  RESCTRLFS_ASSIGN_OR_RETURN(hw::SimControl * s, sim());
  s->fail_next_writes(req.fail_writes, req.cpu);
  return json::object();
}

namespace {

// A register as `resctrlfsctl registers` lists it: its place
// (hw::register_place(), each field also in hex where it says so) and value.
json register_json(const hw::RegisterValue& r) {
  json e = json::object();
  for (const hw::RegisterField& f : hw::register_place(r)) {
    e[f.name] = f.value;
    if (f.hex) e[std::string(f.name) + "_hex"] = hex(f.value);
  }
  e["value"] = r.value;
  e["value_hex"] = hex(r.value);
  return e;
}

// Every register of the machine by feature: {"l3_cat": [...], ...}.
json register_groups(const std::vector<hw::RegisterValue>& all) {
  json groups = json::object();
  for (const hw::RegisterValue& r : all) {
    groups[r.group].push_back(register_json(r));
  }
  return groups;
}

}  // namespace

Result<json> Daemon::registers() {
  RESCTRLFS_ASSIGN_OR_RETURN(hw::SimControl * s, sim());
  json regs = json::array();
  for (const hw::RegisterValue& r : s->dump_registers()) regs.push_back(register_json(r));
  return json{{"registers", std::move(regs)}, {"groups", register_groups(s->dump_all_registers())}};
}

Result<json> Daemon::stats() {
  json counts = json::object();
  for (const auto& [name, n] : stats_.snapshot()) counts[name] = n;
  json out = {{"requests", std::move(counts)}};
  // The broker's counts too (status has them, but status lists every
  // group: a benchmark asking between commands would time its own probe).
  if (parts_ && parts_->backend.broker_counts) {
    const auto [round_trips, ops] = parts_->backend.broker_counts();
    out["broker"] = {{"round_trips", round_trips}, {"ops", ops}};
  }
  return out;
}

Result<json> Daemon::reset_stats() {
  stats_.reset();
  return json::object();
}

void Daemon::follow_cpu_hotplug() {
  const std::string path = opts_.hw_root + "/sys/devices/system/cpu/online";
  std::ifstream in(path);
  if (!in) return;
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  if (text == sysfs_online_text_) return;
  const CpuMask& have = parts_->backend.arch->info().online;
  Result<CpuMask> listed = parse_cpu_list(text, have.size(), CpuListSyntax::kPrinted);
  if (!listed.ok() || listed->count() == 0) {
    spdlog::warn("{}: not a list of online CPUs: \"{}\"", path, text);
    sysfs_online_text_ = std::move(text);
    return;
  }
  sysfs_online_text_ = std::move(text);
  fs::Filesystem& fs = *parts_->fs;
  bool changed = false;
  // The kernel has taken the CPU away already: fs/ lets go of it.
  for (unsigned cpu : have.cpus()) {
    if (listed->test(cpu)) continue;
    Result<void> r = fs.cpu_offline(cpu);
    if (r.ok()) {
      spdlog::info("CPU {} went offline (sysfs)", cpu);
      changed = true;
    } else {
      spdlog::warn("CPU {} went offline (sysfs) but stays in the tree: {}", cpu, r.error().message);
    }
  }
  for (unsigned cpu : listed->cpus()) {
    if (parts_->backend.arch->info().online.test(cpu)) continue;
    Result<void> r = fs.cpu_online(cpu);
    if (r.ok()) {
      spdlog::info("CPU {} came online (sysfs)", cpu);
      changed = true;
    } else {
      spdlog::warn("CPU {} came online (sysfs) but is not in the tree: {}", cpu, r.error().message);
    }
  }
  // Group CPU masks changed: the journal follows, as after a cpus write.
  if (changed) (void)commit_journal();
}

Result<json> Daemon::thread_cpu(const ThreadCpuRequest& req) {
  RESCTRLFS_ASSIGN_OR_RETURN(unsigned cpu, thread_cpus_.cpu_of(req.tid));
  return json{{"cpu", cpu}};
}

Result<json> Daemon::set_cpu_online(const CpuOnlineRequest& req) {
  hw::SimControl* s = parts_ ? parts_->backend.sim : nullptr;
  if (s == nullptr) {
    // On real hardware the kernel decides which CPUs run; the daemon follows
    // sysfs's online list (follow_cpu_hotplug).
    return Error::make(EOPNOTSUPP,
                       "the cpu command hotplugs the simulated machine; on real hardware the "
                       "kernel takes CPUs offline and online (sysfs cpuN/online) and the "
                       "daemon follows within a second");
  }
  fs::Filesystem& fs = *parts_->fs;
  if (req.online) {
    // The machine powers the CPU up, then the OS takes it.
    const bool was_powered = s->cpu_online(req.cpu);
    RESCTRLFS_RETURN_IF_ERROR(s->set_cpu_online(req.cpu, true));
    Result<void> r = fs.cpu_online(req.cpu);
    if (!r.ok()) {
      if (!was_powered) (void)s->set_cpu_online(req.cpu, false);
      return std::move(r).error();
    }
  } else {
    // The OS lets go of the CPU, then the machine powers it down.
    RESCTRLFS_RETURN_IF_ERROR(fs.cpu_offline(req.cpu));
    RESCTRLFS_RETURN_IF_ERROR(s->set_cpu_online(req.cpu, false));
  }
  // Group CPU masks changed: the journal follows, as after a cpus write.
  (void)commit_journal();
  const CpuMask& on = parts_->backend.arch->info().online;
  json cpus = json::array();
  for (unsigned c : on.cpus()) cpus.push_back(c);
  return json{{"cpu", req.cpu}, {"online", req.online}, {"online_cpus", std::move(cpus)}};
}

}  // namespace resctrlfs::daemon
