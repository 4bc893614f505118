// Defines virtual CPUs: a machine of M CPUs (a simulated platform's) laid
// over the N host CPUs a sandbox runs on, and the table of threads' virtual
// affinities that the sandbox's supervisor keeps (it answers
// sched_setaffinity and sched_getaffinity with virtual CPU numbers and pins
// threads to the mapped host CPUs) and the daemon reads (to count a thread
// on the virtual CPU it runs on).
//
// The mapping is in blocks, as NAME@host places a platform on the host:
// virtual CPU v runs on host CPU host[v * N / M] (host: the sandbox's
// allowed host CPUs, ascending), so each host CPU carries a contiguous run
// of virtual CPUs and a platform's sockets land on different host CPUs
// where there are enough of them.
//
// A thread's virtual affinity is what it (or another thread, with taskset
// -p) last set through the supervisor, inherited by the threads and
// processes it creates; where the thread's host affinity no longer matches
// (it was changed behind the supervisor's back: a cgroup cpuset, a 32-bit
// call), the virtual CPUs of its host CPUs.
//
// The table travels from the sandbox to the daemon as a text file
// (format_vcpu_table / parse_vcpu_table), replaced atomically on each
// change:
//   resctrlfs-vcpus 1
//   virtual M
//   host H0,H1,...            (the host CPU list)
//   thread TID TGID START CPULIST
// START is the thread's start time (field 22 of /proc/TID/stat), so that a
// record never applies to a later thread that reuses the id.
//
// Header-only, like the rest of base/.
#pragma once

#include <sys/types.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "base/cpulist.h"
#include "base/cpumask.h"
#include "base/result.h"

namespace resctrlfs {

class VcpuMap {
 public:
  VcpuMap() = default;
  // `host`: the host CPU numbers, ascending, not empty.
  VcpuMap(unsigned virtual_cpus, std::vector<unsigned> host)
      : virtual_(virtual_cpus), host_(std::move(host)) {
    for (unsigned h : host_) host_bits_ = std::max(host_bits_, h + 1);
  }
  bool enabled() const { return virtual_ > 0 && !host_.empty(); }
  unsigned virtual_cpus() const { return virtual_; }
  const std::vector<unsigned>& host_cpus() const { return host_; }
  unsigned host_bits() const { return host_bits_; }

  unsigned host_of(unsigned v) const {
    return host_[static_cast<uint64_t>(v) * host_.size() / virtual_];
  }
  // The virtual CPUs in `v` mapped onto host CPUs (a host mask of
  // host_bits() bits).
  CpuMask to_host(const CpuMask& v) const {
    CpuMask out(host_bits_);
    for (unsigned c : v.cpus())
      if (c < virtual_) out.set(host_of(c));
    return out;
  }
  // Every virtual CPU whose host CPU is in `h`.
  CpuMask to_virtual(const CpuMask& h) const {
    CpuMask out(virtual_);
    for (unsigned c = 0; c < virtual_; ++c)
      if (h.test(host_of(c))) out.set(c);
    return out;
  }
  CpuMask all() const {
    CpuMask out(virtual_);
    for (unsigned c = 0; c < virtual_; ++c) out.set(c);
    return out;
  }
  // The virtual CPU a thread with virtual affinity `v` counts as running
  // on when the host runs it on `host_cpu`: the first CPU of `v` mapped
  // there, else the first of `v`.
  unsigned running_on(const CpuMask& v, unsigned host_cpu) const {
    for (unsigned c : v.cpus())
      if (c < virtual_ && host_of(c) == host_cpu) return c;
    return v.empty() ? 0 : v.first();
  }

 private:
  unsigned virtual_ = 0;
  std::vector<unsigned> host_;
  unsigned host_bits_ = 0;
};

// What /proc says about one thread.
struct ThreadFacts {
  pid_t tgid = 0;
  pid_t ppid = 0;
  uint64_t start = 0;                  // field 22 of stat
  int host_cpu = -1;                   // field 39 of stat: the CPU it last ran on
  std::vector<unsigned> host_allowed;  // Cpus_allowed_list of status
};

// Reads ThreadFacts of `tid` from `proc` (normally "/proc"); false when the
// thread is gone or the files cannot be parsed.
inline bool read_thread_facts(const std::string& proc, pid_t tid, ThreadFacts* out) {
  const std::string dir = proc + "/" + std::to_string(tid);
  std::ifstream stat_file(dir + "/stat");
  std::string stat((std::istreambuf_iterator<char>(stat_file)), std::istreambuf_iterator<char>());
  size_t paren = stat.rfind(')');
  if (paren == std::string::npos) return false;
  std::istringstream fields(stat.substr(paren + 1));
  std::vector<std::string> f;  // f[0] is field 3 (state)
  for (std::string s; fields >> s;) f.push_back(s);
  if (f.size() < 37) return false;
  ThreadFacts t;
  t.ppid = static_cast<pid_t>(std::strtol(f[1].c_str(), nullptr, 10));
  t.start = std::strtoull(f[19].c_str(), nullptr, 10);
  t.host_cpu = static_cast<int>(std::strtol(f[36].c_str(), nullptr, 10));
  std::ifstream status(dir + "/status");
  bool have_allowed = false;
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("Tgid:", 0) == 0)
      t.tgid = static_cast<pid_t>(std::strtol(line.c_str() + 5, nullptr, 10));
    if (line.rfind("Cpus_allowed_list:", 0) == 0) {
      auto m = parse_cpu_list(line.substr(18), 1u << 16);
      if (!m) return false;
      t.host_allowed = m->cpus();
      have_allowed = true;
    }
  }
  if (t.tgid <= 0 || !have_allowed) return false;
  *out = std::move(t);
  return true;
}

class VcpuTable {
 public:
  struct Record {
    pid_t tgid = 0;
    uint64_t start = 0;
    CpuMask cpus;  // virtual
  };
  using Facts = std::function<bool(pid_t, ThreadFacts*)>;

  VcpuTable() = default;
  explicit VcpuTable(VcpuMap map) : map_(std::move(map)) {}
  const VcpuMap& map() const { return map_; }
  const std::map<pid_t, Record>& records() const { return records_; }

  void set(pid_t tid, pid_t tgid, uint64_t start, const CpuMask& cpus) {
    records_[tid] = Record{tgid, start, cpus};
  }
  // Drops the records of threads that have gone (or whose id was reused).
  void prune(const Facts& facts) {
    for (auto it = records_.begin(); it != records_.end();) {
      ThreadFacts f;
      if (!facts(it->first, &f) || f.start != it->second.start)
        it = records_.erase(it);
      else
        ++it;
    }
  }

  // The virtual affinity of `tid`, whose facts are `self` (see the file
  // comment): its own record, a live thread's of its process, then its
  // ancestors' (up to 64 generations), each only if it maps onto the
  // thread's host affinity; else the virtual CPUs of its host CPUs.
  CpuMask affinity(pid_t tid, const ThreadFacts& self, const Facts& facts) const {
    CpuMask host(map_.host_bits());
    for (unsigned c : self.host_allowed) host.set(c);
    auto fits = [&](const Record& r) { return map_.to_host(r.cpus) == host; };
    auto alive = [&](pid_t t, const Record& r) {
      ThreadFacts f;
      return facts(t, &f) && f.start == r.start;
    };
    if (auto it = records_.find(tid);
        it != records_.end() && it->second.start == self.start && fits(it->second))
      return it->second.cpus;
    auto of_process = [&](pid_t tgid, const CpuMask** out) {
      for (const auto& [t, r] : records_)
        if (r.tgid == tgid && t != tid && fits(r) && alive(t, r)) {
          *out = &r.cpus;
          return true;
        }
      return false;
    };
    const CpuMask* found = nullptr;
    if (of_process(self.tgid, &found)) return *found;
    pid_t p = self.ppid;
    for (int depth = 0; depth < 64 && p > 1; ++depth) {
      if (of_process(p, &found)) return *found;
      ThreadFacts f;
      if (!facts(p, &f)) break;
      p = f.ppid;
    }
    return map_.to_virtual(host);
  }

 private:
  VcpuMap map_;
  std::map<pid_t, Record> records_;
};

inline std::string format_vcpu_table(const VcpuTable& t) {
  std::string out = "resctrlfs-vcpus 1\nvirtual " + std::to_string(t.map().virtual_cpus()) +
                    "\nhost " +
                    format_cpu_list(cpu_mask_of(t.map().host_cpus(), t.map().host_bits())) + "\n";
  for (const auto& [tid, r] : t.records())
    out += "thread " + std::to_string(tid) + " " + std::to_string(r.tgid) + " " +
           std::to_string(r.start) + " " + format_cpu_list(r.cpus) + "\n";
  return out;
}

inline Result<VcpuTable> parse_vcpu_table(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  auto bad = [](const std::string& why) {
    return Error::make(EINVAL, "virtual CPU table: " + why);
  };
  if (!std::getline(in, line) || line != "resctrlfs-vcpus 1")
    return bad("no 'resctrlfs-vcpus 1' header");
  unsigned virt = 0;
  std::vector<unsigned> host;
  std::vector<std::string> threads;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string key;
    f >> key;
    if (key == "virtual") {
      f >> virt;
      if (!f || virt == 0 || virt > 65536) return bad("bad line '" + line + "'");
    } else if (key == "host") {
      std::string list;
      f >> list;
      auto m = parse_cpu_list(list, 65536, CpuListSyntax::kPrinted);
      if (!m || m->empty()) return bad("bad line '" + line + "'");
      host = m->cpus();
    } else if (key == "thread") {
      threads.push_back(line);
    } else if (!key.empty()) {
      return bad("unknown line '" + line + "'");
    }
  }
  if (virt == 0 || host.empty()) return bad("no 'virtual' or 'host' line");
  VcpuTable t(VcpuMap(virt, host));
  for (const auto& l : threads) {
    std::istringstream f(l);
    std::string key, list;
    long tid = 0, tgid = 0;
    uint64_t start = 0;
    f >> key >> tid >> tgid >> start >> list;
    auto m = parse_cpu_list(list, virt, CpuListSyntax::kPrinted);
    if (!f || tid <= 0 || tgid <= 0 || !m) return bad("bad line '" + l + "'");
    t.set(static_cast<pid_t>(tid), static_cast<pid_t>(tgid), start, *m);
  }
  return t;
}

}  // namespace resctrlfs
