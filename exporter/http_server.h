// Defines HttpServer: a small HTTP/1.1 server (Boost.Beast) on an Asio
// io_context, serving GET and HEAD through one handler function. Requests
// with a body, oversized headers or other methods are refused with a status
// code; each connection has an idle timeout.
#pragma once

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

class HttpServer {
 public:
  HttpServer(boost::asio::io_context& io, HttpHandler handler);
  ~HttpServer();
  // Binds and listens; an error says why (address in use, bad address).
  Result<void> listen(const boost::asio::ip::tcp::endpoint& ep);
  boost::asio::ip::tcp::endpoint local_endpoint() const;

 private:
  void accept();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Parses "ADDR:PORT", "[V6ADDR]:PORT" or ":PORT" (loopback); an error says why.
Result<boost::asio::ip::tcp::endpoint> parse_listen_address(const std::string& s);

}  // namespace resctrlfs::exporter
