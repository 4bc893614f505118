// Defines the scale measurements of resctrlfs_bench: monitoring sweeps over
// N MON groups (held fds and directory walks), creating and removing N
// groups, daemon memory at each N, and tasks files with many thread ids.
#pragma once

#include <string>
#include <vector>

#include "bench/bench_util.h"

namespace resctrlfs::bench {

struct ScaleResult {
  int groups = 0;
  int counters = 0;      // groups x domains x events
  double create_ms = 0;  // mkdir of all groups
  double remove_ms = 0;  // rmdir of all groups
  double sweep_ms = 0;   // one pread of every held counter fd, median of sweeps
  double walk_ms = 0;    // readdir + open/read/close of every counter, median
  uint64_t rss_kib = 0;  // daemon VmRSS with the groups present (0 if no daemon)
  uint64_t rss_base_kib = 0;
  std::string error;
};

// Creates `groups` MON groups under mon_groups/ of `t`, measures, removes
// them. For a plain tree (tmpfs) the counter files are created by the
// benchmark with the domain names of `domains`.
ScaleResult run_scale(const Target& t, int groups, const std::vector<std::string>& domains,
                      int sweeps, int walks);

struct TasksResult {
  int requested = 0;        // thread count asked for
  int threads = 0;          // thread count measured
  double move_ms = 0;       // one write(2) per thread id into the group's tasks
  double list_ms = 0;       // reading the group's tasks file to EOF
  double move_back_ms = 0;  // the same ids written into the root's tasks
  size_t listed = 0;        // ids the listing showed
  std::string error;
};

// A helper process holding `count` sleeping threads.
class ThreadHerd {
 public:
  explicit ThreadHerd(int count);
  ~ThreadHerd();
  const std::vector<int>& tids() const { return tids_; }
  const std::string& error() const { return error_; }

 private:
  pid_t pid_ = 0;
  std::vector<int> tids_;
  std::string error_;
};

// How many threads this machine lets a helper create now, with headroom left
// for everyone else (pid_max, threads-max, vm.max_map_count), and why.
int max_herd_size(std::string* limit_reason);

TasksResult run_tasks(const Target& t, const std::string& group, const ThreadHerd& herd);

}  // namespace resctrlfs::bench
