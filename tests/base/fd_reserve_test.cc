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

TEST_CASE("out of descriptors, a pending connection is shed and the reserve comes back",
          "[fd_reserve]") {
  const int lfd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(lfd >= 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(lfd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  REQUIRE(::listen(lfd, 16) == 0);
  socklen_t len = sizeof a;
  REQUIRE(::getsockname(lfd, reinterpret_cast<sockaddr*>(&a), &len) == 0);
  std::vector<int> clients;
  for (int i = 0; i < 3; ++i) {
    const int c = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    REQUIRE(::connect(c, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    clients.push_back(c);
  }

  rlimit saved{};
  REQUIRE(::getrlimit(RLIMIT_NOFILE, &saved) == 0);
  rlimit low = saved;
  low.rlim_cur = 64;
  REQUIRE(::setrlimit(RLIMIT_NOFILE, &low) == 0);
  AcceptGuard guard("test server");
  REQUIRE(guard.reserve().held());
  std::vector<int> filler;
  for (int fd; (fd = ::dup(0)) >= 0;) filler.push_back(fd);
  REQUIRE(errno == EMFILE);
  REQUIRE(::accept(lfd, nullptr, nullptr) < 0);
  REQUIRE(errno == EMFILE);

  std::string log;
  CHECK(guard.on_error(lfd, EMFILE, log) == kAcceptBackoff);
  CHECK(log.find("test server: accept: Too many open files; 1 pending connection(s) closed") == 0);
  CHECK(guard.reserve().held());
  char b;
  CHECK(::recv(clients[0], &b, 1, 0) <= 0);  // the oldest pending connection: closed
  // Still out of descriptors: the next one goes too, and the line is not repeated.
  CHECK(guard.on_error(lfd, ENFILE, log) == kAcceptBackoff);
  CHECK(log.empty());
  CHECK(guard.reserve().held());
  CHECK(::recv(clients[1], &b, 1, 0) <= 0);
  // An error of one connection is retried at once, nothing is shed.
  CHECK(guard.on_error(lfd, ECONNABORTED, log).count() == 0);
  CHECK(::recv(clients[2], &b, 1, MSG_DONTWAIT) < 0);
  CHECK(errno == EAGAIN);

  for (int fd : filler) ::close(fd);
  ::setrlimit(RLIMIT_NOFILE, &saved);
  // Nothing pending: shed() accepts nothing and does not block.
  const int c = ::accept(lfd, nullptr, nullptr);
  CHECK(c >= 0);
  ::close(c);
  FdReserve r;
  CHECK_FALSE(r.shed(lfd));
  CHECK(r.held());
  for (int fd : clients) ::close(fd);
  ::close(lfd);
}

}  // namespace
}  // namespace resctrlfs
