// Tests the decoding of proc connector datagrams: fork of a process, of a
// thread (parent = thread-group leader), exit, several messages in one
// datagram, foreign and truncated messages.
#include <catch2/catch.hpp>

#include <linux/cn_proc.h>
#include <linux/connector.h>
#include <linux/netlink.h>

#include <cstring>
#include <vector>

#include "daemon/proc_connector.h"

using resctrlfs::daemon::parse_proc_datagram;
using resctrlfs::daemon::ProcEvent;

namespace {

// Appends one netlink message carrying `ev` as the kernel sends it.
void append(std::vector<char>& buf, const proc_event& ev, __u32 idx = CN_IDX_PROC) {
  const size_t payload = sizeof(cn_msg) + sizeof(proc_event);
  const size_t start = buf.size();
  buf.resize(start + NLMSG_SPACE(payload));
  nlmsghdr nlh{};
  nlh.nlmsg_len = NLMSG_LENGTH(payload);
  nlh.nlmsg_type = NLMSG_DONE;
  std::memcpy(buf.data() + start, &nlh, sizeof(nlh));
  cn_msg msg{};
  msg.id.idx = idx;
  msg.id.val = CN_VAL_PROC;
  msg.len = sizeof(proc_event);
  std::memcpy(buf.data() + start + NLMSG_HDRLEN, &msg, sizeof(msg));
  std::memcpy(buf.data() + start + NLMSG_HDRLEN + sizeof(cn_msg), &ev, sizeof(ev));
}

proc_event fork_event(pid_t parent_pid, pid_t parent_tgid, pid_t child_pid, pid_t child_tgid) {
  proc_event ev{};
  ev.what = proc_event::PROC_EVENT_FORK;
  ev.event_data.fork.parent_pid = parent_pid;
  ev.event_data.fork.parent_tgid = parent_tgid;
  ev.event_data.fork.child_pid = child_pid;
  ev.event_data.fork.child_tgid = child_tgid;
  return ev;
}

proc_event exit_event(pid_t pid, pid_t tgid) {
  proc_event ev{};
  ev.what = proc_event::PROC_EVENT_EXIT;
  ev.event_data.exit.process_pid = pid;
  ev.event_data.exit.process_tgid = tgid;
  return ev;
}

}  // namespace

TEST_CASE("fork of a process: the forking thread is the parent") {
  std::vector<char> buf;
  // Thread 101 of process 100 forks process 200.
  append(buf, fork_event(101, 100, 200, 200));
  auto evs = parse_proc_datagram(buf.data(), buf.size());
  REQUIRE(evs.size() == 1);
  CHECK(evs[0].kind == ProcEvent::Kind::kFork);
  CHECK(evs[0].parent_tid == 101);
  CHECK(evs[0].tid == 200);
}

TEST_CASE("new thread: the connector names the process's parent, we use the leader") {
  std::vector<char> buf;
  // Process 300 (whose parent is 1) creates thread 301.
  append(buf, fork_event(1, 1, 301, 300));
  auto evs = parse_proc_datagram(buf.data(), buf.size());
  REQUIRE(evs.size() == 1);
  CHECK(evs[0].parent_tid == 300);
  CHECK(evs[0].tid == 301);
  CHECK(evs[0].tgid == 300);
}

TEST_CASE("exit, exec, several messages per datagram, other events ignored") {
  std::vector<char> buf;
  append(buf, exit_event(301, 300));
  proc_event exec{};
  exec.what = proc_event::PROC_EVENT_EXEC;
  exec.event_data.exec.process_pid = 400;
  exec.event_data.exec.process_tgid = 400;
  append(buf, exec);
  proc_event uid{};
  uid.what = proc_event::PROC_EVENT_UID;
  append(buf, uid);
  append(buf, fork_event(5, 5, 6, 6));
  append(buf, fork_event(7, 7, 8, 8), /*idx=*/CN_IDX_PROC + 1);  // another connector
  auto evs = parse_proc_datagram(buf.data(), buf.size());
  REQUIRE(evs.size() == 3);
  CHECK(evs[0].kind == ProcEvent::Kind::kExit);
  CHECK(evs[0].tid == 301);
  CHECK(evs[0].tgid == 300);
  CHECK(evs[1].kind == ProcEvent::Kind::kExec);
  CHECK(evs[1].tid == 400);
  CHECK(evs[2].kind == ProcEvent::Kind::kFork);
  CHECK(evs[2].tid == 6);
  CHECK(evs[2].tgid == 6);
}

TEST_CASE("truncated or garbage datagrams decode to nothing, without reading past the end") {
  std::vector<char> buf;
  append(buf, fork_event(1, 1, 2, 2));
  for (size_t len = 0; len < buf.size(); ++len) {
    std::vector<char> cut(buf.begin(), buf.begin() + static_cast<long>(len));
    CHECK(parse_proc_datagram(cut.data(), cut.size()).empty());
  }
  std::vector<char> junk(64, '\xff');
  CHECK(parse_proc_datagram(junk.data(), junk.size()).empty());
}
