// Implements bench_report.h. The targets checked here are ratios between
// figures of the same run (resctrlfs against the floor or sysfs), so the
// verdicts hold on any machine; absolute figures are only reported.
#include "bench/bench_report.h"

#include <sys/utsname.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "bench/bench_ops.h"

namespace resctrlfs::bench {

namespace {

double med(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Verdict {
  std::string name;
  double value = NAN;  // the measured ratio or quantity
  double limit = NAN;  // must stay below (or at) this
  std::string detail;
  bool met() const { return !std::isnan(value) && value <= limit; }
};

const std::map<std::string, std::vector<Sample>>* op_samples(const Report& r,
                                                             const std::string& placement,
                                                             int threads, const std::string& op) {
  auto p = r.samples.find(placement);
  if (p == r.samples.end()) return nullptr;
  auto t = p->second.find(threads);
  if (t == p->second.end()) return nullptr;
  auto o = t->second.find(op);
  return o == t->second.end() ? nullptr : &o->second;
}

Sample summary_of(const std::map<std::string, std::vector<Sample>>* m, const std::string& target) {
  if (!m) return Sample{.error = "n/a"};
  auto it = m->find(target);
  if (it == m->end()) return Sample{.error = "n/a"};
  return summarize(it->second);
}

double ratio(const Sample& a, const Sample& b) {
  if (!a.error.empty() || !b.error.empty() || b.p50_us <= 0) return NAN;
  return a.p50_us / b.p50_us;
}

std::vector<std::pair<std::string, std::string>> op_rows() {
  std::vector<std::pair<std::string, std::string>> rows;
  for (const OpInfo& i : all_ops()) rows.emplace_back(i.key, i.title);
  rows.emplace_back("cat_schemata", "cat schemata (spawned)");
  return rows;
}

const ScaleResult* scale_at(const Report& r, const std::string& target, int counters) {
  auto it = r.scale.find(target);
  if (it == r.scale.end()) return nullptr;
  for (const ScaleResult& s : it->second)
    if (s.counters == counters && s.error.empty()) return &s;
  return nullptr;
}

// Daemon CPU per request, pinned, one client: of one operation, or (op "")
// of every operation that sends the daemon at least one request per call.
// Operations the kernel serves from its caches (stat, warm readdir) are left
// out of the total: the daemon's idle housekeeping would be divided by ~0.
double cpu_per_request_us(const Report& r, const std::string& target, const std::string& op,
                          bool subtract_idle = true) {
  double idle_ns_per_us = 0;
  if (subtract_idle) {
    auto ip = r.idle_cpu_ns_per_s.find("pinned");
    if (ip != r.idle_cpu_ns_per_s.end() && ip->second.count(target)) {
      idle_ns_per_us = ip->second.at(target) / 1e6;
    }
  }
  auto p = r.daemon_cpu.find("pinned");
  if (p == r.daemon_cpu.end()) return NAN;
  auto t = p->second.find(1);
  if (t == p->second.end()) return NAN;
  double ns = 0;
  uint64_t reqs = 0;
  for (auto& [o, by_target] : t->second) {
    if (!op.empty() && o != op) continue;
    auto it = by_target.find(target);
    if (it == by_target.end()) continue;
    const Report::DaemonCpu& d = it->second;
    if (op.empty() && d.requests < d.calls) continue;
    ns += std::max(0.0, d.ns - idle_ns_per_us * d.wall_us);
    reqs += d.requests;
  }
  return reqs ? ns / 1e3 / reqs : NAN;
}

std::string fmt(const char* f, double x) {
  if (std::isnan(x)) return "-";
  char b[64];
  snprintf(b, sizeof(b), f, x);
  return b;
}

// Time per counter at the largest N over the smallest (1.0 = flat).
double growth(const Report& r, const std::string& target, bool sweep) {
  auto it = r.scale.find(target);
  if (it == r.scale.end()) return NAN;
  const ScaleResult *lo = nullptr, *hi = nullptr;
  for (const ScaleResult& s : it->second) {
    if (!s.error.empty() || s.counters == 0) continue;
    if (!lo || s.counters < lo->counters) lo = &s;
    if (!hi || s.counters > hi->counters) hi = &s;
  }
  if (!lo || !hi || lo == hi) return NAN;
  double a = (sweep ? lo->sweep_ms : lo->walk_ms) / lo->counters;
  double b = (sweep ? hi->sweep_ms : hi->walk_ms) / hi->counters;
  return a > 0 ? b / a : NAN;
}

std::vector<Verdict> verdicts(const Report& r) {
  std::vector<Verdict> v;
  const std::string placement = "pinned";
  for (auto& [key, title] : op_rows()) {
    if (key == "cat_schemata") continue;
    auto* m = op_samples(r, placement, 1, key);
    Sample a = summary_of(m, "resctrlfs"), f = summary_of(m, "floor");
    if (!a.error.empty() && a.error == "n/a") continue;
    Verdict d{.name = title + " p50 vs floor", .value = ratio(a, f), .limit = 1.25};
    if (!a.error.empty()) d.detail = "resctrlfs: " + a.error;
    v.push_back(d);
  }
  {
    auto* m = op_samples(r, placement, 1, "cat_schemata");
    Sample a = summary_of(m, "resctrlfs"), s = summary_of(m, "sysfs");
    v.push_back({.name = "cat schemata vs cat sysfs file", .value = ratio(a, s), .limit = 1.2});
  }
  {
    Verdict d{.name = "held-fd sweep of 1536 counters vs floor", .limit = 1.6};
    const ScaleResult* a = scale_at(r, "resctrlfs", 1536);
    const ScaleResult* f = scale_at(r, "floor", 1536);
    if (a && f && f->sweep_ms > 0)
      d.value = a->sweep_ms / f->sweep_ms;
    else
      d.detail = "no 1536-counter sweep on both (needs N=256 with 2 domains)";
    v.push_back(d);
  }
  for (bool sweep : {true, false}) {
    // Flat: resctrlfs' time per counter grows no more than the floor's.
    Verdict d{.name = std::string("time per counter flat in N, ") + (sweep ? "sweep" : "walk") +
                      " (growth vs max(1, floor's))",
              .limit = 1.25};
    double gr = growth(r, "resctrlfs", sweep), gf = growth(r, "floor", sweep);
    if (!std::isnan(gr) && !std::isnan(gf) && gf > 0) {
      // A floor that got cheaper per counter at large N was noise at small
      // N; flat (1.0) is then the reference.
      d.value = gr / std::max(gf, 1.0);
      d.detail = "resctrlfs " + fmt("%.2fx", gr) + ", floor " + fmt("%.2fx", gf);
    } else {
      d.detail = "needs scale results for two N on both";
    }
    v.push_back(d);
  }
  v.push_back({.name = "daemon CPU per request (us)",
               .value = cpu_per_request_us(r, "resctrlfs", ""),
               .limit = 3.0,
               .detail = "idle CPU subtracted; without: " +
                         fmt("%.2f", cpu_per_request_us(r, "resctrlfs", "", false)) +
                         " us; floor in the same run: " +
                         fmt("%.2f", cpu_per_request_us(r, "floor", "")) + " us"});
  return v;
}

std::string cell(const Sample& s) {
  if (s.error == "n/a") return "-";
  if (!s.error.empty()) return "ERR";
  char b[64];
  // '*': the time budget stopped the measurement early (fewer calls).
  snprintf(b, sizeof(b), "%.2f/%.1f%s", s.p50_us, s.p99_us, s.truncated ? "*" : "");
  return b;
}

std::string opcode_list(const std::map<std::string, double>& m) {
  std::string s;
  for (auto& [k, n] : m) {
    if (n < 0.005) continue;
    if (!s.empty()) s += " ";
    s += k + "=" + fmt("%.2g", n);
  }
  return s.empty() ? "0" : s;
}

nlohmann::json sample_json(const Sample& s) {
  if (!s.error.empty()) return {{"error", s.error}};
  return {{"p50_us", s.p50_us},       {"p99_us", s.p99_us}, {"mean_us", s.mean_us},
          {"ops_per_s", s.ops_per_s}, {"ops", s.ops},       {"truncated", s.truncated}};
}

}  // namespace

Sample summarize(const std::vector<Sample>& runs) {
  std::vector<double> p50, p99, mean, ops;
  Sample out;
  for (const Sample& s : runs) {
    if (!s.error.empty()) {
      out.error = s.error;
      continue;
    }
    p50.push_back(s.p50_us);
    p99.push_back(s.p99_us);
    mean.push_back(s.mean_us);
    ops.push_back(s.ops_per_s);
    out.ops += s.ops;
    out.truncated |= s.truncated;
  }
  if (p50.empty()) return out;
  out.error.clear();
  out.p50_us = med(p50);
  out.p99_us = med(p99);
  out.mean_us = med(mean);
  out.ops_per_s = med(ops);
  return out;
}

void print_report(const Report& r, FILE* out) {
  std::vector<std::string> names;
  for (const Target* t : r.targets) names.push_back(t->name);
  bool has_floor = std::count(names.begin(), names.end(), "floor");
  bool has_sysfs = std::count(names.begin(), names.end(), "sysfs");
  fprintf(out,
          "\nresctrlfs benchmark: %d run(s) per figure, medians of per-run p50/p99 (us)%s;"
          " * = stopped early by the time budget\n",
          r.runs, r.quick ? ", QUICK mode" : "");
  for (const std::string& placement : r.placements) {
    for (int th : r.threads) {
      fprintf(out, "\n## %s (daemons and client %s), %d client thread(s): p50/p99 us\n",
              placement.c_str(),
              placement == "pinned" ? ("pinned to CPU " + std::to_string(r.cpu)).c_str()
                                    : "free to run on any CPU",
              th);
      fprintf(out, "%-27s", "operation");
      for (auto& n : names) fprintf(out, " %14s", n.c_str());
      fprintf(out, " %9s %9s %11s %11s\n", "rfs/floor", "rfs/sysfs", "rfs ops/s", "floor ops/s");
      for (auto& [key, title] : op_rows()) {
        if (key == "cat_schemata" && th != 1) continue;
        auto* m = op_samples(r, placement, th, key);
        if (!m) continue;
        fprintf(out, "%-27s", title.c_str());
        for (auto& n : names) fprintf(out, " %14s", cell(summary_of(m, n)).c_str());
        Sample a = summary_of(m, "resctrlfs"), f = summary_of(m, "floor"),
               s = summary_of(m, "sysfs");
        fprintf(out, " %9s %9s %11s %11s\n", fmt("%.2fx", ratio(a, f)).c_str(),
                fmt("%.2fx", ratio(a, s)).c_str(),
                a.error.empty() ? fmt("%.0f", a.ops_per_s).c_str() : "-",
                f.error.empty() ? fmt("%.0f", f.ops_per_s).c_str() : "-");
      }
    }
  }
  (void)has_floor;
  (void)has_sysfs;

  if (!r.requests.empty()) {
    fprintf(out, "\n## FUSE requests per operation (counted by each daemon, pinned)\n");
    for (auto& [key, title] : op_rows()) {
      bool any = false;
      for (auto& [t, ops] : r.requests) any |= ops.count(key) > 0;
      if (!any) continue;
      fprintf(out, "%-27s", title.c_str());
      for (auto& [t, ops] : r.requests) {
        auto it = ops.find(key);
        fprintf(out, "  %s: %-44s", t.c_str(),
                it == ops.end() ? "-" : opcode_list(it->second).c_str());
      }
      fprintf(out, "\n");
    }
  }

  fprintf(out,
          "\n## daemon CPU per FUSE request (us, pinned, 1 client; schedstat of all threads)\n");
  for (auto& [key, title] : op_rows()) {
    double a = cpu_per_request_us(r, "resctrlfs", key), f = cpu_per_request_us(r, "floor", key);
    if (std::isnan(a) && std::isnan(f)) continue;
    fprintf(out, "%-27s resctrlfs %8s   floor %8s\n", title.c_str(), fmt("%.2f", a).c_str(),
            fmt("%.2f", f).c_str());
  }
  fprintf(out, "%-27s resctrlfs %8s   floor %8s\n", "ops with >= 1 request/call",
          fmt("%.2f", cpu_per_request_us(r, "resctrlfs", "")).c_str(),
          fmt("%.2f", cpu_per_request_us(r, "floor", "")).c_str());
  fprintf(out, "%-27s resctrlfs %8s   floor %8s\n", "  same, idle not subtracted",
          fmt("%.2f", cpu_per_request_us(r, "resctrlfs", "", false)).c_str(),
          fmt("%.2f", cpu_per_request_us(r, "floor", "", false)).c_str());
  for (auto& [placement, by_target] : r.idle_cpu_ns_per_s) {
    for (auto& [t, ns] : by_target) {
      fprintf(out, "idle daemon CPU (%s, %s): %.2f ms/s (proc connector events, timers)\n",
              t.c_str(), placement.c_str(), ns / 1e6);
    }
  }

  if (!r.scale.empty()) {
    fprintf(out, "\n## scale (pinned): N MON groups x domains x 3 events\n");
    fprintf(out, "%-10s %6s %8s %11s %11s %11s %11s %11s %11s %10s %10s\n", "target", "N",
            "counters", "sweep ms", "us/counter", "walk ms", "us/counter", "mkdir N ms",
            "rmdir N ms", "RSS KiB", "RSS base");
    for (auto& [t, rows] : r.scale) {
      for (const ScaleResult& s : rows) {
        if (!s.error.empty()) {
          fprintf(out, "%-10s %6d ERROR %s\n", t.c_str(), s.groups, s.error.c_str());
          continue;
        }
        fprintf(out, "%-10s %6d %8d %11.3f %11.3f %11.3f %11.3f %11.2f %11.2f %10llu %10llu\n",
                t.c_str(), s.groups, s.counters, s.sweep_ms,
                s.counters ? s.sweep_ms * 1e3 / s.counters : 0, s.walk_ms,
                s.counters ? s.walk_ms * 1e3 / s.counters : 0, s.create_ms, s.remove_ms,
                static_cast<unsigned long long>(s.rss_kib),
                static_cast<unsigned long long>(s.rss_base_kib));
      }
      double gs = growth(r, t, true), gw = growth(r, t, false);
      if (!std::isnan(gs)) {
        fprintf(out, "%-10s time per counter, largest N over smallest: sweep %.2fx, walk %.2fx\n",
                t.c_str(), gs, gw);
      }
    }
  }

  if (!r.tasks.empty()) {
    fprintf(out, "\n## tasks file with many threads (pinned): %s\n", r.tasks_limit.c_str());
    fprintf(out, "%-10s %9s %9s %12s %12s %12s %12s %9s\n", "target", "wanted", "threads",
            "move ms", "us/id", "list ms", "move back ms", "listed");
    for (auto& [t, rows] : r.tasks) {
      for (const TasksResult& s : rows) {
        if (!s.error.empty() && s.move_ms == 0) {
          fprintf(out, "%-10s %9d ERROR %s\n", t.c_str(), s.requested, s.error.c_str());
          continue;
        }
        fprintf(out, "%-10s %9d %9d %12.1f %12.2f %12.2f %12.1f %9zu%s%s\n", t.c_str(), s.requested,
                s.threads, s.move_ms, s.threads ? s.move_ms * 1e3 / s.threads : 0, s.list_ms,
                s.move_back_ms, s.listed, s.error.empty() ? "" : "  ", s.error.c_str());
      }
    }
  }

  fprintf(out, "\n## targets (pinned, 1 client, medians of runs; ratios from this run)\n");
  for (const Verdict& v : verdicts(r)) {
    fprintf(out, "%-7s %-44s %9s (limit %.2f)%s%s\n",
            std::isnan(v.value) ? "UNKNOWN" : (v.met() ? "MET" : "MISSED"), v.name.c_str(),
            fmt("%.2f", v.value).c_str(), v.limit, v.detail.empty() ? "" : "  ", v.detail.c_str());
  }
  for (const std::string& n : r.notes) fprintf(out, "NOTE: %s\n", n.c_str());
  fflush(out);
}

bool write_json(const Report& r, const std::string& path) {
  nlohmann::json j;
  utsname u{};
  uname(&u);
  j["machine"] = {{"kernel", u.release}, {"cpus", online_cpus()}};
  j["runs"] = r.runs;
  j["quick"] = r.quick;
  j["pinned_cpu"] = r.cpu;
  for (auto& [placement, by_threads] : r.samples) {
    for (auto& [th, by_op] : by_threads) {
      for (auto& [op, by_target] : by_op) {
        nlohmann::json& o = j["operations"][placement][std::to_string(th)][op];
        for (auto& [t, runs] : by_target) {
          o[t] = sample_json(summarize(runs));
          for (const Sample& s : runs) o[t]["runs"].push_back(sample_json(s));
        }
        Sample a = summary_of(&by_target, "resctrlfs"), f = summary_of(&by_target, "floor"),
               s = summary_of(&by_target, "sysfs"), tm = summary_of(&by_target, "tmpfs");
        o["ratios"] = {{"resctrlfs_vs_floor", ratio(a, f)},
                       {"resctrlfs_vs_sysfs", ratio(a, s)},
                       {"resctrlfs_vs_tmpfs", ratio(a, tm)},
                       {"floor_vs_sysfs", ratio(f, s)}};
      }
    }
  }
  j["requests_per_op"] = r.requests;
  for (auto& [key, title] : op_rows()) {
    for (const char* t : {"resctrlfs", "floor"}) {
      double v = cpu_per_request_us(r, t, key);
      if (!std::isnan(v)) j["daemon_cpu_us_per_request"][t][key] = v;
    }
  }
  for (const char* t : {"resctrlfs", "floor"}) {
    double v = cpu_per_request_us(r, t, "");
    if (!std::isnan(v)) j["daemon_cpu_us_per_request"][t]["all"] = v;
    v = cpu_per_request_us(r, t, "", false);
    if (!std::isnan(v)) j["daemon_cpu_us_per_request"][t]["all_idle_not_subtracted"] = v;
  }
  j["idle_daemon_cpu_ns_per_s"] = r.idle_cpu_ns_per_s;
  for (auto& [t, rows] : r.scale) {
    for (const ScaleResult& s : rows) {
      j["scale"][t].push_back({{"groups", s.groups},
                               {"counters", s.counters},
                               {"create_ms", s.create_ms},
                               {"remove_ms", s.remove_ms},
                               {"sweep_ms", s.sweep_ms},
                               {"walk_ms", s.walk_ms},
                               {"rss_kib", s.rss_kib},
                               {"rss_base_kib", s.rss_base_kib},
                               {"error", s.error}});
    }
  }
  j["tasks_limit"] = r.tasks_limit;
  for (auto& [t, rows] : r.tasks) {
    for (const TasksResult& s : rows) {
      j["tasks"][t].push_back({{"requested", s.requested},
                               {"threads", s.threads},
                               {"move_ms", s.move_ms},
                               {"list_ms", s.list_ms},
                               {"move_back_ms", s.move_back_ms},
                               {"listed", s.listed},
                               {"error", s.error}});
    }
  }
  for (const Verdict& v : verdicts(r)) {
    j["targets"].push_back({{"name", v.name},
                            {"value", v.value},
                            {"limit", v.limit},
                            {"verdict", std::isnan(v.value) ? "UNKNOWN"
                                        : v.met()           ? "MET"
                                                            : "MISSED"},
                            {"detail", v.detail}});
  }
  j["notes"] = r.notes;
  std::error_code ec;
  std::filesystem::path p(path);
  if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path(), ec);
  std::ofstream f(path);
  if (!f) return false;
  f << j.dump(2) << "\n";
  return static_cast<bool>(f);
}

}  // namespace resctrlfs::bench
