// Defines HttpServer: a small HTTP/1.1 server (Boost.Beast) on an Asio
// io_context, serving GET and HEAD through one handler function. Requests
// with a body, oversized headers or other methods are refused with a status
// code. Descriptors are bounded so that idle connections cannot starve a
// scrape: each connection has an idle timeout, a peer address holds at most
// a few connections at once, and an accept() that fails for want of a
// descriptor sheds the pending connection and backs off instead of spinning
// (base/fd_reserve.h).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "base/result.h"

namespace resctrlfs::exporter {

struct HttpResponse {
  unsigned status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};

// Called with the request target (path and query) of a GET or HEAD.
using HttpHandler = std::function<HttpResponse(const std::string& target)>;

struct HttpServerOptions {
  // A connection is closed when a request (or the writing of its response)
  // takes longer than this, an idle keep-alive connection included.
  std::chrono::milliseconds idle_timeout{std::chrono::seconds(30)};
  // Connections one peer address may hold at once; a further one is closed
  // as soon as it is accepted.
  unsigned max_sessions_per_peer = 64;
  // Where log lines go (stderr when empty).
  std::function<void(const std::string&)> log;
};

class HttpServer {
 public:
  HttpServer(boost::asio::io_context& io, HttpHandler handler, HttpServerOptions opts = {});
  ~HttpServer();
  // Binds and listens; an error says why (address in use, bad address).
  Result<void> listen(const boost::asio::ip::tcp::endpoint& ep);
  boost::asio::ip::tcp::endpoint local_endpoint() const;
  // Connections open now (for the tests).
  size_t sessions() const;

 private:
  void accept();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Parses "ADDR:PORT" (an IPv4 address), "[V6ADDR]:PORT", "HOST:PORT" (a host
// name such as localhost, resolved now; its first IPv4 address, else its
// first IPv6 one) or ":PORT" (127.0.0.1); an error says why and lists these.
Result<boost::asio::ip::tcp::endpoint> parse_listen_address(const std::string& s);

}  // namespace resctrlfs::exporter
