// Implements bench_scale.h.
#include "bench/bench_scale.h"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>

namespace resctrlfs::bench {

namespace {

const char* const kEvents[] = {"llc_occupancy", "mbm_total_bytes", "mbm_local_bytes"};

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

std::string group_path(const Target& t, int i) {
  char name[32];
  snprintf(name, sizeof(name), "/mon_groups/scale%04d", i);
  return t.root + name;
}

// Every counter file below one group's mon_data, as the group shows them.
std::vector<std::string> counters_of(const std::string& group) {
  std::vector<std::string> out;
  std::string md = group + "/mon_data";
  DIR* d = opendir(md.c_str());
  if (!d) return out;
  std::vector<std::string> doms;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] != '.') doms.push_back(e->d_name);
  }
  closedir(d);
  std::sort(doms.begin(), doms.end());
  for (const std::string& dom : doms) {
    std::string dp = md + "/" + dom;
    DIR* dd = opendir(dp.c_str());
    if (!dd) continue;
    while (dirent* e = readdir(dd)) {
      if (e->d_name[0] != '.') out.push_back(dp + "/" + e->d_name);
    }
    closedir(dd);
  }
  return out;
}

// The walk a monitoring agent without held fds does: list every level, then
// open/read/close each counter.
int walk(const std::string& mon_groups) {
  int files = 0;
  DIR* top = opendir(mon_groups.c_str());
  if (!top) return -1;
  char buf[4096];
  while (dirent* g = readdir(top)) {
    if (g->d_name[0] == '.') continue;
    for (const std::string& f : counters_of(mon_groups + "/" + g->d_name)) {
      int fd = open(f.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) continue;
      while (read(fd, buf, sizeof(buf)) > 0) {
      }
      close(fd);
      ++files;
    }
  }
  closedir(top);
  return files;
}

}  // namespace

ScaleResult run_scale(const Target& t, int groups, const std::vector<std::string>& domains,
                      int sweeps, int walks) {
  ScaleResult r;
  r.groups = groups;
  if (t.fuse()) r.rss_base_kib = process_rss_kib(t.pid);
  double a = now_us();
  for (int i = 0; i < groups; ++i) {
    std::string g = group_path(t, i);
    if (mkdir(g.c_str(), 0755) != 0) {
      r.error = "mkdir " + g + ": " + strerror(errno);
      for (int j = 0; j < i; ++j) rmdir(group_path(t, j).c_str());
      return r;
    }
  }
  r.create_ms = (now_us() - a) / 1e3;
  if (!t.fuse()) {
    // tmpfs: lay out the counters the way resctrl does, with a value in each.
    for (int i = 0; i < groups; ++i) {
      std::string md = group_path(t, i) + "/mon_data";
      mkdir(md.c_str(), 0755);
      for (const std::string& dom : domains) {
        std::string dp = md + "/" + dom;
        mkdir(dp.c_str(), 0755);
        for (const char* ev : kEvents) {
          int fd = open((dp + "/" + ev).c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0444);
          if (fd >= 0 && write(fd, "123456789\n", 10) < 0) r.error = "write failed";
          if (fd >= 0) close(fd);
        }
      }
    }
  }

  std::vector<int> fds;
  for (int i = 0; i < groups; ++i) {
    for (const std::string& f : counters_of(group_path(t, i))) {
      int fd = open(f.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) {
        r.error = "open " + f + ": " + strerror(errno);
        break;
      }
      fds.push_back(fd);
    }
    if (!r.error.empty()) break;
  }
  r.counters = static_cast<int>(fds.size());
  if (r.error.empty()) {
    std::vector<double> sw;
    char buf[4096];
    for (int s = 0; s < sweeps + 1; ++s) {  // the first sweep warms up
      double b = now_us();
      for (int fd : fds) {
        if (pread(fd, buf, sizeof(buf), 0) < 0) r.error = std::string("pread: ") + strerror(errno);
      }
      if (s > 0) sw.push_back((now_us() - b) / 1e3);
    }
    r.sweep_ms = median(sw);
    std::vector<double> wk;
    for (int w = 0; w < walks + 1; ++w) {
      double b = now_us();
      int n = walk(t.root + "/mon_groups");
      if (w > 0) wk.push_back((now_us() - b) / 1e3);
      if (n < r.counters) r.error = "walk found " + std::to_string(n) + " counters";
    }
    r.walk_ms = median(wk);
  }
  for (int fd : fds) close(fd);
  if (t.fuse()) r.rss_kib = process_rss_kib(t.pid);

  if (!t.fuse()) {
    for (int i = 0; i < groups; ++i) {
      std::string md = group_path(t, i) + "/mon_data";
      for (const std::string& dom : domains) {
        for (const char* ev : kEvents) unlink((md + "/" + dom + "/" + ev).c_str());
        rmdir((md + "/" + dom).c_str());
      }
      rmdir(md.c_str());
    }
  }
  a = now_us();
  for (int i = 0; i < groups; ++i) {
    std::string g = group_path(t, i);
    if (rmdir(g.c_str()) != 0 && r.error.empty()) r.error = "rmdir " + g + ": " + strerror(errno);
  }
  r.remove_ms = (now_us() - a) / 1e3;
  return r;
}

int max_herd_size(std::string* limit_reason) {
  auto read_num = [](const char* p) { return atol(trim(read_all(p)).c_str()); };
  long pid_max = read_num("/proc/sys/kernel/pid_max");
  long threads_max = read_num("/proc/sys/kernel/threads-max");
  long maps = read_num("/proc/sys/vm/max_map_count");
  // Threads running now: the 4th field of /proc/loadavg is "running/total".
  std::string la = read_all("/proc/loadavg");
  long total = 0;
  if (auto slash = la.find('/'); slash != std::string::npos) total = atol(la.c_str() + slash + 1);
  // Leave room for the other processes on the machine to keep forking.
  const long headroom = 4096;
  long by_pid = pid_max - total - headroom;
  long by_threads = threads_max - total - headroom;
  long by_maps = maps / 2 - 256;  // each thread stack is a mapping plus a guard
  long n = std::min({by_pid, by_threads, by_maps});
  char buf[256];
  snprintf(buf, sizeof(buf),
           "pid_max=%ld threads-max=%ld vm.max_map_count=%ld, %ld threads running, "
           "%ld kept free",
           pid_max, threads_max, maps, total, headroom);
  *limit_reason = buf;
  return static_cast<int>(std::max(0L, n));
}

namespace {
struct HerdShared {
  std::atomic<int> started;
  int tids[1];  // really `count`
};
HerdShared* g_herd = nullptr;

void* herd_thread(void* arg) {
  long i = reinterpret_cast<long>(arg);
  g_herd->tids[i] = static_cast<int>(syscall(SYS_gettid));
  g_herd->started.fetch_add(1);
  for (;;) pause();
  return nullptr;
}
}  // namespace

ThreadHerd::ThreadHerd(int count) {
  size_t bytes = sizeof(HerdShared) + sizeof(int) * count;
  void* mem = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) {
    error_ = "mmap failed";
    return;
  }
  auto* sh = new (mem) HerdShared{};
  int pipefd[2];
  if (pipe(pipefd) != 0) {
    error_ = "pipe failed";
    return;
  }
  pid_ = fork();
  if (pid_ == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    g_herd = sh;
    close(pipefd[0]);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, PTHREAD_STACK_MIN);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    long made = 0;
    for (; made < count; ++made) {
      pthread_t th;
      if (pthread_create(&th, &attr, herd_thread, reinterpret_cast<void*>(made)) != 0) break;
    }
    while (sh->started.load() < made) usleep(1000);
    char c = 1;
    if (write(pipefd[1], &c, 1) < 0) _exit(1);
    for (;;) pause();
  }
  close(pipefd[1]);
  char c;
  if (pid_ < 0 || read(pipefd[0], &c, 1) != 1) error_ = "helper process failed";
  close(pipefd[0]);
  int started = sh->started.load();
  tids_.assign(sh->tids, sh->tids + started);
  if (started < count) {
    error_ = "only " + std::to_string(started) + " of " + std::to_string(count) +
             " threads could be created";
  }
  munmap(mem, bytes);
}

ThreadHerd::~ThreadHerd() {
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
}

namespace {
// One write(2) per id, as a shell loop of `echo $tid > tasks` would issue.
// Gives up after `budget_s` seconds; *done says how many ids were written.
int write_ids(const std::string& path, const std::vector<int>& tids, double budget_s,
              size_t* done) {
  int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  int err = 0;
  char buf[32];
  double start = now_us();
  *done = 0;
  for (int tid : tids) {
    if (now_us() - start > budget_s * 1e6) break;
    int n = snprintf(buf, sizeof(buf), "%d\n", tid);
    if (write(fd, buf, n) != n) {
      err = errno;
      break;
    }
    ++*done;
  }
  close(fd);
  return err;
}
}  // namespace

TasksResult run_tasks(const Target& t, const std::string& group, const ThreadHerd& herd) {
  TasksResult r;
  r.threads = static_cast<int>(herd.tids().size());
  std::string gt = t.root + "/" + group + "/tasks";
  const double budget_s = 30;
  size_t moved = 0, back = 0;
  double a = now_us();
  if (int e = write_ids(gt, herd.tids(), budget_s, &moved)) {
    r.error = "write " + gt + ": " + strerror(e);
    return r;
  }
  r.move_ms = (now_us() - a) / 1e3;
  if (moved < herd.tids().size()) {
    // Too slow to finish: report the rate over the ids that were moved.
    r.error = "gave up after " + std::to_string(static_cast<int>(budget_s)) +
              " s: " + std::to_string(moved) + " of " + std::to_string(herd.tids().size()) +
              " ids moved (" + std::to_string(r.move_ms * 1e3 / std::max<size_t>(moved, 1)) +
              " us/id)";
    r.threads = static_cast<int>(moved);
  }
  a = now_us();
  int fd = open(gt.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    r.error = "open " + gt + ": " + strerror(errno);
    return r;
  }
  std::vector<char> buf(1 << 16);
  ssize_t n;
  while ((n = read(fd, buf.data(), buf.size())) > 0)
    r.listed += std::count(buf.data(), buf.data() + n, '\n');
  close(fd);
  r.list_ms = (now_us() - a) / 1e3;
  a = now_us();
  std::vector<int> movable(herd.tids().begin(), herd.tids().begin() + moved);
  if (int e = write_ids(t.root + "/tasks", movable, budget_s, &back)) {
    r.error = "write root tasks: " + std::string(strerror(e));
  }
  r.move_back_ms = (now_us() - a) / 1e3;
  // A plain file keeps what was written: start the next run empty.
  if (!t.fuse()) {
    truncate(gt.c_str(), 0);
    truncate((t.root + "/tasks").c_str(), 0);
  }
  return r;
}

}  // namespace resctrlfs::bench
