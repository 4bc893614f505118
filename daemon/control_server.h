// Defines ControlServer: the Unix stream socket of --control, served on the
// daemon's Boost.Asio loop. Each connection sends JSON lines and gets one
// reply line per request, in order: the handler is called on the loop thread
// with the line and a `done` callback, which it (or whatever thread it hands
// the request to) calls once with the reply; the reply is written on the
// loop, and the connection's next line is read after it.
#pragma once

#include <utility>  // before Asio: Boost 1.74 misses it under C++20

#include <boost/asio.hpp>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "base/fd_reserve.h"
#include "base/result.h"

namespace resctrlfs::daemon {

class ControlServer {
 public:
  using Done = std::function<void(std::string reply)>;
  using Handler = std::function<void(std::string line, Done done)>;

  // Binds `path` (mode 0600). A stale socket file is replaced; a socket a
  // live process still accepts on is EADDRINUSE.
  static Result<std::unique_ptr<ControlServer>> create(boost::asio::io_context& io,
                                                       const std::string& path, Handler handler);
  ~ControlServer();

  void close();

 private:
  ControlServer(boost::asio::io_context& io, std::string path, Handler handler);
  void accept();

  boost::asio::local::stream_protocol::acceptor acceptor_;
  std::string path_;
  std::shared_ptr<Handler> handler_;
  bool closed_ = false;
  // Out of descriptors, accept() sheds and waits instead of spinning.
  AcceptGuard guard_;
  boost::asio::steady_timer backoff_;
};

}  // namespace resctrlfs::daemon
