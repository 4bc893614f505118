// Implements the task model (see task_model.h): /proc readers, the
// perf_event_open source, the CPU locator and the per-tick sample.
#include "daemon/task_model.h"

#include <fcntl.h>
#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <unordered_map>

namespace resctrlfs::daemon {

namespace {

// Reads a small /proc file whole; nullopt when it cannot be opened (the
// thread or process is gone).
std::optional<std::string> read_small(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::string out;
  char buf[1024];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

uint64_t thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

class ProcSource final : public TaskProcSource {
 public:
  explicit ProcSource(std::string root) : root_(std::move(root)) {
    const long hz = ::sysconf(_SC_CLK_TCK);
    hz_ = hz > 0 ? static_cast<double>(hz) : 100.0;
    const long page = ::sysconf(_SC_PAGESIZE);
    page_ = page > 0 ? static_cast<uint64_t>(page) : 4096;
  }
  std::optional<ThreadStat> thread_stat(pid_t tid) override {
    // /proc/TID works for every thread, not only for a process's leader.
    auto t = read_small(root_ + "/" + std::to_string(tid) + "/stat");
    if (!t) return std::nullopt;
    return parse_thread_stat(*t);
  }
  std::optional<pid_t> tgid(pid_t tid) override {
    auto t = read_small(root_ + "/" + std::to_string(tid) + "/status");
    if (!t) return std::nullopt;
    const size_t at = t->find("\nTgid:");
    if (at == std::string::npos) return std::nullopt;
    const long v = std::strtol(t->c_str() + at + 6, nullptr, 10);
    if (v <= 0) return std::nullopt;
    return static_cast<pid_t>(v);
  }
  std::optional<uint64_t> anon_resident_bytes(pid_t tgid) override {
    auto t = read_small(root_ + "/" + std::to_string(tgid) + "/statm");
    if (!t) return std::nullopt;
    return parse_statm_anon_bytes(*t, page_);
  }
  double ticks_per_second() const override { return hz_; }
  uint64_t page_size() const override { return page_; }

 private:
  std::string root_;
  double hz_ = 100;
  uint64_t page_ = 4096;
};

class PerfSource final : public TaskEventSource {
 public:
  ~PerfSource() override {
    for (auto& [tid, fd] : fds_) ::close(fd);
  }
  static int open_fd(pid_t tid) {
    perf_event_attr a{};
    a.size = sizeof a;
    a.type = PERF_TYPE_HARDWARE;
    a.config = PERF_COUNT_HW_CACHE_MISSES;
    a.exclude_kernel = 1;  // allowed at perf_event_paranoid 2, the default
    a.exclude_hv = 1;
    return static_cast<int>(::syscall(SYS_perf_event_open, &a, tid, -1, -1,
                                      static_cast<unsigned long>(PERF_FLAG_FD_CLOEXEC)));
  }
  bool open(pid_t tid) override {
    if (fds_.count(tid) != 0) return true;
    const int fd = open_fd(tid);
    if (fd < 0) return false;
    fds_[tid] = fd;
    return true;
  }
  std::optional<uint64_t> read(pid_t tid) override {
    auto it = fds_.find(tid);
    if (it == fds_.end()) return std::nullopt;
    uint64_t v = 0;
    if (::read(it->second, &v, sizeof v) != static_cast<ssize_t>(sizeof v)) return std::nullopt;
    return v;
  }
  void close(pid_t tid) override {
    auto it = fds_.find(tid);
    if (it == fds_.end()) return;
    ::close(it->second);
    fds_.erase(it);
  }
  std::string name() const override { return "perf:cache-misses"; }

 private:
  std::unordered_map<pid_t, int> fds_;
};

}  // namespace

std::optional<ThreadStat> parse_thread_stat(const std::string& text) {
  // Fields after the command name's closing parenthesis, numbered as in
  // proc(5): 3 state, ..., 10 minflt, 14 utime, 15 stime, ..., 39 processor.
  const size_t close = text.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  ThreadStat s;
  const char* p = text.c_str() + close + 1;
  bool have_cpu = false;
  for (int field = 3; field <= 39; ++field) {
    while (*p == ' ') ++p;
    if (*p == '\0' || *p == '\n') return std::nullopt;
    const char* start = p;
    while (*p != ' ' && *p != '\0' && *p != '\n') ++p;
    if (field != 10 && field != 14 && field != 15 && field != 39) continue;
    errno = 0;
    char* end = nullptr;
    const unsigned long long v = std::strtoull(start, &end, 10);
    if (end != p || errno != 0) return std::nullopt;
    if (field == 10) s.minflt = static_cast<uint64_t>(v);
    if (field == 14 || field == 15) s.cpu_ticks += static_cast<uint64_t>(v);
    if (field == 39) {
      s.processor = static_cast<int>(v);
      have_cpu = true;
    }
  }
  if (!have_cpu) return std::nullopt;
  return s;
}

std::optional<uint64_t> parse_statm_anon_bytes(const std::string& text, uint64_t page_size) {
  unsigned long long size = 0, resident = 0, shared = 0;
  if (std::sscanf(text.c_str(), "%llu %llu %llu", &size, &resident, &shared) != 3)
    return std::nullopt;
  return (resident > shared ? resident - shared : 0) * page_size;
}

std::unique_ptr<TaskProcSource> make_proc_source(std::string proc_root) {
  return std::make_unique<ProcSource>(std::move(proc_root));
}

std::unique_ptr<TaskEventSource> make_perf_event_source(std::string* why) {
  const int fd = PerfSource::open_fd(0);
  if (fd < 0) {
    if (why != nullptr)
      *why = std::string("perf_event_open(cache-misses): ") + std::strerror(errno);
    return nullptr;
  }
  ::close(fd);
  return std::make_unique<PerfSource>();
}

int HostCpuLocator::platform_cpu(int host_cpu) const {
  if (host_cpu < 0 || online_.empty()) return -1;
  const unsigned c = static_cast<unsigned>(host_cpu);
  if (std::binary_search(online_.begin(), online_.end(), c)) return host_cpu;
  return static_cast<int>(online_[c % online_.size()]);
}

Result<TaskModelMode> parse_task_model_mode(const std::string& s) {
  if (s == "auto") return TaskModelMode::kAuto;
  if (s == "model") return TaskModelMode::kModel;
  if (s == "none") return TaskModelMode::kNone;
  return Error::make(EINVAL, "--task-model: '" + s + "' is not one of auto, model, none");
}

const char* task_model_mode_name(TaskModelMode m) {
  switch (m) {
    case TaskModelMode::kAuto:
      return "auto";
    case TaskModelMode::kModel:
      return "model";
    case TaskModelMode::kNone:
      return "none";
  }
  return "none";
}

TaskModel::TaskModel(hw::SimControl& sim, TaskModelMode mode, std::unique_ptr<TaskProcSource> proc,
                     std::unique_ptr<TaskEventSource> events, std::unique_ptr<CpuLocator> cpus,
                     std::string events_why)
    : sim_(sim),
      mode_(mode),
      proc_(std::move(proc)),
      events_(std::move(events)),
      cpus_(std::move(cpus)),
      events_why_(std::move(events_why)) {}

TaskModel::~TaskModel() {
  if (events_)
    for (auto& [tid, st] : threads_)
      if (st.has_events) events_->close(tid);
}

void TaskModel::forget(pid_t tid) {
  auto it = threads_.find(tid);
  if (it == threads_.end()) return;
  if (it->second.has_events && events_) events_->close(tid);
  threads_.erase(it);
}

void TaskModel::sample(std::chrono::steady_clock::time_point now) {
  if (mode_ == TaskModelMode::kNone) return;
  const uint64_t cost_start = thread_cpu_ns();
  std::vector<int> tids = sim_.task_model_threads();  // ascending
  // Threads no longer listed (exited, back in the default group, given a
  // declared workload) lose their state.
  for (auto it = threads_.begin(); it != threads_.end();) {
    if (std::binary_search(tids.begin(), tids.end(), it->first)) {
      ++it;
    } else {
      const pid_t gone = it->first;
      ++it;
      forget(gone);
    }
  }
  const double dt_s =
      last_ ? std::chrono::duration<double>(now - *last_).count() : 0.0;  // 0: baselines only
  last_ = now;

  struct Seen {
    pid_t tid;
    double cpu_s;     // CPU time since the last sample
    uint64_t faults;  // minor faults since the last sample
    int cpu;          // platform CPU
    bool events;      // `event_count` is valid
    uint64_t event_count;
  };
  std::vector<Seen> seen;
  seen.reserve(tids.size());
  std::unordered_map<pid_t, double> cpu_by_process;
  for (int tid : tids) {
    std::optional<ThreadStat> st = proc_->thread_stat(tid);
    if (!st) {
      forget(tid);  // exited; its exit event removes its tags
      continue;
    }
    auto [it, fresh] = threads_.try_emplace(tid);
    ThreadState& ts = it->second;
    if (fresh) {
      std::optional<pid_t> g = proc_->tgid(tid);
      ts.tgid = g.value_or(tid);
      ts.last = *st;
      if (events_ && mode_ == TaskModelMode::kAuto && events_->open(tid)) {
        ts.has_events = true;
        ts.last_events = events_->read(tid).value_or(0);
      }
      continue;  // the baseline
    }
    Seen s{tid, 0, 0, cpus_->thread_cpu(tid, st->processor), false, 0};
    if (st->cpu_ticks >= ts.last.cpu_ticks)
      s.cpu_s = static_cast<double>(st->cpu_ticks - ts.last.cpu_ticks) / proc_->ticks_per_second();
    if (st->minflt >= ts.last.minflt) s.faults = st->minflt - ts.last.minflt;
    ts.last = *st;
    if (ts.has_events) {
      if (std::optional<uint64_t> v = events_->read(tid)) {
        s.events = true;
        s.event_count = *v >= ts.last_events ? *v - ts.last_events : 0;
        ts.last_events = *v;
      }
    }
    if (s.cpu_s > 0) cpu_by_process[ts.tgid] += s.cpu_s;
    seen.push_back(s);
  }

  std::unordered_map<pid_t, uint64_t> anon_by_process;
  std::vector<std::pair<int, hw::Workload>> activity;
  activity.reserve(seen.size());
  size_t by_events = 0;
  for (const Seen& s : seen) {
    if (dt_s <= 0) break;
    const pid_t tgid = threads_[s.tid].tgid;
    hw::Workload w;
    w.cpu = s.cpu;
    if (s.cpu_s > 0) {
      auto [a, fresh] = anon_by_process.try_emplace(tgid, 0);
      if (fresh) a->second = proc_->anon_resident_bytes(tgid).value_or(0);
      const double share = s.cpu_s / cpu_by_process[tgid];
      w.cache_footprint_bytes = static_cast<uint64_t>(static_cast<double>(a->second) * share);
    }
    const double dt_us = dt_s * 1e6;
    if (s.events) {
      // Bytes / microsecond = MB/s.
      w.bandwidth_mbps = static_cast<double>(s.event_count) * kLineBytes / dt_us;
      ++by_events;
    } else {
      w.bandwidth_mbps = static_cast<double>(s.faults * proc_->page_size()) / dt_us;
      w.stream_mbps = kStreamMbpsPerCore * std::min(1.0, s.cpu_s / dt_s);
    }
    if (w.cache_footprint_bytes == 0 && w.bandwidth_mbps <= 0) continue;
    activity.emplace_back(s.tid, std::move(w));
  }
  active_ = activity.size();
  counted_by_events_ = by_events;
  sim_.set_task_activity(std::move(activity));
  ++samples_;
  last_sample_ns_ = thread_cpu_ns() - cost_start;
}

std::string TaskModel::bandwidth_source() const {
  if (mode_ == TaskModelMode::kAuto && events_) return events_->name();
  return "model (CPU time and page faults)";
}

nlohmann::json TaskModel::status() const {
  nlohmann::json j = {{"mode", task_model_mode_name(mode_)}};
  if (mode_ == TaskModelMode::kNone) return j;
  j["bandwidth_source"] = bandwidth_source();
  if (mode_ == TaskModelMode::kAuto && !events_ && !events_why_.empty())
    j["no_events_because"] = events_why_;
  j["threads"] = threads_.size();
  j["active_threads"] = active_;
  j["threads_counted_by_events"] = counted_by_events_;
  j["samples"] = samples_;
  j["last_sample_cpu_us"] = last_sample_ns_ / 1000;
  return j;
}

}  // namespace resctrlfs::daemon
