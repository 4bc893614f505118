// Defines TaskModel (ours): on the simulated machine, turns what the real
// threads in resctrl groups do into simulated traffic, so that their
// groups' llc_occupancy and mbm_*_bytes move as a kernel's would on
// hardware. Sampled on the daemon's 1000 ms tick, O(threads in groups).
//
// What drives the counters, per thread tagged with a CLOSID or RMID other
// than 0 and without a declared workload (`resctrlfsctl workload`):
//   - where it runs: field 39 (processor) of /proc/TID/stat, mapped onto
//     the platform's CPUs by a CpuLocator; the simulator counts it under its
//     tags there, a tag of 0 taking that CPU's PQR_ASSOC as the kernel's
//     context switch does;
//   - its cache footprint: the resident anonymous memory of its process
//     (/proc/TGID/statm: resident - shared, in pages). statm, because the
//     kernel keeps those numbers as counters and reads them in O(1), where
//     smaps_rollup walks every mapping's page tables (milliseconds for a big
//     process, for each of a thousand threads every second); anonymous,
//     because that is the memory the process itself wrote (code and page
//     cache are shared with other processes and mostly untouched). RSS is
//     per process: it is shared among the process's sampled threads in
//     proportion to the CPU time each had since the last sample. A thread
//     that had no CPU time touched nothing: its footprint is 0, so its
//     lines stay in the simulated cache until other fills replace them;
//   - its memory bandwidth: where the host has a PMU and perf_event_open
//     gives per-task events, the thread's LLC misses (PERF_COUNT_HW_CACHE_
//     MISSES, user space) times the 64-byte line since the last sample.
//     Otherwise (VMs without a virtual PMU) a model: every minor fault is a
//     first touch of a 4 KiB page, read from memory (a page's worth of
//     bytes); and while it runs the thread streams over its footprint at
//     kStreamMbpsPerCore times its share of a CPU, of which the simulator
//     counts only what misses the cache (the part of the footprint its
//     CLOSID cannot keep in the L3; Workload::stream_mbps). The simulator
//     then throttles either kind as it throttles declared workloads (MBA
//     delays, AMD limits, CBA, the domain's peak).
//
// Limits (stated in the documentation): the footprint is what the process
// holds, not what it touches in a second (a process that maps a big buffer
// and touches a small part of it over and over counts the whole buffer);
// without a PMU bandwidth is a model of CPU time and page faults, not a
// measurement; threads of the default group on CPUs of no group are not
// sampled (that would be every thread of the machine); AET telemetry and
// LWP count declared workloads only.
//
// Threading: sample() and status() run on the daemon's command worker.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "hw/backend.h"

namespace resctrlfs::daemon {

// What /proc says about one thread.
struct ThreadStat {
  uint64_t cpu_ticks = 0;  // utime + stime, in clock ticks
  uint64_t minflt = 0;     // minor faults
  int processor = -1;      // the CPU it last ran on
};

// Parses the text of /proc/PID/task/TID/stat (the command name may hold
// spaces and parentheses: fields are counted after its last ')').
std::optional<ThreadStat> parse_thread_stat(const std::string& text);
// Resident anonymous bytes from the text of /proc/PID/statm.
std::optional<uint64_t> parse_statm_anon_bytes(const std::string& text, uint64_t page_size);

// Where the task model reads /proc; a seam for tests.
class TaskProcSource {
 public:
  virtual ~TaskProcSource() = default;
  virtual std::optional<ThreadStat> thread_stat(pid_t tid) = 0;
  // The process of a thread (its thread group id); nullopt: gone.
  virtual std::optional<pid_t> tgid(pid_t tid) = 0;
  virtual std::optional<uint64_t> anon_resident_bytes(pid_t tgid) = 0;
  virtual double ticks_per_second() const = 0;
  virtual uint64_t page_size() const = 0;
};
std::unique_ptr<TaskProcSource> make_proc_source(std::string proc_root = "/proc");

// Per-task hardware event counts (LLC misses); a seam for tests, which
// inject recorded counts.
class TaskEventSource {
 public:
  virtual ~TaskEventSource() = default;
  // Starts counting for `tid`; false when it cannot (then the model is used
  // for that thread).
  virtual bool open(pid_t tid) = 0;
  // The count since open(); nullopt when it cannot be read.
  virtual std::optional<uint64_t> read(pid_t tid) = 0;
  virtual void close(pid_t tid) = 0;
  // For status: "perf:cache-misses", "recorded", ...
  virtual std::string name() const = 0;
};
// perf_event_open's PERF_COUNT_HW_CACHE_MISSES per task, or null when this
// host gives no such event (no PMU, perf_event_paranoid, seccomp): the
// probe opens one on the calling thread. `why` says why not.
std::unique_ptr<TaskEventSource> make_perf_event_source(std::string* why = nullptr);

// Maps the CPU a thread runs on, as the host numbers it, onto the
// platform's CPUs. The one place that decides it, so that virtual CPUs can
// supply their own numbers.
class CpuLocator {
 public:
  virtual ~CpuLocator() = default;
  // The platform CPU, or -1 when there is none.
  virtual int platform_cpu(int host_cpu) const = 0;
  // The platform CPU thread `tid` counts on, `host_cpu` being the host CPU
  // it last ran on: by default platform_cpu(host_cpu); virtual CPUs answer
  // from the thread's affinity.
  virtual int thread_cpu(pid_t tid, int host_cpu) {
    (void)tid;
    return platform_cpu(host_cpu);
  }
};
// As NAME@host places host CPUs on the platform (and as thread affinity is
// read today): host CPU n is platform CPU n when the platform has it online;
// otherwise the platform's online CPUs are taken in turn (n modulo their
// count), so a host with more CPUs than the platform still lands on one.
class HostCpuLocator final : public CpuLocator {
 public:
  explicit HostCpuLocator(std::vector<unsigned> platform_online)
      : online_(std::move(platform_online)) {}
  int platform_cpu(int host_cpu) const override;

 private:
  std::vector<unsigned> online_;  // ascending
};

enum class TaskModelMode { kAuto, kModel, kNone };
// "auto" (perf events where the host has them, else the model), "model",
// "none"; EINVAL otherwise.
Result<TaskModelMode> parse_task_model_mode(const std::string& s);
const char* task_model_mode_name(TaskModelMode m);

class TaskModel {
 public:
  // A busy core streaming from memory, MB/s (one core of a current server
  // reaches about 10 GB/s in STREAM-like loops).
  static constexpr double kStreamMbpsPerCore = 10000;
  static constexpr double kLineBytes = 64;

  // `events` may be null (no PMU): the model is used. `sim` outlives this.
  TaskModel(hw::SimControl& sim, TaskModelMode mode, std::unique_ptr<TaskProcSource> proc,
            std::unique_ptr<TaskEventSource> events, std::unique_ptr<CpuLocator> cpus,
            std::string events_why = "");
  ~TaskModel();

  // One sample at `now` (the daemon's tick): every thread the simulator
  // lists (SimControl::task_model_threads) is read and its activity since
  // the previous sample handed to the simulator in one batch. The first
  // sample of a thread only takes its baseline.
  void sample(std::chrono::steady_clock::time_point now);
  nlohmann::json status() const;
  // Where bandwidth comes from: the perf event's name, or the model.
  std::string bandwidth_source() const;

 private:
  struct ThreadState {
    pid_t tgid = 0;
    ThreadStat last;
    bool has_events = false;
    uint64_t last_events = 0;
  };
  void forget(pid_t tid);

  hw::SimControl& sim_;
  TaskModelMode mode_;
  std::unique_ptr<TaskProcSource> proc_;
  std::unique_ptr<TaskEventSource> events_;
  std::unique_ptr<CpuLocator> cpus_;
  std::string events_why_;
  std::map<pid_t, ThreadState> threads_;
  std::optional<std::chrono::steady_clock::time_point> last_;
  // For status.
  uint64_t samples_ = 0;
  size_t active_ = 0;             // threads with activity in the last sample
  size_t counted_by_events_ = 0;  // ... of them measured by events
  uint64_t last_sample_ns_ = 0;   // the last sample's cost (CPU time of the worker)
};

}  // namespace resctrlfs::daemon
