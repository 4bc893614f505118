// Defines Daemon: one mounted resctrlfs instance and its Boost.Asio event
// loop. The loop thread owns the FUSE session fd, the 1000 ms timer, the
// task event sources (fork tracepoint, proc connector), the control socket
// and the signals, and serves the FUSE requests that need no register.
// Commands — FUSE requests that may reach the hardware, the timer's work
// (fs::Filesystem::tick, the journal, the boot state) and the control
// socket's commands — run one at a time on the CommandWorker's thread, so
// a command waiting on a slow register broker leaves the loop answering reads.
// The journal and the boot state are touched on the worker only (and at
// shutdown, after it stopped).
//
// Also defines the seam that builds the hardware backend and the filesystem
// (DaemonParts, PartsFactory) so that tests can run the same daemon over a
// small fake filesystem.
#pragma once

#include <utility>  // before Asio: Boost 1.74 misses it under C++20

#include <atomic>
#include <boost/asio.hpp>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>

#include "base/result.h"
#include "daemon/command_worker.h"
#include "daemon/control_protocol.h"
#include "daemon/control_server.h"
#include "daemon/fork_tracepoint.h"
#include "daemon/fuse_bridge.h"
#include "daemon/invalidation_queue.h"
#include "daemon/journal.h"
#include "daemon/options.h"
#include "daemon/proc_connector.h"
#include "daemon/request_stats.h"
#include "daemon/task_model.h"
#include "daemon/thread_cpu.h"
#include "fs/filesystem.h"
#include "hw/backend.h"
#include "hw/counter_store.h"

namespace resctrlfs::daemon {

// What a daemon serves. Members are destroyed bottom-up: the filesystem
// before the task source and the backend it points into.
struct DaemonParts {
  hw::Backend backend;
  std::unique_ptr<fs::TaskSource> tasks;
  std::unique_ptr<fs::Filesystem> fs;
};
using PartsFactory =
    std::function<Result<DaemonParts>(const DaemonOptions& opts, fs::InvalidationSink* inval)>;

class Daemon : public ControlTarget {
 public:
  explicit Daemon(DaemonOptions opts);
  ~Daemon() override;

  // Builds the parts, performs the resctrl mount (fs::Filesystem::mount),
  // creates and mounts the FUSE session and opens the sockets. On error
  // nothing stays mounted.
  Result<void> start(const PartsFactory& factory);
  // Serves until SIGTERM/SIGINT or an external unmount; then unmounts (the
  // hardware is reset as by the kernel's unmount). Returns the exit status.
  int run();

  // ControlTarget (called on the loop thread).
  Result<nlohmann::json> status() override;
  Result<nlohmann::json> set_clock_mode(bool manual) override;
  Result<nlohmann::json> advance_clock(uint64_t ms) override;
  Result<nlohmann::json> attach_workload(const WorkloadRequest& req) override;
  Result<nlohmann::json> lwp(const LwpRequest& req) override;
  Result<nlohmann::json> inject_fault(const FaultRequest& req) override;
  Result<nlohmann::json> registers() override;
  Result<nlohmann::json> stats() override;
  Result<nlohmann::json> reset_stats() override;
  Result<nlohmann::json> set_cpu_online(const CpuOnlineRequest& req) override;
  Result<nlohmann::json> thread_cpu(const ThreadCpuRequest& req) override;

 private:
  // The time fs/ sees: the simulated machine's clock when there is one (so
  // a manual clock drives the 1000 ms workers), else the monotonic clock.
  std::chrono::steady_clock::time_point fs_now() const;
  void arm_fuse();
  void serve_fuse_batch();
  void arm_proc();
  void arm_fork_fd(size_t i);
  // Reads the forks and exits the kernel reported so far and hands them to
  // fs/ in the order they happened.
  void drain_proc();
  void arm_timer();
  // The timer's work, on the worker: fs/'s tick, the journal, the boot state.
  void tick_work();
  // A control request, on the worker; replies through `done`.
  void run_control_line(const std::string& line, const ControlServer::Done& done);
  // A clock advance of `ms` more (`done_ms` of it advanced already), one
  // slice of simulated time per worker job: what was queued meanwhile
  // (FUSE requests that wait for the worker, other control requests) runs
  // between two slices instead of after the whole advance. Replies through
  // `done` after the last slice.
  void advance_in_slices(uint64_t ms, uint64_t done_ms, ControlServer::Done done);
  // Logs the CPU association writes that failed since the last call (on the
  // worker): at most kFailureLines lines a minute, the rest counted in one
  // line when the minute is over (status counts every failure).
  void log_hw_write_failures();
  static constexpr unsigned kFailureLines = 8;
  void flush_invalidations();
  void shutdown(const char* why);
  // The state journal (--state-dir, see journal.h): restored after the
  // resctrl mount; committed before the reply of every request that changed
  // the model, once per tick (fork and exit events), and when a signal stops the
  // daemon; cleared by a user's unmount. Compacted (its log folded into a
  // new snapshot) on the tick.
  // Before a command (see StateJournal::prepare): an error refuses it,
  // with the journal's errno and a line in last_cmd_status.
  Result<void> prepare_journal();
  Result<void> commit_journal();
  void compact_journal();
  // The boot-state file (--boot-state-dir, see boot_state.h): read before
  // the resctrl mount; written (if it changed) on the tick after a request
  // that changed the model, and after the resctrl unmount at shutdown.
  void load_boot_state();
  // With --state-dir: keeps the machine's counters and the Arch's running
  // totals in DIR/counters (hw/counter_store.h), continuing a dead
  // predecessor's on a takeover.
  void keep_counters();
  // Declared workloads kept for a takeover (kWorkloadFile): keep_workload
  // records an accepted request and rewrites the file; restore_workloads
  // gives the file's requests again on a takeover, and on any other start
  // removes it (a fresh start has none, as before).
  void keep_workload(const ControlRequest& req, const std::string& line);
  void restore_workloads();
  // `stopping`: write even an unchanged document (its time is the stop's).
  void save_boot_state(bool stopping = false);
  Result<hw::SimControl*> sim();
  // The real backend: follows CPU hotplug as the kernel announces it, in
  // sysfs's online list under --hw-root, read on the tick: a CPU that left
  // it goes offline in fs/ (it leaves every group's cpus, a domain with no
  // CPU left goes away), one that came back comes online. Acts only when
  // the file's text changes.
  void follow_cpu_hotplug();
  std::string sysfs_online_text_;

  DaemonOptions opts_;
  // Where real threads run, in the platform's CPU numbers.
  ThreadCpus thread_cpus_;
  boost::asio::io_context io_;
  InvalidationQueue inval_;
  RequestStats stats_;
  // Declared before parts_: the Arch and the machine work in its mapping
  // until they are gone.
  std::unique_ptr<hw::CounterStore> counter_store_;
  std::map<std::string, std::string> workloads_;  // key ("cpu:1") -> request line
  std::optional<DaemonParts> parts_;
  bool fs_mounted_ = false;
  std::unique_ptr<FuseBridge> bridge_;
  std::unique_ptr<boost::asio::posix::stream_descriptor> fuse_fd_;
  std::unique_ptr<ProcConnector> proc_;
  std::unique_ptr<boost::asio::posix::stream_descriptor> proc_fd_;
  // Null when the tracepoint cannot be opened: forks then come from the
  // proc connector (inheritance per process, see proc_connector.h).
  std::unique_ptr<ForkTracepoint> forks_;
  std::vector<std::unique_ptr<boost::asio::posix::stream_descriptor>> fork_fds_;
  boost::asio::steady_timer timer_;
  boost::asio::signal_set signals_;
  std::unique_ptr<ControlServer> control_;
  std::chrono::steady_clock::time_point clock_base_;
  bool stopping_ = false;
  std::unique_ptr<StateJournal> journal_;
  std::string boot_state_path_;     // empty: not kept
  std::string boot_state_written_;  // the document last written
  bool boot_state_dirty_ = false;   // a command ran since the last write
  // What the restore found ({"restored", "unmounted_ms", "limbo_pass"}),
  // shown by `status` under daemon.boot_state; null when nothing was restored.
  nlohmann::json boot_restore_;
  int exit_code_ = 0;
  // log_hw_write_failures(): the current minute, its lines, the rest.
  std::chrono::steady_clock::time_point failure_log_minute_{};
  unsigned failure_lines_ = 0;
  uint64_t failures_unlogged_ = 0;
  // Created by start(), stopped by shutdown() before the resctrl unmount.
  std::unique_ptr<CommandWorker> worker_;
  std::atomic<bool> tick_queued_{false};  // a tick waits on the worker
  // The task model (simulated backend, --task-model other than none),
  // sampled on the worker at every tick.
  std::unique_ptr<TaskModel> task_model_;
};

// resctrlfsd's main(), with the parts factory injected.
int daemon_main(int argc, const char* const* argv, const PartsFactory& factory);

}  // namespace resctrlfs::daemon
