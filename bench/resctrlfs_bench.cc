// Defines resctrlfs_bench: measures resctrlfs side by side with a minimal
// FUSE floor (floor_fs), a tmpfs copy of the tree, a /proc seq_file and a
// sysfs (kernfs) file, in one run on one machine, and reports ratios against
// the project's targets. bench/run.sh mounts everything and calls it; see the
// comment at the top of run.sh for the one command to use.
//
// Every figure it prints is measured in this run; nothing is compared with a
// stored number.
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/bench_ops.h"
#include "bench/bench_report.h"
#include "bench/bench_scale.h"
#include "bench/bench_util.h"

namespace resctrlfs::bench {
namespace {

struct Options {
  Target resctrl{.name = "resctrlfs"}, floor{.name = "floor"}, tmpfs{.name = "tmpfs"};
  Target proc{.name = "proc", .read_file = "/proc/loadavg", .list_dir = "/proc/sys/kernel/keys"};
  Target sysfs{.name = "sysfs",
               .read_file = "/sys/devices/system/cpu/online",
               .list_dir = "/sys/devices/system/cpu/cpu0"};
  TreePaths paths;
  bool quick = false;
  int runs = 3;
  int cpu = 0;
  std::vector<std::string> placements = {"pinned", "unpinned"};
  std::vector<int> threads = {1, 2};
  std::vector<int> scale = {64, 256, 1024};
  std::vector<int> tasks = {10000, 100000};
  std::string out = "bench/results/latest.json";
};

std::vector<int> parse_ints(const std::string& s) {
  std::vector<int> v;
  size_t i = 0;
  while (i < s.size()) {
    v.push_back(atoi(s.c_str() + i));
    size_t c = s.find(',', i);
    if (c == std::string::npos) break;
    i = c + 1;
  }
  return v;
}

std::vector<std::string> parse_words(const std::string& s) {
  std::vector<std::string> v;
  size_t i = 0;
  while (i <= s.size()) {
    size_t c = s.find(',', i);
    v.push_back(s.substr(i, c == std::string::npos ? std::string::npos : c - i));
    if (c == std::string::npos) break;
    i = c + 1;
  }
  return v;
}

const char kUsage[] =
    "usage: resctrlfs_bench [--resctrl DIR --resctrl-pid PID --resctrl-control SOCK]\n"
    "         [--floor DIR --floor-pid PID --floor-control SOCK] [--tmpfs DIR]\n"
    "         [--proc-file F] [--sysfs-file F] [--sysfs-dir D] [--schemata-line TEXT]\n"
    "         [--quick] [--runs N] [--cpu N] [--placements pinned,unpinned]\n"
    "         [--threads 1,2] [--scale 64,256,1024] [--tasks 10000,100000] [--out FILE]\n";

bool parse(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto val = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--resctrl")
      o->resctrl.root = val();
    else if (a == "--resctrl-pid")
      o->resctrl.pid = atoi(val().c_str());
    else if (a == "--resctrl-control")
      o->resctrl.control = val();
    else if (a == "--floor")
      o->floor.root = val();
    else if (a == "--floor-pid")
      o->floor.pid = atoi(val().c_str());
    else if (a == "--floor-control")
      o->floor.control = val();
    else if (a == "--tmpfs")
      o->tmpfs.root = val();
    else if (a == "--proc-file")
      o->proc.read_file = val();
    else if (a == "--sysfs-file")
      o->sysfs.read_file = val();
    else if (a == "--sysfs-dir")
      o->sysfs.list_dir = val();
    else if (a == "--schemata-line")
      o->paths.schemata_line = val() + "\n";
    else if (a == "--quick")
      o->quick = true;
    else if (a == "--runs")
      o->runs = atoi(val().c_str());
    else if (a == "--cpu")
      o->cpu = atoi(val().c_str());
    else if (a == "--placements")
      o->placements = parse_words(val());
    else if (a == "--threads")
      o->threads = parse_ints(val());
    else if (a == "--scale")
      o->scale = parse_ints(val());
    else if (a == "--tasks")
      o->tasks = parse_ints(val());
    else if (a == "--out")
      o->out = val();
    else {
      fputs(kUsage, stderr);
      return false;
    }
  }
  return true;
}

// Requests a daemon received per call of `op`, from its control socket.
std::map<std::string, double> requests_per_op(const Target& t, const OpFn& op, int calls) {
  std::map<std::string, double> out;
  for (int i = 0; i < 20; ++i) op(0);  // warm the kernel's caches first
  reset_request_counts(t.control);
  for (int i = 0; i < calls; ++i) op(0);
  // RELEASE is asynchronous: give the last one time to arrive.
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  auto counts = request_counts(t.control);
  if (!counts) return out;
  for (auto& [name, n] : *counts) {
    if (n > 0) out[name] = static_cast<double>(n) / calls;
  }
  return out;
}

// Every group resctrlfs creates takes an RMID, and a removed group's RMID
// stays in limbo until the next limbo check (once a second), as under the
// kernel: a tight mkdir/rmdir loop runs out of RMIDs (EBUSY) after about
// num_rmids iterations. The benchmark therefore caps the iterations of
// group-making operations and lets limbo drain before each of them.
class RmidPacer {
 public:
  void before(const Target& t) {
    if (t.name != "resctrlfs") return;
    double wait = last_use_ + kDrainUs - now_us();
    if (wait > 0)
      std::this_thread::sleep_for(std::chrono::microseconds(static_cast<int64_t>(wait)));
  }
  void after(const Target& t) {
    if (t.name == "resctrlfs") last_use_ = now_us();
  }
  static bool uses_rmids(Op op) { return op == Op::kMkrmCtrl || op == Op::kMkrmMon; }

 private:
  static constexpr double kDrainUs = 2.2e6;  // two limbo checks
  double last_use_ = -1e12;
};

int run(const Options& o) {
  // Held-fd sweeps keep N x domains x 3 fds open.
  rlimit rl;
  getrlimit(RLIMIT_NOFILE, &rl);
  rl.rlim_cur = rl.rlim_max;
  setrlimit(RLIMIT_NOFILE, &rl);

  Report rep;
  RmidPacer pacer;
  std::vector<const Target*> targets;
  for (const Target* t : {&o.resctrl, &o.floor, &o.sysfs, &o.proc, &o.tmpfs}) {
    if (t->resctrl_tree() || !t->read_file.empty()) targets.push_back(t);
  }
  const Target* fuse_ref = o.resctrl.resctrl_tree() ? &o.resctrl : &o.floor;
  for (const Target* t : targets) {
    std::string err;
    if (!prepare_tree(*t, o.paths, fuse_ref->root + "/" + o.paths.group, &err)) {
      fprintf(stderr, "resctrlfs_bench: %s: %s\n", t->name.c_str(), err.c_str());
      rep.notes.push_back(t->name + ": " + err);
    }
  }
  rep.targets = targets;

  const int fuse_count = o.quick ? 1000 : 4000;
  const int kernel_count = o.quick ? 5000 : 20000;
  const int cat_rounds = o.quick ? 60 : 200;
  const int runs = o.quick ? 1 : o.runs;
  for (const std::string& placement : o.placements) {
    bool pinned = placement == "pinned";
    std::optional<int> cpu;
    if (pinned) cpu = o.cpu;
    for (const Target* t : targets) {
      if (t->fuse()) pin_process(t->pid, cpu);
    }
    fprintf(stderr, "== placement %s: daemons and client %s\n", placement.c_str(),
            pinned ? ("pinned to CPU " + std::to_string(o.cpu)).c_str() : "not pinned");
    // The daemon's CPU with no requests at all: what the rest of the machine
    // (forks and exits the kernel reports to it) and timers cost it.
    for (const Target* t : targets) {
      if (!t->fuse()) continue;
      uint64_t c0 = process_cpu_ns(t->pid);
      double w0 = now_us();
      std::this_thread::sleep_for(std::chrono::seconds(1));
      rep.idle_cpu_ns_per_s[placement][t->name] =
          (process_cpu_ns(t->pid) - c0) / ((now_us() - w0) / 1e6);
    }
    for (int th : o.threads) {
      for (int r = 0; r < runs; ++r) {
        for (const OpInfo& info : all_ops()) {
          for (const Target* t : targets) {
            auto op = make_op(info.op, *t, o.paths);
            if (!op) continue;
            int count = t->fuse() ? fuse_count : kernel_count;
            // Unpinned FUSE round trips can cost ~80 us each on an idle VM.
            if (t->fuse() && !pinned) count /= 2;
            // At most ~1300 groups per measurement (2 threads): fits the RMIDs.
            bool groups = RmidPacer::uses_rmids(info.op);
            if (groups && t->fuse()) count = std::min(count, 600);
            if (groups) pacer.before(*t);
            uint64_t cpu0 = t->fuse() ? process_cpu_ns(t->pid) : 0;
            double wall0 = now_us();
            if (t->fuse()) reset_request_counts(t->control);
            int warmup = std::min(200, count / 10);
            Sample s = time_op(*op, th, warmup, count, cpu);
            if (t->fuse()) {
              std::this_thread::sleep_for(std::chrono::milliseconds(20));
              uint64_t cpu_ns = process_cpu_ns(t->pid) - cpu0;
              uint64_t reqs = 0;
              if (auto c = request_counts(t->control)) {
                for (auto& [k, n] : *c) reqs += n;
              }
              // The counters were reset before the warm-up: count its calls too.
              uint64_t calls = s.error.empty() ? static_cast<uint64_t>(warmup) * th + s.ops : 0;
              rep.add_daemon_cpu(placement, th, info.key, t->name, cpu_ns, reqs, calls,
                                 now_us() - wall0);
            }
            rep.add(placement, th, info.key, t->name, s);
            if (groups) pacer.after(*t);
          }
        }
        fprintf(stderr, "   %d client thread(s), run %d/%d done\n", th, r + 1, runs);
      }
    }
    for (int r = 0; r < runs; ++r) {
      auto cats = time_cat_interleaved(targets, o.paths, cat_rounds, cpu);
      for (size_t i = 0; i < targets.size(); ++i) {
        rep.add(placement, 1, "cat_schemata", targets[i]->name, cats[i]);
      }
    }
    fprintf(stderr, "   cat done\n");
  }

  // Everything below runs pinned: it is the pure software cost.
  std::optional<int> cpu = o.cpu;
  for (const Target* t : targets) {
    if (t->fuse()) pin_process(t->pid, cpu);
  }
  pin_self(cpu);

  for (const Target* t : targets) {
    if (!t->fuse() || t->control.empty()) continue;
    for (const OpInfo& info : all_ops()) {
      auto op = make_op(info.op, *t, o.paths);
      if (!op) continue;
      if (RmidPacer::uses_rmids(info.op)) pacer.before(*t);
      rep.requests[t->name][info.key] = requests_per_op(*t, *op, 200);
      if (RmidPacer::uses_rmids(info.op)) pacer.after(*t);
    }
  }

  std::vector<std::string> domains = list_dir(fuse_ref->root + "/mon_data");
  std::sort(domains.begin(), domains.end());
  for (int n : o.scale) {
    for (const Target* t : targets) {
      if (!t->resctrl_tree()) continue;
      pacer.before(*t);
      ScaleResult s = run_scale(*t, n, domains, o.quick ? 3 : 10, o.quick ? 1 : 3);
      pacer.after(*t);
      if (!s.error.empty())
        fprintf(stderr, "   scale %s N=%d: %s\n", t->name.c_str(), n, s.error.c_str());
      rep.scale[t->name].push_back(s);
    }
    fprintf(stderr, "   scale N=%d done\n", n);
  }

  // The herd inherits the group of the thread that forks it (as under the
  // kernel): put this thread back into the default group first, so that the
  // moves below really move every thread.
  for (const Target* t : targets) {
    if (!t->fuse() || !t->resctrl_tree()) continue;
    std::string tid = std::to_string(gettid()) + "\n";
    if (FILE* f = fopen((t->root + "/tasks").c_str(), "w")) {
      fputs(tid.c_str(), f);
      fclose(f);
    }
  }
  std::string reason;
  int cap = max_herd_size(&reason);
  rep.tasks_limit = reason;
  for (int want : o.tasks) {
    int n = want;
    if (n > cap) {
      n = cap;
      std::string msg = "TASKS: " + std::to_string(want) + " threads are impossible here (" +
                        reason + "); measured " + std::to_string(n) + " instead";
      fprintf(stderr, "\n!!! %s\n\n", msg.c_str());
      rep.notes.push_back(msg);
    }
    ThreadHerd herd(n);
    if (!herd.error().empty()) {
      rep.notes.push_back("TASKS: " + herd.error());
      fprintf(stderr, "!!! TASKS: %s\n", herd.error().c_str());
    }
    for (const Target* t : targets) {
      if (!t->resctrl_tree()) continue;
      TasksResult tr = run_tasks(*t, o.paths.group, herd);
      tr.requested = want;
      if (!tr.error.empty())
        fprintf(stderr, "   tasks %s: %s\n", t->name.c_str(), tr.error.c_str());
      rep.tasks[t->name].push_back(tr);
    }
    fprintf(stderr, "   tasks %d done\n", n);
  }

  for (const Target* t : targets) cleanup_tree(*t, o.paths);

  rep.placements = o.placements;
  rep.threads = o.threads;
  rep.runs = runs;
  rep.quick = o.quick;
  rep.cpu = o.cpu;
  print_report(rep, stdout);
  if (!write_json(rep, o.out)) {
    fprintf(stderr, "resctrlfs_bench: cannot write %s\n", o.out.c_str());
    return 1;
  }
  fprintf(stderr, "results written to %s\n", o.out.c_str());
  return 0;
}

}  // namespace
}  // namespace resctrlfs::bench

int main(int argc, char** argv) {
  resctrlfs::bench::Options o;
  if (!resctrlfs::bench::parse(argc, argv, &o)) return 2;
  return resctrlfs::bench::run(o);
}
