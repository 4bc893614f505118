// Implements ControlServer: accept loop and line-based sessions with a bound
// on the request length (a client cannot make the daemon buffer without
// limit).
#include "daemon/control_server.h"

#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "daemon/control_protocol.h"

namespace resctrlfs::daemon {

namespace asio = boost::asio;
using Local = asio::local::stream_protocol;

namespace {

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(Local::socket sock, std::shared_ptr<ControlServer::Handler> handler)
      : sock_(std::move(sock)), buf_(kMaxControlLine + 1), handler_(std::move(handler)) {}

  void start() { read(); }

 private:
  void read() {
    auto self = shared_from_this();
    asio::async_read_until(
        sock_, buf_, '\n',
        [self](const boost::system::error_code& ec, size_t n) { self->on_line(ec, n); });
  }

  void on_line(const boost::system::error_code& ec, size_t n) {
    if (ec == asio::error::not_found) {
      // The line outgrew the buffer: answer once, then hang up.
      reply(nlohmann::json{{"ok", false}, {"error", "request too long"}}.dump(), true);
      return;
    }
    if (ec) return;  // EOF or error: the session ends with its last handler
    std::string line(asio::buffers_begin(buf_.data()), asio::buffers_begin(buf_.data()) + n);
    buf_.consume(n);
    auto self = shared_from_this();
    (*handler_)(std::move(line), [self](std::string text) {
      // From any thread: the socket is the loop's.
      asio::post(self->sock_.get_executor(),
                 [self, text = std::move(text)]() mutable { self->reply(std::move(text), false); });
    });
  }

  void reply(std::string text, bool close_after) {
    out_ = std::move(text);
    out_ += '\n';
    auto self = shared_from_this();
    asio::async_write(sock_, asio::buffer(out_),
                      [self, close_after](const boost::system::error_code& ec, size_t) {
                        if (ec || close_after) return;
                        self->read();
                      });
  }

  Local::socket sock_;
  asio::streambuf buf_;
  std::string out_;
  std::shared_ptr<ControlServer::Handler> handler_;
};

// True when something accepts connections on `path`.
bool socket_is_live(const std::string& path) {
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
  const bool live = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  ::close(fd);
  return live;
}

}  // namespace

ControlServer::ControlServer(asio::io_context& io, std::string path, Handler handler)
    : acceptor_(io),
      path_(std::move(path)),
      handler_(std::make_shared<Handler>(std::move(handler))),
      guard_("control socket " + path_),
      backoff_(io) {}

Result<std::unique_ptr<ControlServer>> ControlServer::create(asio::io_context& io,
                                                             const std::string& path,
                                                             Handler handler) {
  if (path.size() >= sizeof(sockaddr_un::sun_path)) {
    return Error::make(ENAMETOOLONG, "control socket path too long: " + path);
  }
  struct stat st;
  if (lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) {
      return Error::make(EEXIST, "control socket path exists and is not a socket: " + path);
    }
    if (socket_is_live(path)) {
      return Error::make(EADDRINUSE, "control socket " + path + " is in use by another process");
    }
    unlink(path.c_str());
  }
  auto server = std::unique_ptr<ControlServer>(new ControlServer(io, path, std::move(handler)));
  boost::system::error_code ec;
  server->acceptor_.open(Local(), ec);
  // Only root (the daemon's user) may drive the simulator and its faults.
  const mode_t old_umask = umask(0177);
  if (!ec) server->acceptor_.bind(Local::endpoint(path), ec);
  umask(old_umask);
  if (!ec) server->acceptor_.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return Error::make(EIO, "control socket " + path + ": " + ec.message());
  server->accept();
  return server;
}

ControlServer::~ControlServer() { close(); }

void ControlServer::close() {
  if (closed_) return;
  closed_ = true;
  boost::system::error_code ec;
  acceptor_.close(ec);
  backoff_.cancel();
  unlink(path_.c_str());
}

void ControlServer::accept() {
  acceptor_.async_accept([this](const boost::system::error_code& ec, Local::socket sock) {
    if (ec == asio::error::operation_aborted || closed_) return;
    if (ec) {
      std::string line;
      const auto wait = guard_.on_error(acceptor_.native_handle(), ec.value(), line);
      if (!line.empty()) spdlog::warn("{}", line);
      if (wait.count() > 0) {
        backoff_.expires_after(wait);
        backoff_.async_wait([this](const boost::system::error_code& e) {
          if (!e && !closed_) accept();
        });
        return;
      }
    } else {
      std::string line;
      if (guard_.admit(sock.native_handle(), line)) {
        std::make_shared<Session>(std::move(sock), handler_)->start();
      } else {
        if (!line.empty()) spdlog::warn("{}", line);
        boost::system::error_code ignore;
        sock.close(ignore);
      }
    }
    accept();
  });
}

}  // namespace resctrlfs::daemon
