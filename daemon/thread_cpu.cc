// Implements the lookup of the CPU a real thread runs on (thread_cpu.h).
#include "daemon/thread_cpu.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>

namespace resctrlfs::daemon {

ThreadCpus::ThreadCpus(std::string vcpu_file, std::string proc)
    : file_(std::move(vcpu_file)), proc_(std::move(proc)) {}

Result<void> ThreadCpus::load() {
  struct stat st;
  if (::stat(file_.c_str(), &st) != 0)
    return Error::make(errno, "--virtual-cpus " + file_ + ": " + std::strerror(errno));
  const int64_t mtime = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  if (static_cast<uint64_t>(st.st_ino) == ino_ && static_cast<uint64_t>(st.st_size) == size_ &&
      mtime == mtime_ns_)
    return {};
  std::ifstream in(file_);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto t = parse_vcpu_table(text);
  if (!t) return Error::make(t.error().code, "--virtual-cpus " + file_ + ": " + t.error().message);
  table_ = std::move(*t);
  ino_ = static_cast<uint64_t>(st.st_ino);
  size_ = static_cast<uint64_t>(st.st_size);
  mtime_ns_ = mtime;
  return {};
}

Result<unsigned> ThreadCpus::cpu_of(pid_t tid) {
  auto facts = [this](pid_t t, ThreadFacts* f) { return read_thread_facts(proc_, t, f); };
  ThreadFacts self;
  if (tid <= 0 || !facts(tid, &self) || self.host_cpu < 0)
    return Error::make(ESRCH, "no thread " + std::to_string(tid));
  if (file_.empty()) return static_cast<unsigned>(self.host_cpu);
  RESCTRLFS_RETURN_IF_ERROR(load());
  const VcpuMap& map = table_.map();
  return map.running_on(table_.affinity(tid, self, facts), static_cast<unsigned>(self.host_cpu));
}

}  // namespace resctrlfs::daemon
