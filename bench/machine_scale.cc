// resctrlfs_machine_scale: the cost of each command against the size of the
// machine. For every generated platform (8, 64, 512 CPUs by default: two
// packages, 4096 RMIDs, 15 CLOSIDs) and every group count (200, 2000, 4000
// MON groups by default) it mounts a fresh resctrlfsd, lays the groups out,
// and times single commands: mkdir and rmdir of a MON group, `echo >
// schemata`, a cpus_list write of a MON and of a CTRL_MON group, a held-fd
// counter sweep (per counter), and with a helper process of many threads a
// tasks move (per id) and a tasks listing (per id, next to reading the same
// ids from a tmpfs file). Each figure is the median of single timed calls.
// The verdict is each command's growth from the smallest configuration to
// the largest: at most 1.5x (per item for the sweep and the listing).
//
// The listing against tmpfs is a section of its own (--slope-ids): the same
// ids listed at two sizes (10k and 100k by default), the cost per id taken
// as the slope between them (so the fixed cost of open, the first READ and
// the EOF READ cancels out), from resctrlfsd, from a tmpfs file and from
// floor_fs (the least any FUSE file costs: the same text served verbatim,
// with resctrlfsd's libfuse settings). Every side is read the same way: one
// read(2) per kListBuf bytes, as cat does; each FUSE read(2) is one READ
// round trip (direct_io), capped at the kernel's max_read. The listing right
// after a move (the daemon renders the text) is timed apart from the
// listings that follow it (served from the rendered text). Target: the
// served slope within 2x of tmpfs's.
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/bench_scale.h"
#include "bench/bench_util.h"

namespace resctrlfs::bench {
namespace {

using json = nlohmann::json;

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// A two-package Intel profile with `cpus` CPUs, one L3 per package.
json make_profile(int cpus) {
  json c = json::array();
  const int per = std::max(1, cpus / 2);
  for (int i = 0; i < cpus; ++i)
    c.push_back({{"cpu", i}, {"package", i / per}, {"l2", i}, {"l3", i / per}});
  return {{"vendor", "GenuineIntel"},
          {"family", 6},
          {"model", 143},
          {"stepping", 8},
          {"cpus", c},
          // Large enough that freed RMIDs leave limbo (threshold = L3 / RMIDs).
          {"l3_size_bytes", 1LL << 30},
          {"l2_size_bytes", 2097152},
          {"l3_cat",
           {{"cbm_len", 15},
            {"num_closid", 15},
            {"shareable_bits", 0},
            {"sparse", false},
            {"cdp", true}}},
          {"mba", {{"num_closid", 15}, {"max_delay", 90}, {"linear", true}, {"per_thread", false}}},
          {"l3_mon",
           {{"num_rmids", 4096},
            {"scale", 65536},
            {"counter_width", 24},
            {"events", {"llc_occupancy", "mbm_total_bytes", "mbm_local_bytes"}}}}};
}

bool write_file(const std::string& path, const std::string& data) {
  int fd = open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = write(fd, data.data(), data.size()) == static_cast<ssize_t>(data.size());
  close(fd);
  return ok;
}

// Times `op` `n` times, one call at a time; the median in microseconds.
template <typename F>
double time_each(int n, F op, std::string* err) {
  std::vector<double> v;
  for (int i = 0; i < n; ++i) {
    double a = now_us();
    if (!op(i) && err->empty()) *err = "call " + std::to_string(i) + ": " + strerror(errno);
    v.push_back(now_us() - a);
  }
  return median(v);
}

// Reads a file to EOF with one kListBuf-byte buffer: one read(2) per
// kListBuf bytes, as cat does (128 KiB), the same way for every side.
constexpr size_t kListBuf = 1 << 20;
bool read_listing(const std::string& path, std::string* out) {
  static std::vector<char> buf(kListBuf);
  out->clear();
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  ssize_t r;
  while ((r = read(fd, buf.data(), buf.size())) > 0) out->append(buf.data(), r);
  close(fd);
  return r == 0;
}

// Median microseconds of `n` listings of `path`; *text gets the last one.
double time_listing(const std::string& path, int n, std::string* text, std::string* err) {
  std::vector<double> v;
  for (int i = 0; i < n; ++i) {
    double a = now_us();
    bool ok = read_listing(path, text);
    v.push_back(now_us() - a);
    if (!ok && err->empty()) *err = "reading " + path + ": " + strerror(errno);
  }
  return median(v);
}

struct Daemon {
  pid_t pid = 0;
  std::string mnt;
};

bool start_daemon(const std::string& bin, const std::string& profile, const std::string& mnt,
                  const std::string& log, const std::string& state_dir, Daemon* d) {
  mkdir(mnt.c_str(), 0755);
  if (!state_dir.empty()) {
    // A fresh journal per configuration.
    std::string cmd = "rm -rf '" + state_dir + "' && mkdir -p '" + state_dir + "'";
    if (system(cmd.c_str()) != 0) return false;
  }
  pid_t pid = fork();
  if (pid == 0) {
    int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd >= 0) dup2(fd, 2);
    if (state_dir.empty()) {
      execl(bin.c_str(), bin.c_str(), "-f", "--platform", profile.c_str(), "--boot-state-dir", "",
            mnt.c_str(), static_cast<char*>(nullptr));
    } else {
      execl(bin.c_str(), bin.c_str(), "-f", "--platform", profile.c_str(), "--boot-state-dir", "",
            "--state-dir", state_dir.c_str(), mnt.c_str(), static_cast<char*>(nullptr));
    }
    _exit(127);
  }
  if (pid < 0) return false;
  d->pid = pid;
  d->mnt = mnt;
  struct stat st;
  for (int i = 0; i < 600; ++i) {
    if (stat((mnt + "/info").c_str(), &st) == 0) return true;
    if (waitpid(pid, nullptr, WNOHANG) == pid) return false;
    usleep(50000);
  }
  return false;
}

void stop_daemon(Daemon& d) {
  if (d.pid <= 0) return;
  std::string cmd = "fusermount3 -u '" + d.mnt + "' 2>/dev/null";
  if (system(cmd.c_str()) != 0) kill(d.pid, SIGTERM);
  for (int i = 0; i < 200; ++i) {
    if (waitpid(d.pid, nullptr, WNOHANG) == d.pid) {
      d.pid = 0;
      return;
    }
    usleep(50000);
  }
  kill(d.pid, SIGKILL);
  waitpid(d.pid, nullptr, 0);
  d.pid = 0;
}

struct Figures {
  int cpus = 0, groups = 0, threads = 0;
  std::map<std::string, double> us;  // per operation or per item
  std::string error;
};

const char* const kOps[] = {"mkdir",
                            "rmdir",
                            "schemata_write",
                            "cpus_write_mon",
                            "cpus_write_ctrl",
                            "sweep_per_counter",
                            "sweep_cpu_per_counter",
                            "tasks_move_per_id",
                            "tasks_list_per_id",
                            "tasks_list_after_move_per_id"};

Figures measure(const Daemon& d, int cpus, int groups, const ThreadHerd* herd, int iters) {
  Figures f;
  f.cpus = cpus;
  f.groups = groups;
  std::string& err = f.error;
  const std::string root = d.mnt;
  const int half = cpus / 2;
  const std::string big = root + "/big";
  const std::string big_cpus = std::to_string(half) + "-" + std::to_string(cpus - 1);
  if (mkdir(big.c_str(), 0755) != 0 || !write_file(big + "/cpus_list", big_cpus + "\n")) {
    err = "setting up the CTRL_MON group: " + std::string(strerror(errno));
    return f;
  }
  // Background MON groups, alternately under the default group and under
  // big; the first ones monitor one CPU each, so that CPUs have owners.
  const int timed = std::min(64, iters);
  const int background = groups - timed;
  std::vector<std::string> bg;
  for (int i = 0; i < background; ++i) {
    const bool under_big = i % 2 == 1;
    std::string p = (under_big ? big : root) + "/mon_groups/bg" + std::to_string(i);
    if (mkdir(p.c_str(), 0755) != 0) {
      err = "mkdir " + p + ": " + strerror(errno);
      return f;
    }
    const int cpu = (under_big ? half : 0) + i / 2;
    if (i / 2 < half - 1) write_file(p + "/cpus_list", std::to_string(cpu) + "\n");
    bg.push_back(p);
  }

  std::vector<std::string> tnames;
  for (int i = 0; i < timed; ++i) tnames.push_back(root + "/mon_groups/t" + std::to_string(i));
  f.us["mkdir"] = time_each(
      timed, [&](int i) { return mkdir(tnames[i].c_str(), 0755) == 0; }, &err);
  f.us["rmdir"] = time_each(
      timed, [&](int i) { return rmdir(tnames[i].c_str()) == 0; }, &err);

  const std::string sch[2] = {"L3:0=7f;1=7f\n", "L3:0=3f;1=1ff\n"};
  f.us["schemata_write"] = time_each(
      iters, [&](int i) { return write_file(big + "/schemata", sch[i % 2]); }, &err);

  // A MON group of big moves one CPU to and fro (taking it from a sibling).
  const std::string mon = bg.size() > 1 ? bg[1] : big + "/mon_groups/bg1";
  const std::string mc[2] = {std::to_string(cpus - 1) + "\n", std::to_string(half) + "\n"};
  f.us["cpus_write_mon"] = time_each(
      iters, [&](int i) { return write_file(mon + "/cpus_list", mc[i % 2]); }, &err);
  // big gives its last CPU to the default group and takes it back.
  const std::string cc[2] = {std::to_string(half) + "-" + std::to_string(cpus - 2) + "\n",
                             big_cpus + "\n"};
  f.us["cpus_write_ctrl"] = time_each(
      iters, [&](int i) { return write_file(big + "/cpus_list", cc[i % 2]); }, &err);

  // Held fds: one counter per background group.
  std::vector<int> fds;
  for (const std::string& g : bg) {
    int fd = open((g + "/mon_data/mon_L3_00/mbm_total_bytes").c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      err = "open a counter of " + g + ": " + strerror(errno);
      break;
    }
    fds.push_back(fd);
  }
  if (!fds.empty()) {
    // At least ~20k reads in all and 5 sweeps, the first one untimed: a
    // sweep of a few hundred counters is over in a few ms, within one
    // scheduling hiccup of the other work on the machine.
    std::vector<double> sw;
    char buf[64];
    const int sweeps = std::max(6, static_cast<int>(20000 / fds.size()) + 1);
    // Also the CPU time the daemon and this process spent per counter
    // (schedstat, ns): the work done, which load elsewhere on the machine
    // inflates far less than the wall-clock time.
    uint64_t cpu0 = 0;
    for (int s = 0; s < sweeps; ++s) {
      if (s == 1) cpu0 = process_cpu_ns(d.pid) + process_cpu_ns(getpid());
      double a = now_us();
      for (int fd : fds)
        if (pread(fd, buf, sizeof(buf), 0) < 0 && err.empty()) err = "pread failed";
      if (s > 0) sw.push_back((now_us() - a) / static_cast<double>(fds.size()));
    }
    const uint64_t cpu1 = process_cpu_ns(d.pid) + process_cpu_ns(getpid());
    f.us["sweep_per_counter"] = median(sw);
    f.us["sweep_cpu_per_counter"] =
        static_cast<double>(cpu1 - cpu0) / 1e3 / static_cast<double>(fds.size() * (sweeps - 1));
  }
  for (int fd : fds) close(fd);

  if (herd != nullptr && !herd->tids().empty() && !bg.empty()) {
    const std::vector<int>& tids = herd->tids();
    f.threads = static_cast<int>(tids.size());
    // Every id into a MON group of the default group, one write(2) per id.
    const std::string tasks = bg[0] + "/tasks";
    char num[32];
    // A first untimed round trip: the helper's threads and the daemon's
    // tables warm, as in every later configuration.
    auto move_all = [&](const std::string& path) {
      int wfd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
      for (int tid : tids) {
        int n = snprintf(num, sizeof(num), "%d\n", tid);
        if (wfd < 0 || write(wfd, num, n) != n) break;
      }
      if (wfd >= 0) close(wfd);
    };
    move_all(tasks);
    (void)read_all(tasks);
    move_all(root + "/tasks");
    int fd = open(tasks.c_str(), O_WRONLY | O_CLOEXEC);
    double a = now_us();
    for (int tid : tids) {
      int n = snprintf(num, sizeof(num), "%d\n", tid);
      if (fd < 0 || write(fd, num, n) != n) {
        if (err.empty()) err = "moving thread " + std::to_string(tid) + ": " + strerror(errno);
        break;
      }
    }
    f.us["tasks_move_per_id"] = (now_us() - a) / static_cast<double>(tids.size());
    if (fd >= 0) close(fd);
    std::string listing;
    // The first listing after the move renders; the later ones are served.
    const double render = time_listing(tasks, 1, &listing, &err);
    const double served = time_listing(tasks, 7, &listing, &err);
    const size_t ids = static_cast<size_t>(std::count(listing.begin(), listing.end(), '\n'));
    if (ids != tids.size() && err.empty())
      err = "the listing shows " + std::to_string(ids) + " of " + std::to_string(tids.size());
    const double n_ids = static_cast<double>(std::max<size_t>(ids, 1));
    f.us["tasks_list_per_id"] = served / n_ids;
    f.us["tasks_list_after_move_per_id"] = render / n_ids;
    // Back to the default group for the next configuration.
    move_all(root + "/tasks");
  }
  return f;
}

// One write(2) per id into `path`.
bool move_ids(const std::string& path, const std::vector<int>& tids) {
  int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char num[32];
  bool ok = true;
  for (int tid : tids) {
    int n = snprintf(num, sizeof(num), "%d\n", tid);
    if (write(fd, num, n) != n) {
      ok = false;
      break;
    }
  }
  close(fd);
  return ok;
}

bool start_floor(const std::string& bin, const std::string& mnt, const std::string& log,
                 Daemon* d) {
  mkdir(mnt.c_str(), 0755);
  pid_t pid = fork();
  if (pid == 0) {
    int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd >= 0) dup2(fd, 2);
    execl(bin.c_str(), bin.c_str(), "-f", mnt.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  if (pid < 0) return false;
  d->pid = pid;
  d->mnt = mnt;
  struct stat st;
  for (int i = 0; i < 200; ++i) {
    if (stat((mnt + "/mon_groups").c_str(), &st) == 0) return true;
    if (waitpid(pid, nullptr, WNOHANG) == pid) return false;
    usleep(50000);
  }
  return false;
}

// One side of the slope: microseconds per listing at each size.
struct Side {
  double lo = 0, hi = 0;
  json to_json(int lo_ids, int hi_ids) const {
    return {{"us_at_lo", lo},
            {"us_at_hi", hi},
            {"per_id_at_lo_us", lo / lo_ids},
            {"slope_per_id_us", slope(lo_ids, hi_ids)}};
  }
  double slope(int lo_ids, int hi_ids) const { return (hi - lo) / (hi_ids - lo_ids); }
};

// The listing slope: resctrlfsd (rendered and served), tmpfs and floor_fs
// reading the same ids with read_listing, at lo and hi ids.
json listing_slope(const std::string& daemon, const std::string& floor, const std::string& work,
                   const std::string& profile, const ThreadHerd& lo_herd,
                   const ThreadHerd& rest_herd) {
  const int lo = static_cast<int>(lo_herd.tids().size());
  const int hi = lo + static_cast<int>(rest_herd.tids().size());
  json out = {{"lo_ids", lo}, {"hi_ids", hi}, {"read_buffer_bytes", kListBuf}, {"reps", 7}};
  std::string err;
  Side served, rendered, tmpfs, floor_side;
  std::string text_lo, text_hi;
  Daemon d;
  if (!start_daemon(daemon, profile, work + "/mnt", work + "/resctrlfsd.log", "", &d)) {
    stop_daemon(d);
    out["error"] = "resctrlfsd did not mount";
    return out;
  }
  const std::string g = d.mnt + "/mon_groups/list";
  const std::string tasks = g + "/tasks";
  if (mkdir(g.c_str(), 0755) != 0) err = "mkdir " + g + ": " + strerror(errno);
  if (err.empty() && !move_ids(tasks, lo_herd.tids())) err = "moving the first ids";
  rendered.lo = time_listing(tasks, 1, &text_lo, &err);
  served.lo = time_listing(tasks, 7, &text_lo, &err);
  if (err.empty() && !move_ids(tasks, rest_herd.tids())) err = "moving the other ids";
  rendered.hi = time_listing(tasks, 1, &text_hi, &err);
  served.hi = time_listing(tasks, 7, &text_hi, &err);
  move_ids(d.mnt + "/tasks", lo_herd.tids());
  move_ids(d.mnt + "/tasks", rest_herd.tids());
  stop_daemon(d);
  auto count = [](const std::string& s) { return std::count(s.begin(), s.end(), '\n'); };
  if (err.empty() && (count(text_lo) != lo || count(text_hi) != hi))
    err = "the listings show " + std::to_string(count(text_lo)) + " and " +
          std::to_string(count(text_hi)) + " ids";

  // The same text from a tmpfs file.
  const std::string shm = "/dev/shm/resctrlfs-scale-" + std::to_string(getpid());
  std::string back;
  for (int i = 0; i < 2; ++i) {
    std::ofstream(shm, std::ios::trunc) << (i == 0 ? text_lo : text_hi);
    (i == 0 ? tmpfs.lo : tmpfs.hi) = time_listing(shm, 7, &back, &err);
  }
  unlink(shm.c_str());

  // And from floor_fs, the text written verbatim into its tasks file.
  Daemon f;
  if (start_floor(floor, work + "/floor", work + "/floor.log", &f)) {
    const std::string ft = f.mnt + "/tasks";
    for (int i = 0; i < 2; ++i) {
      const std::string& t = i == 0 ? text_lo : text_hi;
      if (!write_file(ft, t) && err.empty()) err = "writing floor_fs tasks";
      (i == 0 ? floor_side.lo : floor_side.hi) = time_listing(ft, 7, &back, &err);
      if (back != t && err.empty()) err = "floor_fs returned other text";
    }
  } else {
    out["floor_error"] = "floor_fs did not mount (" + floor + ")";
  }
  stop_daemon(f);

  out["resctrl_served"] = served.to_json(lo, hi);
  out["resctrl_after_move"] = rendered.to_json(lo, hi);
  out["tmpfs"] = tmpfs.to_json(lo, hi);
  if (floor_side.hi > 0) out["floor_fs"] = floor_side.to_json(lo, hi);
  const double ts = tmpfs.slope(lo, hi);
  if (ts > 0) {
    const double r = served.slope(lo, hi) / ts;
    out["served_slope_vs_tmpfs"] = r;
    out["after_move_slope_vs_tmpfs"] = rendered.slope(lo, hi) / ts;
    if (floor_side.hi > 0) out["floor_slope_vs_tmpfs"] = floor_side.slope(lo, hi) / ts;
    out["target"] = 2.0;
    out["met"] = r <= 2.0;
  }
  if (!err.empty()) out["error"] = err;
  return out;
}

// Raises kernel.pid_max and vm.max_map_count for a 100k-thread helper;
// restore() puts the old values back.
struct Limits {
  std::string pid_max, map_count;
  static bool set(const char* path, const std::string& v) {
    std::ofstream o(path);
    o << v << "\n";
    return static_cast<bool>(o);
  }
  bool raise() {
    pid_max = trim(read_all("/proc/sys/kernel/pid_max"));
    map_count = trim(read_all("/proc/sys/vm/max_map_count"));
    auto at_least = [](const std::string& cur, long v) {
      return std::to_string(std::max(atol(cur.c_str()), v));
    };
    fprintf(stderr, "raising kernel.pid_max and vm.max_map_count to 262144 for this run\n");
    return set("/proc/sys/kernel/pid_max", at_least(pid_max, 262144)) &&
           set("/proc/sys/vm/max_map_count", at_least(map_count, 262144));
  }
  void restore() {
    if (!pid_max.empty()) set("/proc/sys/kernel/pid_max", pid_max);
    if (!map_count.empty()) set("/proc/sys/vm/max_map_count", map_count);
  }
};

std::vector<int> parse_list(const std::string& s) {
  std::vector<int> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) out.push_back(atoi(item.c_str()));
  return out;
}

int usage() {
  fprintf(stderr,
          "usage: resctrlfs_machine_scale --daemon PATH --work DIR [--cpus 8,64,512]\n"
          "         [--groups 200,2000,4000] [--threads N] [--iters N] [--out FILE]\n"
          "         [--state-dir DIR (journal there, emptied per configuration)]\n"
          "         [--slope-ids LO,HI (default 10000,100000; 0 skips)] [--floor PATH]\n"
          "         [--raise-limits (kernel.pid_max, vm.max_map_count for HI threads)]\n"
          "         [--repeat N (rounds over the configurations, medians reported)]\n");
  return 2;
}

}  // namespace
}  // namespace resctrlfs::bench

int main(int argc, char** argv) {
  using namespace resctrlfs::bench;
  std::string daemon, work, out, state_dir, floor;
  std::vector<int> slope_ids = {10000, 100000};
  bool raise_limits = false;
  std::vector<int> cpus_list = {8, 64, 512}, groups_list = {200, 2000, 4000};
  int threads = 10000, iters = 200, repeat = 1;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--daemon") {
      daemon = next();
    } else if (a == "--work") {
      work = next();
    } else if (a == "--state-dir") {
      state_dir = next();
    } else if (a == "--floor") {
      floor = next();
    } else if (a == "--slope-ids") {
      slope_ids = parse_list(next());
    } else if (a == "--repeat") {
      repeat = std::max(1, atoi(next().c_str()));
    } else if (a == "--raise-limits") {
      raise_limits = true;
    } else if (a == "--out") {
      out = next();
    } else if (a == "--cpus") {
      cpus_list = parse_list(next());
    } else if (a == "--groups") {
      groups_list = parse_list(next());
    } else if (a == "--threads") {
      threads = atoi(next().c_str());
    } else if (a == "--iters") {
      iters = std::max(2, atoi(next().c_str()));
    } else {
      return usage();
    }
  }
  if (daemon.empty() || work.empty() || cpus_list.empty() || groups_list.empty()) return usage();
  if (geteuid() != 0) {
    fprintf(stderr, "resctrlfs_machine_scale: needs root (FUSE mounts with allow_other)\n");
    return 77;
  }
  rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
  if (floor.empty()) {
    std::string self = argv[0];
    floor = self.substr(0, self.rfind('/') + 1) + "floor_fs";
  }
  Limits limits;
  if (raise_limits && !limits.raise()) fprintf(stderr, "could not raise the limits\n");
  std::string why;
  int allowed = max_herd_size(&why);
  if (threads > allowed) {
    fprintf(stderr, "resctrlfs_machine_scale: only %d threads allowed (%s), measuring those\n",
            allowed, why.c_str());
    threads = allowed;
  }
  std::unique_ptr<ThreadHerd> herd;
  if (threads > 0) {
    herd = std::make_unique<ThreadHerd>(threads);
    if (!herd->error().empty()) fprintf(stderr, "thread helper: %s\n", herd->error().c_str());
  }

  json slope;
  if (slope_ids.size() == 2 && slope_ids[0] > 0 && slope_ids[1] > slope_ids[0]) {
    const std::string profile = work + "/platform-slope.json";
    std::ofstream(profile) << make_profile(8).dump();
    allowed = max_herd_size(&why);
    const int need = slope_ids[1] - (herd ? static_cast<int>(herd->tids().size()) : 0);
    if (need > allowed) {
      fprintf(stderr,
              "resctrlfs_machine_scale: SKIPPING the listing slope: %d more threads needed, "
              "%d allowed (%s); run with --raise-limits\n",
              need, allowed, why.c_str());
      slope = {{"skipped", "needs " + std::to_string(need) + " more threads: " + why}};
    } else {
      // The main herd serves as the first LO ids when it has that many.
      std::unique_ptr<ThreadHerd> lo_herd;
      if (!herd || static_cast<int>(herd->tids().size()) != slope_ids[0])
        lo_herd = std::make_unique<ThreadHerd>(slope_ids[0]);
      const ThreadHerd& lo = lo_herd ? *lo_herd : *herd;
      ThreadHerd rest(slope_ids[1] - static_cast<int>(lo.tids().size()));
      slope = listing_slope(daemon, floor, work, profile, lo, rest);
      fprintf(stderr, "  listing slope %d..%d ids%s%s\n", slope_ids[0], slope_ids[1],
              slope.contains("error") ? ": " : "",
              slope.contains("error") ? slope["error"].get<std::string>().c_str() : "");
    }
  }

  // Every configuration `repeat` times, the order reversed on every other
  // round (so a burst of load elsewhere on the machine does not land on one
  // configuration); each figure is the median over the rounds.
  std::vector<std::pair<int, int>> order;
  for (int c : cpus_list) {
    const std::string profile = work + "/platform-" + std::to_string(c) + ".json";
    std::ofstream(profile) << make_profile(c).dump();
    for (int g : groups_list) order.emplace_back(c, g);
  }
  std::map<std::pair<int, int>, std::vector<Figures>> rounds;
  for (int round = 0; round < repeat; ++round) {
    std::vector<std::pair<int, int>> this_round = order;
    if (round % 2 == 1) std::reverse(this_round.begin(), this_round.end());
    for (auto [c, g] : this_round) {
      const std::string profile = work + "/platform-" + std::to_string(c) + ".json";
      Daemon d;
      if (!start_daemon(daemon, profile, work + "/mnt", work + "/resctrlfsd.log", state_dir, &d)) {
        fprintf(stderr, "resctrlfsd did not mount on %d CPUs (see %s/resctrlfsd.log)\n", c,
                work.c_str());
        stop_daemon(d);
        herd.reset();
        limits.restore();
        return 1;
      }
      Figures f = measure(d, c, g, herd.get(), iters);
      stop_daemon(d);
      fprintf(stderr, "  round %d: %4d CPUs %5d groups%s%s\n", round + 1, c, g,
              f.error.empty() ? "" : ": ", f.error.c_str());
      rounds[{c, g}].push_back(std::move(f));
    }
  }
  std::vector<Figures> all;
  for (auto cg : order) {
    const std::vector<Figures>& rs = rounds[cg];
    Figures m = rs.front();
    for (auto& [op, v] : m.us) {
      std::vector<double> per_round;
      for (const Figures& r : rs)
        if (auto it = r.us.find(op); it != r.us.end()) per_round.push_back(it->second);
      v = median(per_round);
    }
    for (const Figures& r : rs)
      if (m.error.empty()) m.error = r.error;
    all.push_back(std::move(m));
  }

  // The table: one row per operation, one column per configuration.
  printf("%-20s", "us per op/item");
  for (const Figures& f : all)
    printf(" %9s", (std::to_string(f.cpus) + "/" + std::to_string(f.groups)).c_str());
  printf("  growth  verdict\n");
  json j;
  j["configs"] = json::array();
  for (const Figures& f : all) {
    json c = {{"cpus", f.cpus}, {"groups", f.groups}, {"threads", f.threads}, {"us", f.us}};
    if (!f.error.empty()) c["error"] = f.error;
    j["configs"].push_back(c);
  }
  bool all_met = true;
  for (const char* op : kOps) {
    printf("%-20s", op);
    for (const Figures& f : all) {
      auto it = f.us.find(op);
      if (it == f.us.end()) {
        printf(" %9s", "-");
      } else {
        printf(it->second < 0.1 ? " %9.4f" : " %9.2f", it->second);
      }
    }
    const Figures& small = all.front();
    const Figures& large = all.back();
    auto s = small.us.find(op), l = large.us.find(op);
    if (s == small.us.end() || l == large.us.end() || s->second <= 0) {
      printf("\n");
      continue;
    }
    const double growth = l->second / s->second;
    const bool met = growth <= 1.5;
    all_met = all_met && met;
    printf("  %5.2fx  %s\n", growth, met ? "MET" : "MISSED");
    j["growth"][op] = {{"ratio", growth}, {"target", 1.5}, {"met", met}};
  }
  if (!slope.is_null()) {
    j["listing_slope"] = slope;
    if (slope.contains("met")) all_met = all_met && slope["met"].get<bool>();
  }
  if (slope.contains("resctrl_served")) {
    auto row = [&](const char* name, const char* key) {
      if (!slope.contains(key)) return;
      const json& s = slope[key];
      printf("%-22s %9.4f us/id at %d ids, slope %9.5f us/id\n", name,
             s["per_id_at_lo_us"].get<double>(), slope["lo_ids"].get<int>(),
             s["slope_per_id_us"].get<double>());
    };
    row("listing served", "resctrl_served");
    row("listing after a move", "resctrl_after_move");
    row("tmpfs", "tmpfs");
    row("floor_fs", "floor_fs");
    if (slope.contains("served_slope_vs_tmpfs")) {
      // The floor's slope is absent when floor_fs was not run.
      const double floor_ratio = slope.contains("floor_slope_vs_tmpfs")
                                     ? slope["floor_slope_vs_tmpfs"].get<double>()
                                     : 0.0;
      printf("listing slope vs tmpfs: %.2fx  %s (target 2x); floor_fs %.2fx\n",
             slope["served_slope_vs_tmpfs"].get<double>(),
             slope["met"].get<bool>() ? "MET" : "MISSED", floor_ratio);
    }
  }
  j["all_met"] = all_met;
  j["repeat"] = repeat;
  j["journal"] = !state_dir.empty();
  if (!out.empty()) std::ofstream(out) << j.dump(2) << "\n";
  herd.reset();
  limits.restore();
  return 0;
}
