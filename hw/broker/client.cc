// Implements the broker client (see client.h): blocking, one outstanding
// batch at a time, reconnecting once if the broker went away.
#include "hw/broker/client.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/blocking.h"

namespace resctrlfs::hw::broker {
namespace {

bool write_all(int fd, const void* buf, size_t n) {
  const char* p = static_cast<const char*>(buf);
  while (n > 0) {
    ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

bool read_all(int fd, void* buf, size_t n) {
  char* p = static_cast<char*>(buf);
  while (n > 0) {
    ssize_t r = ::recv(fd, p, n, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

}  // namespace

BrokerClient::~BrokerClient() { close_locked(); }

void BrokerClient::close_locked() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

Result<void> BrokerClient::connect() {
  std::lock_guard lock(mu_);
  return connect_locked();
}

Result<void> BrokerClient::connect_locked() {
  if (fd_ >= 0) return Ok();
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path_.size() >= sizeof(addr.sun_path))
    return Error::make(ENAMETOOLONG, "broker socket path too long: " + path_);
  std::memcpy(addr.sun_path, path_.c_str(), path_.size() + 1);
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Error::make(errno, "socket: " + std::string(std::strerror(errno)));
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    int e = errno;
    ::close(fd);
    return Error::make(
        e, "cannot reach the MSR broker (resctrl-msrd) at " + path_ + ": " + std::strerror(e));
  }
  fd_ = fd;
  if (connected_once_) reconnects_.fetch_add(1);
  connected_once_ = true;
  return Ok();
}

Result<std::vector<OpResult>> BrokerClient::transact(const std::vector<Op>& ops) {
  if (ops.empty()) return std::vector<OpResult>{};
  if (ops.size() > kMaxBatch) return Error::make(E2BIG, "broker batch too large");
  // The round trip may take long (a slow or restarting broker): whoever
  // holds a lock the wait does not need lets go of it meanwhile.
  BlockingSection waiting;
  std::lock_guard lock(mu_);
  RESCTRLFS_RETURN_IF_ERROR(connect_locked());
  auto r = transact_locked(ops);
  if (r.ok()) return r;
  // The broker may have restarted: one fresh connection, one retry.
  close_locked();
  RESCTRLFS_RETURN_IF_ERROR(connect_locked());
  return transact_locked(ops);
}

// Transport failures carry log text only (Error::log_only): no user may
// read about the broker in last_cmd_status.
Result<std::vector<OpResult>> BrokerClient::transact_locked(const std::vector<Op>& ops) {
  if (fd_ < 0) return Error::log_only(EIO, "broker connection closed");
  std::vector<WireOp> wire(ops.size());
  for (size_t i = 0; i < ops.size(); ++i) {
    wire[i].cpu = ops[i].cpu;
    wire[i].msr = ops[i].msr;
    wire[i].value = ops[i].value;
    wire[i].kind = static_cast<uint32_t>(ops[i].kind);
    wire[i].reserved = ops[i].width;
  }
  WireHeader h{kRequestMagic, static_cast<uint32_t>(ops.size())};
  if (!write_all(fd_, &h, sizeof(h)) ||
      !write_all(fd_, wire.data(), wire.size() * sizeof(WireOp))) {
    close_locked();
    return Error::log_only(EIO, "broker connection lost");
  }
  WireHeader rh;
  if (!read_all(fd_, &rh, sizeof(rh)) || rh.magic != kReplyMagic || rh.count != ops.size()) {
    close_locked();
    return Error::log_only(EIO, "broker closed the connection or replied garbage");
  }
  std::vector<WireResult> res(rh.count);
  if (!read_all(fd_, res.data(), res.size() * sizeof(WireResult))) {
    close_locked();
    return Error::log_only(EIO, "broker connection lost");
  }
  round_trips_.fetch_add(1);
  ops_sent_.fetch_add(ops.size());
  std::vector<OpResult> out(res.size());
  for (size_t i = 0; i < res.size(); ++i) out[i] = OpResult{res[i].err, res[i].value};
  return out;
}

Result<uint64_t> BrokerMsrDevice::read(unsigned cpu, uint32_t msr) {
  RESCTRLFS_ASSIGN_OR_RETURN(auto res, client_.transact({Op{cpu, msr, 0, OpKind::kRead}}));
  if (res[0].err != 0)
    return Error::make(res[0].err == EPERM ? EPERM : EIO, "MSR read refused or failed");
  return res[0].value;
}

Result<void> BrokerMsrDevice::write(unsigned cpu, uint32_t msr, uint64_t value) {
  RESCTRLFS_ASSIGN_OR_RETURN(auto res, client_.transact({Op{cpu, msr, value, OpKind::kWrite}}));
  if (res[0].err != 0)
    return Error::make(res[0].err == EPERM ? EPERM : EIO, "MSR write refused or failed");
  return Ok();
}

Result<uint64_t> BrokerMsrDevice::mmio_read(uint64_t addr, unsigned width) {
  RESCTRLFS_ASSIGN_OR_RETURN(auto res, client_.transact({Op::mmio(addr, width, 0, false)}));
  if (res[0].err != 0)
    return Error::make(res[0].err == EPERM ? EPERM : EIO, "MMIO read refused or failed");
  return res[0].value;
}

Result<void> BrokerMsrDevice::mmio_write(uint64_t addr, unsigned width, uint64_t value) {
  RESCTRLFS_ASSIGN_OR_RETURN(auto res, client_.transact({Op::mmio(addr, width, value, true)}));
  if (res[0].err != 0)
    return Error::make(res[0].err == EPERM ? EPERM : EIO, "MMIO write refused or failed");
  return Ok();
}

std::vector<PmtRegion> BrokerPmtDevice::pmt_regions() const {
  std::vector<PmtRegion> out;
  for (const auto& a : aggregators_) out.push_back(a.region);
  return out;
}

Result<uint64_t> BrokerPmtDevice::pmt_read64(size_t region, uint64_t offset) {
  if (region >= aggregators_.size() || offset > UINT32_MAX)
    return Error::log_only(EIO, "PMT read outside the aggregators");
  RESCTRLFS_ASSIGN_OR_RETURN(
      auto res, dev_->client().transact(
                    {Op::pmt_read(aggregators_[region].telem, static_cast<uint32_t>(offset))}));
  if (res[0].err != 0) return Error::log_only(EIO, "PMT read refused or failed");
  return res[0].value;
}

void BrokerMsrDevice::run(std::vector<MmioOp>& ops) {
  if (ops.empty()) return;
  if (ops.size() > kMaxBatch) {
    for (MmioOp& op : ops) op.err = EIO;
    return;
  }
  std::vector<Op> req;
  req.reserve(ops.size());
  for (const MmioOp& op : ops)
    req.push_back(Op::mmio(op.addr, op.width, op.write ? op.value : 0, op.write));
  auto res = client_.transact(req);
  for (size_t i = 0; i < ops.size(); ++i) {
    if (!res.ok()) {
      ops[i].err = EIO;
      continue;
    }
    const OpResult& r = (*res)[i];
    ops[i].err = r.err == 0 ? 0 : r.err == EPERM ? EPERM : r.err == ECANCELED ? ECANCELED : EIO;
    if (r.err == 0 && !ops[i].write) ops[i].value = r.value;
  }
}

void BrokerMsrDevice::run(std::vector<MsrOp>& ops) {
  bool failed = false;
  for (size_t start = 0; start < ops.size(); start += kMaxBatch) {
    const size_t end = std::min<size_t>(ops.size(), start + kMaxBatch);
    if (failed) {
      for (size_t i = start; i < end; ++i) ops[i].err = ECANCELED;
      continue;
    }
    std::vector<Op> req;
    req.reserve(end - start);
    for (size_t i = start; i < end; ++i)
      req.push_back(Op{ops[i].cpu, ops[i].msr, ops[i].write ? ops[i].value : 0,
                       ops[i].write ? OpKind::kWrite : OpKind::kRead});
    auto res = client_.transact(req);
    if (!res.ok()) {
      // The transport failed: what ran is unknown (reconnects() tells).
      for (size_t i = start; i < end; ++i) ops[i].err = EIO;
      failed = true;
      continue;
    }
    for (size_t i = start; i < end; ++i) {
      const OpResult& r = (*res)[i - start];
      ops[i].err = r.err == 0 ? 0 : r.err == EPERM ? EPERM : r.err == ECANCELED ? ECANCELED : EIO;
      if (r.err == 0 && !ops[i].write) ops[i].value = r.value;
      if (r.err != 0) failed = true;
    }
  }
}

}  // namespace resctrlfs::hw::broker
