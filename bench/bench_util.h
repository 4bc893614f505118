// Defines the measuring vocabulary of resctrlfs_bench: the filesystems under
// test (Target), timed runs of an operation on 1..N client threads (Sample),
// CPU placement, and what the benchmark reads about a daemon (request
// counters over its control socket, CPU time, resident memory).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace resctrlfs::bench {

// One filesystem the benchmark measures. FUSE targets have a daemon pid and a
// control socket; kernel baselines (tmpfs, /proc, sysfs) have neither.
struct Target {
  std::string name;  // "resctrlfs", "floor", "tmpfs", "proc", "sysfs"
  std::string root;  // mount point or tree root ("" for proc/sysfs)
  pid_t pid = 0;     // daemon pid, 0 for kernel filesystems
  std::string control;
  // Files for targets without a resctrl-shaped tree.
  std::string read_file;  // file for open/read/close, pread, stat, cat
  std::string list_dir;   // directory for readdir
  bool resctrl_tree() const { return !root.empty(); }
  bool fuse() const { return pid != 0; }
};

// The result of timing one operation: per-op latencies of all threads.
struct Sample {
  double p50_us = 0, p99_us = 0, mean_us = 0, ops_per_s = 0;
  uint64_t ops = 0;
  bool truncated = false;  // stopped by the time budget before `count` calls
  std::string error;       // non-empty when the operation failed
};

// An operation body: called with the thread index, returns 0 or an errno.
using OpFn = std::function<int(int thread)>;

// Runs `op` on `threads` threads, `warmup` untimed then `count` timed calls
// per thread, all threads starting together. Each thread pins itself to
// `cpu` when it is set. Per-call latencies go into the percentiles; ops/s is
// total calls over the wall time from the first start to the last end.
// A thread stops early once `budget_s` seconds of timed calls have passed, so
// a pathologically slow operation costs the run seconds, not hours; the
// Sample then holds fewer calls (its `truncated` flag says so).
Sample time_op(const OpFn& op, int threads, int warmup, int count, std::optional<int> cpu,
               double budget_s = 10);

// Pins every thread of `pid` (or, with pid 0, the calling thread) to `cpu`,
// or to all online CPUs when `cpu` is empty.
void pin_process(pid_t pid, std::optional<int> cpu);
void pin_self(std::optional<int> cpu);
int online_cpus();

// Sum of the on-CPU time of all threads of `pid` in nanoseconds, from
// /proc/<pid>/task/*/schedstat.
uint64_t process_cpu_ns(pid_t pid);
// VmRSS of `pid` in KiB.
uint64_t process_rss_kib(pid_t pid);

// Sends one JSON command line to a control socket and returns the reply.
std::optional<nlohmann::json> control_call(const std::string& socket, const nlohmann::json& cmd);
// Request counters per opcode (upper-case names: OPEN, READ, ...), taken
// from a {"cmd":"stats"} reply whatever object it nests them in.
std::optional<std::map<std::string, uint64_t>> request_counts(const std::string& socket);
bool reset_request_counts(const std::string& socket);

double now_us();
std::string read_all(const std::string& path);
std::string trim(std::string s);

}  // namespace resctrlfs::bench
