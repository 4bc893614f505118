// Implements HttpServer (see http_server.h) with Boost.Beast: one accept
// loop and one session object per connection, all on the caller's
// io_context (single-threaded: the handler runs on the loop).
#include "exporter/http_server.h"

#include <netdb.h>
#include <sys/socket.h>

#include <boost/asio/ip/address.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>

#include "base/fd_reserve.h"
#include "base/log_rate_limit.h"

namespace resctrlfs::exporter {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

// Connections per peer address; a PeerSlot holds one for its lifetime.
using PeerCounts = std::map<asio::ip::address, unsigned>;

class PeerSlot {
 public:
  PeerSlot(std::shared_ptr<PeerCounts> counts, asio::ip::address addr)
      : counts_(std::move(counts)), addr_(std::move(addr)) {
    ++(*counts_)[addr_];
  }
  ~PeerSlot() {
    auto it = counts_->find(addr_);
    if (--it->second == 0) counts_->erase(it);
  }
  PeerSlot(const PeerSlot&) = delete;
  PeerSlot& operator=(const PeerSlot&) = delete;

 private:
  std::shared_ptr<PeerCounts> counts_;
  asio::ip::address addr_;
};

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket s, const HttpHandler& h, std::chrono::milliseconds idle_timeout,
          std::shared_ptr<PeerCounts> counts, const asio::ip::address& peer)
      : stream_(std::move(s)),
        handler_(h),
        idle_timeout_(idle_timeout),
        slot_(std::move(counts), peer) {}

  void start() { read(); }

 private:
  void read() {
    parser_.emplace();
    parser_->header_limit(8192);
    parser_->body_limit(0);
    stream_.expires_after(idle_timeout_);
    http::async_read(
        stream_, buf_, *parser_,
        [self = shared_from_this()](beast::error_code ec, size_t) { self->on_read(ec); });
  }

  void on_read(beast::error_code ec) {
    if (ec == http::error::end_of_stream) {
      beast::error_code ignored;
      stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
      return;
    }
    if (ec) {
      // A bad request gets an answer when the parser got far enough to say so.
      if (ec == http::error::body_limit || ec == http::error::header_limit) {
        respond(413, "text/plain; charset=utf-8", "request too large\n", false, false, 11);
      } else if (ec != beast::error::timeout && ec != asio::error::operation_aborted &&
                 ec != asio::error::connection_reset && ec != asio::error::eof) {
        respond(400, "text/plain; charset=utf-8", "bad request\n", false, false, 11);
      }
      return;
    }
    const auto& req = parser_->get();
    const bool keep = req.keep_alive();
    const unsigned ver = req.version();
    if (req.method() != http::verb::get && req.method() != http::verb::head) {
      respond(405, "text/plain; charset=utf-8", "only GET and HEAD\n", keep, false, ver);
      return;
    }
    HttpResponse r;
    try {
      r = handler_(std::string(req.target()));
    } catch (const std::exception& e) {
      r = {500, "text/plain; charset=utf-8", std::string("internal error: ") + e.what() + "\n"};
    }
    respond(r.status, r.content_type, std::move(r.body), keep, req.method() == http::verb::head,
            ver);
  }

  void respond(unsigned status, const std::string& type, std::string body, bool keep, bool head,
               unsigned version) {
    auto res = std::make_shared<http::response<http::string_body>>(
        static_cast<http::status>(status), version);
    res->set(http::field::server, "resctrlfs-exporter");
    res->set(http::field::content_type, type);
    res->set(http::field::cache_control, "no-store");
    res->keep_alive(keep);
    const size_t len = body.size();
    if (!head) res->body() = std::move(body);
    res->prepare_payload();
    if (head) res->content_length(len);
    stream_.expires_after(idle_timeout_);
    http::async_write(stream_, *res,
                      [self = shared_from_this(), res, keep](beast::error_code ec, size_t) {
                        if (ec) return;
                        if (keep) {
                          self->read();
                        } else {
                          beast::error_code ignored;
                          self->stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
                        }
                      });
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buf_;
  std::optional<http::request_parser<http::empty_body>> parser_;
  const HttpHandler& handler_;
  const std::chrono::milliseconds idle_timeout_;
  PeerSlot slot_;
};

}  // namespace

struct HttpServer::Impl {
  Impl(asio::io_context& io, HttpHandler h, HttpServerOptions o)
      : io(io), acceptor(io), backoff(io), handler(std::move(h)), opts(std::move(o)) {}
  void log(const std::string& line) {
    if (opts.log) {
      opts.log(line);
    } else {
      std::fprintf(stderr, "resctrlfs-exporter: %s\n", line.c_str());
      std::fflush(stderr);
    }
  }
  asio::io_context& io;
  tcp::acceptor acceptor;
  asio::steady_timer backoff;
  HttpHandler handler;
  HttpServerOptions opts;
  std::shared_ptr<PeerCounts> peers = std::make_shared<PeerCounts>();
  AcceptGuard guard{"HTTP server"};
  LogRateLimit refused_log{1, std::chrono::seconds(10)};
};

HttpServer::HttpServer(asio::io_context& io, HttpHandler handler, HttpServerOptions opts)
    : impl_(std::make_unique<Impl>(io, std::move(handler), std::move(opts))) {}

HttpServer::~HttpServer() = default;

Result<void> HttpServer::listen(const tcp::endpoint& ep) {
  beast::error_code ec;
  auto fail = [&](const char* what) {
    return Error::make(ec.value() ? ec.value() : EINVAL,
                       std::string(what) + " " + ep.address().to_string() + ":" +
                           std::to_string(ep.port()) + ": " + ec.message());
  };
  impl_->acceptor.open(ep.protocol(), ec);
  if (ec) return fail("cannot open a socket for");
  impl_->acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  impl_->acceptor.bind(ep, ec);
  if (ec) return fail("cannot bind");
  impl_->acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return fail("cannot listen on");
  accept();
  return {};
}

tcp::endpoint HttpServer::local_endpoint() const {
  beast::error_code ec;
  return impl_->acceptor.local_endpoint(ec);
}

size_t HttpServer::sessions() const {
  size_t n = 0;
  for (const auto& [_, count] : *impl_->peers) n += count;
  return n;
}

void HttpServer::accept() {
  impl_->acceptor.async_accept([this](beast::error_code ec, tcp::socket s) {
    if (ec == asio::error::operation_aborted) return;
    if (ec) {
      std::string line;
      const auto wait = impl_->guard.on_error(impl_->acceptor.native_handle(), ec.value(), line);
      if (!line.empty()) impl_->log(line);
      if (wait.count() > 0) {
        impl_->backoff.expires_after(wait);
        impl_->backoff.async_wait([this](beast::error_code e) {
          if (!e) accept();
        });
        return;
      }
      accept();
      return;
    }
    beast::error_code pec;
    if (std::string line; !impl_->guard.admit(s.native_handle(), line)) {
      if (!line.empty()) impl_->log(line);
      s.close(pec);
      accept();
      return;
    }
    const asio::ip::address peer = s.remote_endpoint(pec).address();
    auto it = impl_->peers->find(peer);
    if (!pec && it != impl_->peers->end() && it->second >= impl_->opts.max_sessions_per_peer) {
      s.close(pec);
      if (impl_->refused_log.admit()) {
        const uint64_t more = impl_->refused_log.take_suppressed();
        impl_->log("closed a connection from " + peer.to_string() + ": it holds " +
                   std::to_string(impl_->opts.max_sessions_per_peer) + " already" +
                   (more ? " (" + std::to_string(more) + " more since the last such line)" : ""));
      }
    } else if (!pec) {
      std::make_shared<Session>(std::move(s), impl_->handler, impl_->opts.idle_timeout,
                                impl_->peers, peer)
          ->start();
    }
    accept();
  });
}

namespace {

constexpr const char* kListenForms =
    "give ADDR:PORT, e.g. 127.0.0.1:9835, [::1]:9835, localhost:9835, 0.0.0.0:9835 (every "
    "IPv4 address), [::]:9835, or :9835 (127.0.0.1)";

// The first address of a host name, IPv4 first (localhost has both, and
// which comes first is the resolver's choice).
Result<asio::ip::address> resolve_host(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (const int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &res); rc != 0) {
    return Error::make(EINVAL, std::string(::gai_strerror(rc)));
  }
  std::optional<asio::ip::address> v4, any;
  for (const addrinfo* a = res; a != nullptr; a = a->ai_next) {
    asio::ip::tcp::endpoint ep;
    if (a->ai_addrlen > ep.capacity()) continue;
    std::memcpy(ep.data(), a->ai_addr, a->ai_addrlen);
    if (!any) any = ep.address();
    if (!v4 && ep.address().is_v4()) v4 = ep.address();
  }
  ::freeaddrinfo(res);
  if (!any) return Error::make(EINVAL, "no IPv4 or IPv6 address");
  return v4 ? *v4 : *any;
}

}  // namespace

Result<tcp::endpoint> parse_listen_address(const std::string& s) {
  const size_t colon = s.rfind(':');
  if (colon == std::string::npos) {
    return Error::make(EINVAL, "listen address '" + s + "' has no port: " + kListenForms);
  }
  std::string host = s.substr(0, colon);
  const std::string port_s = s.substr(colon + 1);
  unsigned port = 0;
  auto [p, ec] = std::from_chars(port_s.data(), port_s.data() + port_s.size(), port);
  if (port_s.empty() || ec != std::errc() || p != port_s.data() + port_s.size() || port > 65535) {
    return Error::make(EINVAL, "listen address '" + s + "': bad port '" + port_s +
                                   "' (0 to 65535; 0: any free port): " + kListenForms);
  }
  if (host.empty()) host = "127.0.0.1";
  const bool bracketed = host.size() >= 2 && host.front() == '[' && host.back() == ']';
  if (bracketed) host = host.substr(1, host.size() - 2);
  beast::error_code aec;
  asio::ip::address addr = asio::ip::make_address(host, aec);
  if (aec && (bracketed || host.find_first_of(":[]") != std::string::npos)) {
    return Error::make(
        EINVAL, "listen address '" + s + "': '" + host + "' is not an IP address: " + kListenForms);
  }
  if (aec) {
    Result<asio::ip::address> r = resolve_host(host);
    if (!r.ok()) {
      return Error::make(EINVAL, "listen address '" + s + "': cannot resolve '" + host + "' (" +
                                     r.error().message + "): " + kListenForms);
    }
    addr = *r;
  }
  return tcp::endpoint(addr, static_cast<unsigned short>(port));
}

}  // namespace resctrlfs::exporter
