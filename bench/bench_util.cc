// Implements bench_util.h: timed multi-threaded runs, CPU placement, and the
// daemon probes (control socket, schedstat, VmRSS).
#include "bench/bench_util.h"

#include <dirent.h>
#include <pthread.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "base/json_input.h"

namespace resctrlfs::bench {

double now_us() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

std::string read_all(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string trim(std::string s) {
  while (!s.empty() && isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t i = 0;
  while (i < s.size() && isspace(static_cast<unsigned char>(s[i]))) ++i;
  return s.substr(i);
}

int online_cpus() { return static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN)); }

static cpu_set_t cpu_set_for(std::optional<int> cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (cpu) {
    CPU_SET(*cpu, &set);
  } else {
    for (int c = 0; c < online_cpus(); ++c) CPU_SET(c, &set);
  }
  return set;
}

void pin_self(std::optional<int> cpu) {
  cpu_set_t set = cpu_set_for(cpu);
  sched_setaffinity(0, sizeof(set), &set);
}

void pin_process(pid_t pid, std::optional<int> cpu) {
  if (pid == 0) return pin_self(cpu);
  cpu_set_t set = cpu_set_for(cpu);
  // Every thread: the FUSE loop and any workers, timers or socket threads.
  std::string dir = "/proc/" + std::to_string(pid) + "/task";
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] == '.') continue;
      sched_setaffinity(atoi(e->d_name), sizeof(set), &set);
    }
    closedir(d);
  }
}

uint64_t process_cpu_ns(pid_t pid) {
  uint64_t total = 0;
  std::string dir = "/proc/" + std::to_string(pid) + "/task";
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] == '.') continue;
      std::string s = read_all(dir + "/" + e->d_name + "/schedstat");
      total += strtoull(s.c_str(), nullptr, 10);
    }
    closedir(d);
  }
  return total;
}

uint64_t process_rss_kib(pid_t pid) {
  std::istringstream in(read_all("/proc/" + std::to_string(pid) + "/status"));
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return strtoull(line.c_str() + 6, nullptr, 10);
  }
  return 0;
}

Sample time_op(const OpFn& op, int threads, int warmup, int count, std::optional<int> cpu,
               double budget_s) {
  std::vector<std::vector<float>> lat(threads);
  std::vector<double> start(threads), end(threads);
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::atomic<int> err{0};
  std::atomic<bool> truncated{false};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      pin_self(cpu);
      double w0 = now_us();
      for (int i = 0; i < warmup && !err && now_us() - w0 < budget_s * 1e6 / 4; ++i) {
        if (int e = op(t)) err = e;
      }
      lat[t].reserve(count);
      ready.fetch_add(1);
      while (!go.load()) {
      }
      start[t] = now_us();
      for (int i = 0; i < count && !err; ++i) {
        double a = now_us();
        if (a - start[t] > budget_s * 1e6) {
          truncated = true;
          break;
        }
        if (int e = op(t)) {
          err = e;
          break;
        }
        lat[t].push_back(static_cast<float>(now_us() - a));
      }
      end[t] = now_us();
    });
  }
  while (ready.load() < threads) std::this_thread::yield();
  go = true;
  for (auto& th : pool) th.join();

  Sample s;
  if (err) {
    s.error = strerror(err);
    return s;
  }
  s.truncated = truncated;
  std::vector<float> all;
  for (auto& v : lat) all.insert(all.end(), v.begin(), v.end());
  if (all.empty()) return s;
  std::sort(all.begin(), all.end());
  s.ops = all.size();
  s.p50_us = all[all.size() / 2];
  s.p99_us = all[std::min(all.size() - 1, all.size() * 99 / 100)];
  double sum = 0;
  for (float v : all) sum += v;
  s.mean_us = sum / all.size();
  double wall =
      *std::max_element(end.begin(), end.end()) - *std::min_element(start.begin(), start.end());
  s.ops_per_s = wall > 0 ? s.ops / (wall / 1e6) : 0;
  return s;
}

std::optional<nlohmann::json> control_call(const std::string& socket_path,
                                           const nlohmann::json& cmd) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return std::nullopt;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (socket_path.size() >= sizeof(addr.sun_path)) {
    close(fd);
    return std::nullopt;
  }
  memcpy(addr.sun_path, socket_path.c_str(), socket_path.size() + 1);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) < 0) {
    close(fd);
    return std::nullopt;
  }
  std::string out = cmd.dump() + "\n";
  if (write(fd, out.data(), out.size()) != static_cast<ssize_t>(out.size())) {
    close(fd);
    return std::nullopt;
  }
  std::string in;
  char buf[4096];
  ssize_t r;
  while (in.find('\n') == std::string::npos && (r = read(fd, buf, sizeof(buf))) > 0) {
    in.append(buf, r);
  }
  close(fd);
  auto j = resctrlfs::parse_json(in.substr(0, in.find('\n')));
  if (!j.ok()) return std::nullopt;
  return std::move(j).value();
}

// Finds the object of opcode counters: the one holding a READ key.
static const nlohmann::json* find_counters(const nlohmann::json& j) {
  if (!j.is_object()) return nullptr;
  for (auto& [k, v] : j.items()) {
    std::string up = k;
    for (auto& c : up) c = static_cast<char>(toupper(static_cast<unsigned char>(c)));
    if (up == "READ" && v.is_number()) return &j;
  }
  for (auto& [k, v] : j.items()) {
    if (const nlohmann::json* f = find_counters(v)) return f;
  }
  return nullptr;
}

std::optional<std::map<std::string, uint64_t>> request_counts(const std::string& socket_path) {
  auto reply = control_call(socket_path, {{"cmd", "stats"}});
  if (!reply) return std::nullopt;
  const nlohmann::json* c = find_counters(*reply);
  if (!c) return std::nullopt;
  std::map<std::string, uint64_t> out;
  for (auto& [k, v] : c->items()) {
    if (!v.is_number_unsigned()) continue;  // a float would not fit
    std::string up = k;
    for (auto& ch : up) ch = static_cast<char>(toupper(static_cast<unsigned char>(ch)));
    out[up] = v.get<uint64_t>();
  }
  return out;
}

bool reset_request_counts(const std::string& socket_path) {
  auto reply = control_call(socket_path, {{"cmd", "stats-reset"}});
  return reply.has_value();
}

}  // namespace resctrlfs::bench
