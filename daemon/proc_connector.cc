// Implements ProcConnector: subscription to the proc connector and decoding
// of its fork/exit events.
#include "daemon/proc_connector.h"

#include <linux/cn_proc.h>
#include <linux/connector.h>
#include <linux/netlink.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace resctrlfs::daemon {

namespace {

Result<void> send_mcast_op(int fd, proc_cn_mcast_op op) {
  // nlmsghdr + cn_msg + the 4-byte operation (the form every kernel accepts;
  // it subscribes to all events).
  alignas(nlmsghdr) char buf[NLMSG_SPACE(sizeof(cn_msg) + sizeof(op))] = {};
  auto* nlh = reinterpret_cast<nlmsghdr*>(buf);
  nlh->nlmsg_len = NLMSG_LENGTH(sizeof(cn_msg) + sizeof(op));
  nlh->nlmsg_type = NLMSG_DONE;
  nlh->nlmsg_pid = 0;
  auto* msg = static_cast<cn_msg*>(NLMSG_DATA(nlh));
  msg->id.idx = CN_IDX_PROC;
  msg->id.val = CN_VAL_PROC;
  msg->len = sizeof(op);
  std::memcpy(msg->data, &op, sizeof(op));
  if (send(fd, buf, nlh->nlmsg_len, 0) < 0) {
    return Error::make(errno, std::string("proc connector subscribe: ") + strerror(errno));
  }
  return Ok();
}

}  // namespace

std::vector<ProcEvent> parse_proc_datagram(const void* data, size_t len) {
  std::vector<ProcEvent> out;
  const char* p = static_cast<const char*>(data);
  while (len >= sizeof(nlmsghdr)) {
    nlmsghdr nlh;
    std::memcpy(&nlh, p, sizeof(nlh));
    if (nlh.nlmsg_len < sizeof(nlmsghdr) || nlh.nlmsg_len > len) break;
    const size_t payload_len = nlh.nlmsg_len - NLMSG_HDRLEN;
    const char* payload = p + NLMSG_HDRLEN;
    if (nlh.nlmsg_type != NLMSG_ERROR && nlh.nlmsg_type != NLMSG_NOOP &&
        payload_len >= sizeof(cn_msg)) {
      cn_msg msg;
      std::memcpy(&msg, payload, sizeof(msg));
      const size_t data_len = payload_len - sizeof(cn_msg);
      if (msg.id.idx == CN_IDX_PROC && msg.id.val == CN_VAL_PROC && msg.len <= data_len &&
          msg.len >= offsetof(proc_event, event_data) + sizeof(proc_event::event_data.fork)) {
        proc_event ev;
        std::memset(&ev, 0, sizeof(ev));
        std::memcpy(&ev, payload + sizeof(cn_msg), std::min<size_t>(msg.len, sizeof(ev)));
        if (ev.what == proc_event::PROC_EVENT_FORK) {
          const auto& f = ev.event_data.fork;
          const bool is_thread = f.child_pid != f.child_tgid;
          out.push_back(ProcEvent{ProcEvent::Kind::kFork, is_thread ? f.child_tgid : f.parent_pid,
                                  f.child_pid, ev.timestamp_ns, f.child_tgid});
        } else if (ev.what == proc_event::PROC_EVENT_EXIT) {
          out.push_back(ProcEvent{ProcEvent::Kind::kExit, 0, ev.event_data.exit.process_pid,
                                  ev.timestamp_ns, ev.event_data.exit.process_tgid});
        } else if (ev.what == proc_event::PROC_EVENT_EXEC) {
          out.push_back(ProcEvent{ProcEvent::Kind::kExec, 0, ev.event_data.exec.process_tgid,
                                  ev.timestamp_ns, ev.event_data.exec.process_tgid});
        }
      }
    }
    const size_t step = NLMSG_ALIGN(nlh.nlmsg_len);
    if (step >= len) break;
    p += step;
    len -= step;
  }
  return out;
}

Result<std::unique_ptr<ProcConnector>> ProcConnector::open() {
  const int fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, NETLINK_CONNECTOR);
  if (fd < 0) return Error::make(errno, std::string("proc connector socket: ") + strerror(errno));
  auto pc = std::unique_ptr<ProcConnector>(new ProcConnector(fd));
  // A fork storm must not overflow the socket before the loop drains it.
  const int rcvbuf = 4 << 20;
  if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof(rcvbuf)) != 0) {
    (void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
  }
  sockaddr_nl addr{};
  addr.nl_family = AF_NETLINK;
  addr.nl_groups = CN_IDX_PROC;
  addr.nl_pid = 0;  // let the kernel pick a port id
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    return Error::make(errno, std::string("proc connector bind: ") + strerror(errno));
  }
  RESCTRLFS_RETURN_IF_ERROR(send_mcast_op(fd, PROC_CN_MCAST_LISTEN));
  return pc;
}

ProcConnector::~ProcConnector() {
  if (fd_ >= 0) {
    (void)send_mcast_op(fd_, PROC_CN_MCAST_IGNORE);
    close(fd_);
  }
}

std::vector<ProcEvent> ProcConnector::drain(bool* overflowed) {
  std::vector<ProcEvent> out;
  alignas(nlmsghdr) char buf[16384];
  for (;;) {
    const ssize_t n = recv(fd_, buf, sizeof(buf), 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == ENOBUFS) {
        if (overflowed) *overflowed = true;
        continue;
      }
      break;  // EAGAIN: drained
    }
    std::vector<ProcEvent> evs = parse_proc_datagram(buf, static_cast<size_t>(n));
    out.insert(out.end(), evs.begin(), evs.end());
  }
  return out;
}

}  // namespace resctrlfs::daemon
