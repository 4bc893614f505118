// Defines ProcConnector: the kernel's process events connector (netlink
// NETLINK_CONNECTOR, group CN_IDX_PROC), which reports every fork and exit
// on the system. The daemon forwards them to fs::Filesystem::on_fork /
// on_thread_exit so children inherit their parent's group and dead threads leave
// their group, as in the kernel's resctrl. When the fork tracepoint can be
// opened (fork_tracepoint.h) it supplies the forks and the connector the
// exits, plus the forks the tracepoint never sees (merge_task_events).
// Exec events tell the daemon's thread table that a process is down to one
// thread (fs::Filesystem::on_exec).
//
// The socket is non-blocking; the event loop calls drain() when it is
// readable and before requests that look at task membership.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "base/result.h"

namespace resctrlfs::daemon {

struct ProcEvent {
  enum class Kind { kFork, kExit, kExec };
  Kind kind = Kind::kFork;
  pid_t parent_tid = 0;  // kFork: the thread whose group the child inherits
  pid_t tid = 0;         // kFork: the new thread; kExit: the thread that exited;
                         // kExec: the process (its id, which the exec'ing thread takes)
  uint64_t time_ns = 0;  // when it happened, CLOCK_MONOTONIC
  pid_t tgid = 0;        // the process of `tid`, 0 when the source does not say
};

// Decodes one datagram read from the connector socket (one or more netlink
// messages). Malformed or foreign messages are skipped.
//
// The connector reports a new process with the forking thread as its parent,
// but a new thread (clone with CLONE_THREAD) with its process's parent
// instead of the creating thread; for threads the thread-group leader is
// used as the parent, the best the connector allows.
std::vector<ProcEvent> parse_proc_datagram(const void* data, size_t len);

class ProcConnector {
 public:
  // Opens the socket and subscribes (needs CAP_NET_ADMIN).
  static Result<std::unique_ptr<ProcConnector>> open();
  ~ProcConnector();
  ProcConnector(const ProcConnector&) = delete;
  ProcConnector& operator=(const ProcConnector&) = delete;

  int fd() const { return fd_; }
  // Reads every pending datagram. `overflowed` is set when the kernel
  // dropped events (the socket buffer filled up).
  std::vector<ProcEvent> drain(bool* overflowed);

 private:
  explicit ProcConnector(int fd) : fd_(fd) {}
  int fd_ = -1;
};

}  // namespace resctrlfs::daemon
