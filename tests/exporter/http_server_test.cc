// HttpServer's bounds on descriptors: connections per peer address and the
// idle timeout.
#include "exporter/http_server.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <vector>

namespace resctrlfs::exporter {
namespace {

using namespace std::chrono_literals;

int connect_to(unsigned short port) {
  const int c = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(port);
  REQUIRE(::connect(c, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  return c;
}

// True when the server closed `fd` (end of file or reset), false when it is
// still open with nothing to read.
bool closed(int fd) {
  char b[256];
  const ssize_t n = ::recv(fd, b, sizeof b, MSG_DONTWAIT);
  return n == 0 || (n < 0 && errno != EAGAIN);
}

TEST_CASE("a peer holds a bounded number of connections, and idle ones are closed", "[http]") {
  boost::asio::io_context io;
  std::vector<std::string> log;
  HttpServerOptions opts;
  opts.max_sessions_per_peer = 4;
  opts.idle_timeout = 2s;
  opts.log = [&](const std::string& l) { log.push_back(l); };
  HttpServer server(
      io,
      [](const std::string&) {
        return HttpResponse{200, "text/plain", "ok"};
      },
      opts);
  auto ep = parse_listen_address("127.0.0.1:0");
  REQUIRE(ep.ok());
  REQUIRE(server.listen(*ep).ok());
  const unsigned short port = server.local_endpoint().port();
  auto run_until = [&](auto done) {
    for (int i = 0; i < 200; ++i) {
      if (done()) return true;
      io.run_for(20ms);
    }
    return done();
  };

  std::vector<int> c;
  for (int i = 0; i < 4; ++i) c.push_back(connect_to(port));
  REQUIRE(run_until([&] { return server.sessions() == 4; }));
  const int fifth = connect_to(port);
  REQUIRE(run_until([&] { return closed(fifth); }));
  CHECK(server.sessions() == 4);
  REQUIRE(log.size() == 1);
  CHECK(log[0] == "closed a connection from 127.0.0.1: it holds 4 already");
  ::close(fifth);

  // The four held connections are served.
  const std::string req = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
  REQUIRE(::send(c[0], req.data(), req.size(), 0) == static_cast<ssize_t>(req.size()));
  char b[512];
  ssize_t n = -1;
  REQUIRE(run_until([&] { return (n = ::recv(c[0], b, sizeof b, MSG_DONTWAIT)) > 0; }));
  CHECK(std::string(b, static_cast<size_t>(n)).rfind("HTTP/1.1 200 OK\r\n", 0) == 0);

  // Idle, each is closed after the timeout, and its place is free again.
  REQUIRE(run_until([&] { return server.sessions() == 0; }));
  for (int fd : c) CHECK(closed(fd));
  for (int fd : c) ::close(fd);
  const int again = connect_to(port);
  REQUIRE(run_until([&] { return server.sessions() == 1; }));
  ::close(again);
}

}  // namespace
}  // namespace resctrlfs::exporter
