// Defines where the daemon finds the CPU a real thread runs on, in the
// platform's numbers: the one lookup a model of real threads' traffic
// calls ("the CPU they run on").
//
// Without virtual CPUs the host's CPU numbers are the platform's (the host
// platform, or NAME@host fitted to the host's CPUs): the CPU the thread
// last ran on (field 39 of /proc/TID/stat). With virtual CPUs
// (resctrlfs-sandbox --cpus platform, which passes --virtual-cpus FILE) the
// sandbox's supervisor keeps the table of threads' virtual affinities in
// FILE (base/vcpus.h): the thread counts on the virtual CPU of its affinity
// that maps onto the host CPU it last ran on (a thread pinned to virtual
// CPU 37 counts on 37, wherever 37 runs on the host).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "base/result.h"
#include "base/vcpus.h"

namespace resctrlfs::daemon {

class ThreadCpus {
 public:
  // `vcpu_file`: the supervisor's table ("" = no virtual CPUs); `proc`:
  // where /proc is (tests give a fake tree).
  explicit ThreadCpus(std::string vcpu_file = "", std::string proc = "/proc");

  // The platform CPU thread `tid` counts as running on. ESRCH when the
  // thread is gone; the table is re-read when the file has changed (an
  // unreadable or malformed table is an error naming the file).
  Result<unsigned> cpu_of(pid_t tid);

  bool virtual_cpus() const { return !file_.empty(); }
  // Reads the table if the file has changed since the last read (cpu_of
  // does it on each call); an error names the file.
  Result<void> load();

 private:
  std::string file_;
  std::string proc_;
  VcpuTable table_;
  // The identity of the table read last (replaced by rename: a new inode).
  uint64_t ino_ = 0, size_ = 0;
  int64_t mtime_ns_ = -1;
};

}  // namespace resctrlfs::daemon
