// Defines the results of one resctrlfs_bench run and their two renderings:
// a side-by-side table with ratios and MET/MISSED per target, and JSON.
#pragma once

#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "bench/bench_scale.h"
#include "bench/bench_util.h"

namespace resctrlfs::bench {

struct Report {
  std::vector<const Target*> targets;
  std::vector<std::string> placements;
  std::vector<int> threads;
  int runs = 1;
  bool quick = false;
  int cpu = 0;

  // placement -> client threads -> op -> target -> one Sample per run
  std::map<std::string,
           std::map<int, std::map<std::string, std::map<std::string, std::vector<Sample>>>>>
      samples;
  // Daemon CPU time and FUSE requests over the timed calls of one operation.
  struct DaemonCpu {
    uint64_t ns = 0, requests = 0, calls = 0;
    double wall_us = 0;  // how long the measurement window was
  };
  // placement -> target -> daemon CPU ns per second with no requests (proc
  // connector events of the whole machine, timers): subtracted from the
  // per-request figure, and reported.
  std::map<std::string, std::map<std::string, double>> idle_cpu_ns_per_s;
  // placement -> client threads -> op -> target -> totals over runs
  std::map<std::string, std::map<int, std::map<std::string, std::map<std::string, DaemonCpu>>>>
      daemon_cpu;
  // target -> op -> opcode -> requests per call
  std::map<std::string, std::map<std::string, std::map<std::string, double>>> requests;
  std::map<std::string, std::vector<ScaleResult>> scale;
  std::map<std::string, std::vector<TasksResult>> tasks;
  std::string tasks_limit;
  std::vector<std::string> notes;

  void add(const std::string& placement, int threads, const std::string& op,
           const std::string& target, const Sample& s) {
    samples[placement][threads][op][target].push_back(s);
  }
  void add_daemon_cpu(const std::string& placement, int threads, const std::string& op,
                      const std::string& target, uint64_t ns, uint64_t reqs, uint64_t calls,
                      double wall_us) {
    DaemonCpu& d = daemon_cpu[placement][threads][op][target];
    d.wall_us += wall_us;
    d.ns += ns;
    d.requests += reqs;
    d.calls += calls;
  }
};

// The median over runs of each figure of a set of Samples (error if all failed).
Sample summarize(const std::vector<Sample>& runs);

void print_report(const Report& r, FILE* out);
bool write_json(const Report& r, const std::string& path);

}  // namespace resctrlfs::bench
