// The accept loop's answer to a process out of descriptors (fd_reserve.h)
// and the log rate limit (log_rate_limit.h).
#include "base/fd_reserve.h"

#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <vector>

namespace resctrlfs {
namespace {

TEST_CASE("log rate limit: a burst per window, the rest counted", "[fd_reserve]") {
  using namespace std::chrono_literals;
  LogRateLimit l(2, 10s);
  const auto t0 = LogRateLimit::Clock::time_point{} + 1h;
  CHECK(l.admit(t0));
  CHECK(l.admit(t0 + 1s));
  CHECK_FALSE(l.admit(t0 + 2s));
  CHECK_FALSE(l.admit(t0 + 9s));
  CHECK(l.suppressed() == 2);
  CHECK(l.admit(t0 + 10s));  // a new window
  CHECK(l.take_suppressed() == 2);
  CHECK(l.take_suppressed() == 0);
}

// A listening loopback socket with `n` connections pending.
struct Pending {
  explicit Pending(int n) {
    lfd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    REQUIRE(lfd >= 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(lfd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    REQUIRE(::listen(lfd, 16) == 0);
    socklen_t len = sizeof a;
    REQUIRE(::getsockname(lfd, reinterpret_cast<sockaddr*>(&a), &len) == 0);
    for (int i = 0; i < n; ++i) {
      const int c = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      REQUIRE(::connect(c, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
      clients.push_back(c);
    }
  }
  ~Pending() {
    for (int fd : clients) ::close(fd);
    ::close(lfd);
  }
  int lfd = -1;
  std::vector<int> clients;
};

// RLIMIT_NOFILE lowered to 64 for a scope, with descriptors taken until
// `free` are left (0: until dup() fails with EMFILE). While none is free,
// nothing may run but plain system calls: the UBSan runtime opens a pipe to
// check an object's type and reports a valid object as corrupt without one.
class FdSqueeze {
 public:
  explicit FdSqueeze(int free) {
    REQUIRE(::getrlimit(RLIMIT_NOFILE, &saved_) == 0);
    rlimit low = saved_;
    low.rlim_cur = 64;
    REQUIRE(::setrlimit(RLIMIT_NOFILE, &low) == 0);
    const int null = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    REQUIRE(null >= 0);
    filler_.push_back(null);
    for (int fd; (fd = ::dup(null)) >= 0;) filler_.push_back(fd);
    dup_errno_ = errno;
    for (int i = 0; i < free && !filler_.empty(); ++i) release_one();
  }
  ~FdSqueeze() {
    release();
    ::setrlimit(RLIMIT_NOFILE, &saved_);
  }
  void release() {
    while (!filler_.empty()) release_one();
  }
  int dup_errno() const { return dup_errno_; }

 private:
  void release_one() {
    ::close(filler_.back());
    filler_.pop_back();
  }
  rlimit saved_{};
  std::vector<int> filler_;
  int dup_errno_ = 0;
};

TEST_CASE("out of descriptors, a pending connection is shed and the reserve comes back",
          "[fd_reserve]") {
  Pending p(3);
  AcceptGuard guard("test server");
  REQUIRE(guard.reserve().held());
  char b;
  // Out of descriptors: only system calls and the guard until release().
  FdSqueeze squeeze(0);
  const int accepted = ::accept(p.lfd, nullptr, nullptr);
  const int accept_errno = errno;
  std::string log1, log2, log3;
  const auto wait1 = guard.on_error(p.lfd, EMFILE, log1);
  const bool held1 = guard.reserve().held();
  const ssize_t got1 = ::recv(p.clients[0], &b, 1, 0);  // the oldest pending connection
  // Still out of descriptors: the next one goes too, the line is not repeated.
  const auto wait2 = guard.on_error(p.lfd, ENFILE, log2);
  const bool held2 = guard.reserve().held();
  const ssize_t got2 = ::recv(p.clients[1], &b, 1, 0);
  // An error of one connection is retried at once, nothing is shed.
  const auto wait3 = guard.on_error(p.lfd, ECONNABORTED, log3);
  const ssize_t got3 = ::recv(p.clients[2], &b, 1, MSG_DONTWAIT);
  const int recv3_errno = errno;
  squeeze.release();

  CHECK(squeeze.dup_errno() == EMFILE);
  CHECK(accepted < 0);
  CHECK(accept_errno == EMFILE);
  CHECK(wait1 == kAcceptBackoff);
  CHECK(log1.find("test server: accept: Too many open files; 1 pending connection(s) closed") == 0);
  CHECK(held1);
  CHECK(got1 <= 0);
  CHECK(wait2 == kAcceptBackoff);
  CHECK(log2.empty());
  CHECK(held2);
  CHECK(got2 <= 0);
  CHECK(wait3.count() == 0);
  CHECK(got3 < 0);
  CHECK(recv3_errno == EAGAIN);

  // Nothing pending: shed() accepts nothing and does not block.
  const int c = ::accept(p.lfd, nullptr, nullptr);
  CHECK(c >= 0);
  ::close(c);
  FdReserve r;
  CHECK_FALSE(r.shed(p.lfd));
  CHECK(r.held());
}

TEST_CASE("a connection accepted into the last descriptors is closed, the others kept",
          "[fd_reserve]") {
  Pending p(2);
  AcceptGuard guard("test server");
  std::string log;
  {
    // Fewer than kFdHeadroom descriptors free below the limit of 64.
    FdSqueeze squeeze(kFdHeadroom - 2);
    const int c = ::accept(p.lfd, nullptr, nullptr);
    REQUIRE(c >= 0);
    CHECK(c >= 64 - static_cast<int>(kFdHeadroom));
    CHECK_FALSE(guard.admit(c, log));
    ::close(c);
    CHECK(log.find("test server: 1 connection(s) closed as soon as accepted") == 0);
  }
  // With the descriptors back, the next one is admitted.
  const int c = ::accept(p.lfd, nullptr, nullptr);
  REQUIRE(c >= 0);
  CHECK(guard.admit(c, log));
  CHECK(log.empty());
  ::close(c);
}

}  // namespace
}  // namespace resctrlfs
