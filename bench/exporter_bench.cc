// exporter_bench: what a resctrlfs-exporter scrape costs against the raw
// pread sweep of the same files, on a mounted resctrlfs. Run by bench/run.sh
// after resctrlfs_bench; prints a table and writes JSON.
//
// It makes N MON groups (default 1000) under one CTRL_MON group, so a scrape
// reads (N + 2) groups x 2 domains x 3 events plus schemata, modes and info
// files. Then, pinned to one CPU like the daemon, in alternating rounds:
//   - scrape: Collector::metrics() in process (readdir rescans, one pread per
//     held file, counter folding, the text exposition), which is what an
//     HTTP GET /metrics runs, without the loopback socket;
//   - sweep: one pread at offset 0 on each file the exporter holds, through
//     descriptors of its own, and nothing else (the floor of any reader).
// For each: wall time per pass, the daemon's CPU per pass (schedstat of all
// its threads) and the FUSE requests per pass (control socket counters).
// The verdict is the ratio scrape / sweep; medians of the rounds.
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "bench/bench_util.h"
#include "exporter/collector.h"
#include "exporter/tree.h"

namespace {

using namespace resctrlfs;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

double thread_cpu_us() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e6 + static_cast<double>(ts.tv_nsec) / 1e3;
}

struct Pass {
  std::vector<double> wall_us, daemon_cpu_us, self_cpu_us, requests;
};

uint64_t total_requests(const std::string& control) {
  auto c = bench::request_counts(control);
  uint64_t n = 0;
  if (c) {
    for (auto& [op, v] : *c) n += v;
  }
  return n;
}

}  // namespace

int main(int argc, char** argv) {
  std::string root, control, out;
  int pid = 0, groups = 1000, rounds = 5, passes = 20, cpu = 0;
  CLI::App app{"exporter_bench: resctrlfs-exporter scrape against the raw pread sweep"};
  app.add_option("--resctrl", root, "resctrlfs mount point")->required();
  app.add_option("--resctrl-pid", pid, "resctrlfsd pid")->required();
  app.add_option("--resctrl-control", control, "resctrlfsd control socket")->required();
  app.add_option("--groups", groups, "MON groups to make")->capture_default_str();
  app.add_option("--rounds", rounds, "rounds (medians over them)")->capture_default_str();
  app.add_option("--passes", passes, "scrapes and sweeps per round")->capture_default_str();
  app.add_option("--cpu", cpu, "CPU for the daemon and this process")->capture_default_str();
  app.add_option("--out", out, "JSON output file");
  CLI11_PARSE(app, argc, argv);

  const std::string parent = root + "/xbench";
  if (::mkdir(parent.c_str(), 0755) != 0 && errno != EEXIST) {
    std::fprintf(stderr, "exporter_bench: mkdir %s: %s\n", parent.c_str(), std::strerror(errno));
    return 1;
  }
  int made = 0;
  for (int i = 0; i < groups; ++i) {
    char name[64];
    std::snprintf(name, sizeof name, "/mon_groups/x%04d", i);
    const std::string p = parent + name;
    int tries = 0;
    // RMIDs freed by the benchmark before may still be in limbo for a tick.
    while (::mkdir(p.c_str(), 0755) != 0 && errno != EEXIST) {
      if ((errno != ENOSPC && errno != EBUSY) || ++tries > 5) {
        std::fprintf(stderr, "exporter_bench: mkdir %s: %s\n", p.c_str(), std::strerror(errno));
        return 1;
      }
      ::sleep(1);
    }
    ++made;
  }

  bench::pin_process(pid, cpu);
  bench::pin_self(cpu);
  exporter::TreeReader reader(root);
  exporter::Collector collector(reader);
  std::string text = collector.metrics();  // opens everything
  const std::vector<std::string> files = reader.held_files();
  std::vector<int> fds;
  for (const std::string& f : files) {
    int fd = ::open((root + "/" + f).c_str(), O_RDONLY | O_CLOEXEC);
    if (fd >= 0) fds.push_back(fd);
  }
  size_t samples = 0;
  for (char c : text) samples += c == '\n';
  std::vector<char> buf(4096);

  Pass scrape, sweep;
  auto measure = [&](Pass& p, auto&& body) {
    const uint64_t r0 = total_requests(control);
    const uint64_t d0 = bench::process_cpu_ns(pid);
    const double s0 = thread_cpu_us();
    const double t0 = bench::now_us();
    for (int i = 0; i < passes; ++i) body();
    const double t1 = bench::now_us();
    const double s1 = thread_cpu_us();
    const uint64_t d1 = bench::process_cpu_ns(pid);
    const uint64_t r1 = total_requests(control);
    p.wall_us.push_back((t1 - t0) / passes);
    p.self_cpu_us.push_back((s1 - s0) / passes);
    p.daemon_cpu_us.push_back(static_cast<double>(d1 - d0) / 1e3 / passes);
    // The stats request itself is counted by the daemon neither before nor after.
    p.requests.push_back(static_cast<double>(r1 - r0) / passes);
  };
  for (int r = 0; r < rounds; ++r) {
    measure(scrape, [&] { text = collector.metrics(); });
    measure(sweep, [&] {
      for (int fd : fds) (void)!::pread(fd, buf.data(), buf.size(), 0);
    });
  }
  for (int fd : fds) ::close(fd);
  bench::pin_process(pid, std::nullopt);

  const double ws = median(scrape.wall_us), wr = median(sweep.wall_us);
  const double ds = median(scrape.daemon_cpu_us), dr = median(sweep.daemon_cpu_us);
  std::printf(
      "\nresctrlfs-exporter scrape vs raw pread sweep (pinned to CPU %d, %d MON groups, "
      "%zu files, %zu exposition lines; medians of %d rounds x %d passes)\n",
      cpu, made, files.size(), samples, rounds, passes);
  std::printf("  %-28s %12s %12s %8s\n", "", "scrape", "sweep", "ratio");
  std::printf("  %-28s %10.0f us %10.0f us %7.2fx\n", "wall time per pass", ws, wr, ws / wr);
  std::printf("  %-28s %10.0f us %10.0f us %7.2fx\n", "daemon CPU per pass", ds, dr, ds / dr);
  const double cs = median(scrape.self_cpu_us), cr = median(sweep.self_cpu_us);
  std::printf("  %-28s %10.0f us %10.0f us %7.2fx\n", "reader's own CPU per pass", cs, cr, cs / cr);
  std::printf("  %-28s %12.0f %12.0f %7.2fx\n", "FUSE requests per pass", median(scrape.requests),
              median(sweep.requests), median(scrape.requests) / median(sweep.requests));

  if (!out.empty()) {
    nlohmann::json j = {{"mon_groups", made},
                        {"files", files.size()},
                        {"exposition_lines", samples},
                        {"scrape",
                         {{"wall_us", ws},
                          {"daemon_cpu_us", ds},
                          {"reader_cpu_us", cs},
                          {"requests", median(scrape.requests)}}},
                        {"sweep",
                         {{"wall_us", wr},
                          {"daemon_cpu_us", dr},
                          {"reader_cpu_us", cr},
                          {"requests", median(sweep.requests)}}},
                        {"ratio_wall", ws / wr},
                        {"ratio_daemon_cpu", ds / dr},
                        {"ratio_reader_cpu", cs / cr}};
    std::ofstream(out) << j.dump(2) << "\n";
  }
  for (int i = 0; i < groups; ++i) {
    char name[64];
    std::snprintf(name, sizeof name, "/mon_groups/x%04d", i);
    ::rmdir((parent + name).c_str());
  }
  ::rmdir(parent.c_str());
  return 0;
}
