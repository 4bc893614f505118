// Defines FdReserve and AcceptGuard: what a server's accept loop does when
// accept() fails because the process (EMFILE) or the system (ENFILE) has no
// descriptor left, written once for every server (the exporter's HTTP
// server, the daemon's control socket, the MSR broker).
//
// Retrying such an accept() at once spins: the pending connection stays in
// the backlog, the listening socket stays readable, and the next accept()
// fails the same way, at 100 % CPU, while the connection that would free a
// descriptor (a scrape, a command) waits behind it. So the loop sheds
// instead: it closes a descriptor it keeps in reserve (/dev/null, opened at
// start), accepts the pending connection with it and closes that at once
// (the peer sees its connection closed, not a hang), reopens the reserve,
// and waits a moment (kAcceptBackoff, an Asio timer in the server) before
// accepting again. One log line says so, rate-limited.
//
// A connection is not worth the process's last descriptors either: the
// rest of the process needs a few for its own files (the daemon's journal
// and its /proc walks, libfuse's pipes; the sanitizers' runtime checks open
// a pipe too, and report a valid object as corrupt when they cannot). So
// a connection that accept() returns in one of the last kFdHeadroom
// descriptors below the soft RLIMIT_NOFILE is closed at once (admit()):
// idle connections can fill a server's descriptors only up to that margin.
//
// POSIX only (no Asio: each server keeps its own timer). Not thread-safe:
// one accept loop per object.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>

#include "base/log_rate_limit.h"

namespace resctrlfs {

// How long an accept loop waits after shedding before it accepts again.
inline constexpr std::chrono::milliseconds kAcceptBackoff{100};

// Descriptors below the soft RLIMIT_NOFILE that an accept loop leaves free
// for the rest of its process.
inline constexpr unsigned kFdHeadroom = 16;

// True when descriptor `fd`, just allocated, leaves at least kFdHeadroom
// descriptors free. The kernel hands out the lowest free number, so every
// descriptor below `fd` is in use and at most limit - 1 - fd are free.
inline bool leaves_fd_headroom(int fd) {
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return true;
  return static_cast<rlim_t>(fd) + kFdHeadroom < rl.rlim_cur;
}

// One descriptor (/dev/null) held so that a process out of descriptors can
// still accept a connection, to close it.
class FdReserve {
 public:
  FdReserve() { reopen(); }
  ~FdReserve() {
    if (fd_ >= 0) ::close(fd_);
  }
  FdReserve(const FdReserve&) = delete;
  FdReserve& operator=(const FdReserve&) = delete;

  bool held() const { return fd_ >= 0; }

  // Drops one pending connection of the listening socket `listen_fd`: with
  // the reserve's descriptor free, accepts it and closes it at once, then
  // takes the reserve back. Never blocks (no pending connection: nothing is
  // accepted). True when a connection was dropped.
  bool shed(int listen_fd) {
    if (fd_ >= 0) {
      ::close(fd_);
      fd_ = -1;
    }
    bool dropped = false;
    pollfd p{listen_fd, POLLIN, 0};
    if (::poll(&p, 1, 0) == 1 && (p.revents & POLLIN) != 0) {
      const int c = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (c >= 0) {
        ::close(c);
        dropped = true;
      }
    }
    reopen();
    return dropped;
  }

 private:
  void reopen() {
    if (fd_ < 0) fd_ = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  }
  int fd_ = -1;
};

// The decision after a failed accept(), and its log line.
class AcceptGuard {
 public:
  // `what` names the server in the log line ("control socket /run/x.sock").
  explicit AcceptGuard(std::string what) : what_(std::move(what)) {}

  // True for the errors that say a descriptor (or the memory for one) is
  // missing, which retrying at once cannot cure.
  static bool out_of_descriptors(int err) {
    return err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM;
  }

  // accept() on `listen_fd` failed with `err`. Returns the time to wait
  // before accepting again: zero for the error of one connection
  // (ECONNABORTED, a peer gone before it was accepted), kAcceptBackoff when
  // out of descriptors, after one pending connection was shed. `log` is set
  // to the line to write, or emptied when the line is rate-limited.
  std::chrono::milliseconds on_error(int listen_fd, int err, std::string& log) {
    log.clear();
    if (!out_of_descriptors(err)) return std::chrono::milliseconds(0);
    if (reserve_.shed(listen_fd)) ++shed_;
    if (limit_.admit()) {
      log = what_ + ": accept: " + std::strerror(err) + "; " + std::to_string(shed_) +
            " pending connection(s) closed unanswered since the last such line; accepting " +
            "again every " + std::to_string(kAcceptBackoff.count()) + " ms";
      shed_ = 0;
      limit_.take_suppressed();
    }
    return kAcceptBackoff;
  }

  // accept() returned connection `fd`. False when it took one of the
  // process's last kFdHeadroom descriptors: the caller closes it at once
  // (its peer sees the connection closed) and accepts the next one. `log`
  // is set to the line to write, or emptied when it is rate-limited.
  bool admit(int fd, std::string& log) {
    log.clear();
    if (leaves_fd_headroom(fd)) return true;
    ++closed_;
    if (headroom_log_.admit()) {
      log = what_ + ": " + std::to_string(closed_) +
            " connection(s) closed as soon as accepted since the last such line: the last " +
            std::to_string(kFdHeadroom) +
            " descriptors below the open-files limit are kept for the process's own files";
      closed_ = 0;
      headroom_log_.take_suppressed();
    }
    return false;
  }

  const FdReserve& reserve() const { return reserve_; }

 private:
  std::string what_;
  FdReserve reserve_;
  LogRateLimit limit_{1, std::chrono::seconds(10)};
  uint64_t shed_ = 0;
  LogRateLimit headroom_log_{1, std::chrono::seconds(10)};
  uint64_t closed_ = 0;
};

}  // namespace resctrlfs
