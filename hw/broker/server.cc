// Implements the resctrl-msrd server (see server.h).
#include "hw/broker/server.h"

#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cstdio>

namespace resctrlfs::hw::broker {

namespace asio = boost::asio;
using asio::local::stream_protocol;

class BrokerServer::Session : public std::enable_shared_from_this<Session> {
 public:
  Session(BrokerServer& server, stream_protocol::socket sock, std::string peer)
      : server_(server), sock_(std::move(sock)), peer_(std::move(peer)) {}

  void read_header() {
    auto self = shared_from_this();
    asio::async_read(
        sock_, asio::buffer(&header_, sizeof(header_)),
        [this, self](boost::system::error_code ec, size_t) {
          if (ec) return;  // peer closed
          if (header_.magic != kRequestMagic || header_.count == 0 || header_.count > kMaxBatch) {
            server_.log_("refused malformed request from " + peer_);
            return;  // dropping the session closes the socket
          }
          ops_.resize(header_.count);
          read_ops();
        });
  }

 private:
  void read_ops() {
    auto self = shared_from_this();
    asio::async_read(
        sock_, asio::buffer(ops_.data(), ops_.size() * sizeof(WireOp)),
        [this, self](boost::system::error_code ec, size_t) {
          if (ec) return;
          results_ = server_.execute(ops_, peer_);
          reply_header_ = WireHeader{kReplyMagic, static_cast<uint32_t>(results_.size())};
          std::array<asio::const_buffer, 2> bufs = {
              asio::buffer(&reply_header_, sizeof(reply_header_)),
              asio::buffer(results_.data(), results_.size() * sizeof(WireResult))};
          asio::async_write(sock_, bufs, [this, self](boost::system::error_code e, size_t) {
            if (!e) read_header();
          });
        });
  }

  BrokerServer& server_;
  stream_protocol::socket sock_;
  std::string peer_;
  WireHeader header_;
  std::vector<WireOp> ops_;
  WireHeader reply_header_;
  std::vector<WireResult> results_;
};

BrokerServer::BrokerServer(asio::io_context& io, std::string socket_path, uid_t allowed_uid,
                           Policy policy, std::shared_ptr<MsrDevice> msr, Logger log,
                           std::shared_ptr<MmioDevice> mmio,
                           std::shared_ptr<PmtTelemetryDevice> pmt)
    : path_(std::move(socket_path)),
      allowed_uid_(allowed_uid),
      policy_(std::move(policy)),
      msr_(std::move(msr)),
      mmio_(std::move(mmio)),
      pmt_(std::move(pmt)),
      log_(std::move(log)),
      acceptor_(io),
      guard_("broker socket " + path_),
      backoff_(io) {}

BrokerServer::~BrokerServer() { stop(); }

Result<void> BrokerServer::start() {
  ::unlink(path_.c_str());  // a stale socket from a previous run
  boost::system::error_code ec;
  stream_protocol::endpoint ep(path_);
  acceptor_.open(ep.protocol(), ec);
  if (!ec) acceptor_.bind(ep, ec);
  if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return Error::make(ec.value(), "cannot listen on " + path_ + ": " + ec.message());
  accept_next();
  return Ok();
}

void BrokerServer::stop() {
  if (acceptor_.is_open()) {
    boost::system::error_code ec;
    acceptor_.close(ec);
    ::unlink(path_.c_str());
  }
  backoff_.cancel();
}

void BrokerServer::accept_next() {
  acceptor_.async_accept([this](boost::system::error_code ec, stream_protocol::socket sock) {
    if (ec == asio::error::operation_aborted) return;
    if (ec) {
      std::string line;
      const auto wait = guard_.on_error(acceptor_.native_handle(), ec.value(), line);
      if (!line.empty()) log_(line);
      if (wait.count() == 0) {
        accept_next();
        return;
      }
      backoff_.expires_after(wait);
      backoff_.async_wait([this](boost::system::error_code e) {
        if (!e && acceptor_.is_open()) accept_next();
      });
      return;
    }
    if (std::string line; !guard_.admit(sock.native_handle(), line)) {
      if (!line.empty()) log_(line);
      boost::system::error_code ignore;
      sock.close(ignore);
      accept_next();
      return;
    }
    ucred cred{};
    socklen_t len = sizeof(cred);
    std::string peer = "unknown peer";
    bool allowed = false;
    if (::getsockopt(sock.native_handle(), SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0) {
      peer = "pid " + std::to_string(cred.pid) + " uid " + std::to_string(cred.uid);
      allowed = cred.uid == allowed_uid_;
    }
    if (!allowed) {
      log_("refused connection from " + peer + " (only uid " + std::to_string(allowed_uid_) +
           " may use the broker)");
      boost::system::error_code ignore;
      sock.close(ignore);
    } else {
      std::make_shared<Session>(*this, std::move(sock), peer)->read_header();
    }
    accept_next();
  });
}

std::vector<WireResult> BrokerServer::execute(const std::vector<WireOp>& ops,
                                              const std::string& peer) {
  std::vector<WireResult> out(ops.size());
  for (const auto& op : ops) {
    const OpKind kind = static_cast<OpKind>(op.kind);
    Result<void> ok = Ok();
    char buf[160];
    if (kind == OpKind::kPmtRead) {
      if (!pmt_) {
        ok = Error::log_only(EPERM, "this broker serves no PMT telemetry");
      } else if (auto idx = policy_.check_pmt(op.cpu, op.msr, op.reserved); !idx.ok()) {
        ok = idx.error();
      }
      std::snprintf(buf, sizeof(buf),
                    "refused batch from %s: PMT read of %u bytes at telem%u offset 0x%x: ",
                    peer.c_str(), op.reserved, op.cpu, op.msr);
    } else if (is_mmio(kind)) {
      ok = mmio_ ? policy_.check_mmio(op.mmio_addr(), op.reserved)
                 : Result<void>(Error::log_only(EPERM, "this broker serves no MMIO"));
      std::snprintf(buf, sizeof(buf),
                    "refused batch from %s: MMIO %s of %u bytes at 0x%llx: ", peer.c_str(),
                    kind == OpKind::kMmioWrite ? "write" : "read", op.reserved,
                    static_cast<unsigned long long>(op.mmio_addr()));
    } else {
      ok = policy_.check(op.cpu, op.msr, op.value, kind);
      std::snprintf(buf, sizeof(buf),
                    "refused batch from %s: %s cpu %u msr 0x%x value 0x%llx: ", peer.c_str(),
                    op.kind == 1 ? "write" : "read", op.cpu, op.msr,
                    static_cast<unsigned long long>(op.value));
    }
    if (!ok.ok()) {
      log_(buf + ok.error().message);
      for (auto& r : out) r.err = EPERM;
      return out;
    }
  }
  bool failed = false;
  for (size_t i = 0; i < ops.size(); ++i) {
    if (failed) {
      out[i].err = ECANCELED;
      continue;
    }
    const WireOp& op = ops[i];
    if (op.kind == static_cast<uint32_t>(OpKind::kPmtRead)) {
      auto idx = policy_.check_pmt(op.cpu, op.msr, op.reserved);
      auto v = idx.ok() ? pmt_->pmt_read64(*idx, op.msr) : Result<uint64_t>(idx.error());
      if (v.ok()) {
        out[i].value = *v;
      } else {
        out[i].err = EIO;
      }
    } else if (op.kind == static_cast<uint32_t>(OpKind::kMmioRead)) {
      auto v = mmio_->mmio_read(op.mmio_addr(), op.reserved);
      if (v.ok()) {
        out[i].value = *v;
      } else {
        out[i].err = EIO;
      }
    } else if (op.kind == static_cast<uint32_t>(OpKind::kMmioWrite)) {
      if (!mmio_->mmio_write(op.mmio_addr(), op.reserved, op.value).ok()) out[i].err = EIO;
    } else if (op.kind == static_cast<uint32_t>(OpKind::kRead)) {
      auto v = msr_->read(op.cpu, op.msr);
      if (v.ok()) {
        out[i].value = *v;
      } else {
        out[i].err = EIO;
      }
    } else {
      if (!msr_->write(op.cpu, op.msr, op.value).ok()) out[i].err = EIO;
    }
    failed = out[i].err != 0;
  }
  return out;
}

}  // namespace resctrlfs::hw::broker
