// Tests the decoding of sched:sched_process_fork as the daemon reads it: the
// format file of a recent kernel (comm as __data_loc) and of an older one
// (comm as char[16], so the pids sit elsewhere), raw records laid out by
// those formats, perf sample and lost records, the ring walk across the end
// of the buffer, and the merge with the proc connector's events. Malformed
// input decodes to nothing.
#include <catch2/catch.hpp>

#include <linux/perf_event.h>

#include <cstring>
#include <string>
#include <vector>

#include "daemon/fork_tracepoint.h"

using resctrlfs::daemon::ForkTraceFormat;
using resctrlfs::daemon::parse_fork_format;
using resctrlfs::daemon::parse_fork_raw;
using resctrlfs::daemon::parse_perf_record;
using resctrlfs::daemon::PerfForkRecord;
using resctrlfs::daemon::ProcEvent;
using resctrlfs::daemon::walk_perf_ring;

namespace {

// As a 6.x kernel prints it.
const char* const kFormatDataLoc =
    "name: sched_process_fork\n"
    "ID: 366\n"
    "format:\n"
    "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
    "\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
    "\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
    "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n"
    "\n"
    "\tfield:__data_loc char[] parent_comm;\toffset:8;\tsize:4;\tsigned:0;\n"
    "\tfield:pid_t parent_pid;\toffset:12;\tsize:4;\tsigned:1;\n"
    "\tfield:__data_loc char[] child_comm;\toffset:16;\tsize:4;\tsigned:0;\n"
    "\tfield:pid_t child_pid;\toffset:20;\tsize:4;\tsigned:1;\n"
    "\n"
    "print fmt: \"comm=%s pid=%d child_comm=%s child_pid=%d\", __get_str(parent_comm), "
    "REC->parent_pid, __get_str(child_comm), REC->child_pid\n";

// As a 5.x kernel prints it (fixed-size comm arrays, common_padding).
const char* const kFormatArrays =
    "name: sched_process_fork\n"
    "ID: 311\n"
    "format:\n"
    "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
    "\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
    "\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
    "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n"
    "\n"
    "\tfield:char parent_comm[16];\toffset:8;\tsize:16;\tsigned:0;\n"
    "\tfield:pid_t parent_pid;\toffset:24;\tsize:4;\tsigned:1;\n"
    "\tfield:char child_comm[16];\toffset:28;\tsize:16;\tsigned:0;\n"
    "\tfield:pid_t child_pid;\toffset:44;\tsize:4;\tsigned:1;\n"
    "\n"
    "print fmt: \"comm=%s pid=%d child_comm=%s child_pid=%d\", REC->parent_comm, "
    "REC->parent_pid, REC->child_comm, REC->child_pid\n";

template <typename T>
void put(std::vector<char>& buf, size_t at, T v) {
  if (buf.size() < at + sizeof(v)) buf.resize(at + sizeof(v));
  std::memcpy(buf.data() + at, &v, sizeof(v));
}

// A raw record of `len` bytes with the pids where `fmt` says, and noise
// (0x5a) everywhere else, including where the other format has its pids.
std::vector<char> raw_record(const ForkTraceFormat& fmt, size_t len, int32_t parent,
                             int32_t child) {
  std::vector<char> raw(len, '\x5a');
  put<uint16_t>(raw, 0, 366);
  put<int32_t>(raw, fmt.parent_pid_offset, parent);
  put<int32_t>(raw, fmt.child_pid_offset, child);
  return raw;
}

// A PERF_RECORD_SAMPLE with PERF_SAMPLE_TIME | PERF_SAMPLE_RAW around `raw`,
// padded to 8 bytes as the kernel does.
std::vector<char> sample_record(uint64_t time, const std::vector<char>& raw) {
  std::vector<char> rec;
  const size_t unpadded = sizeof(perf_event_header) + 8 + 4 + raw.size();
  const size_t size = (unpadded + 7) / 8 * 8;
  rec.resize(size, '\0');
  perf_event_header hdr{};
  hdr.type = PERF_RECORD_SAMPLE;
  hdr.size = static_cast<uint16_t>(size);
  put(rec, 0, hdr);
  put<uint64_t>(rec, sizeof(hdr), time);
  put<uint32_t>(rec, sizeof(hdr) + 8, static_cast<uint32_t>(size - sizeof(hdr) - 8 - 4));
  std::memcpy(rec.data() + sizeof(hdr) + 12, raw.data(), raw.size());
  return rec;
}

std::vector<char> lost_record(uint64_t lost) {
  std::vector<char> rec;
  perf_event_header hdr{};
  hdr.type = PERF_RECORD_LOST;
  hdr.size = sizeof(hdr) + 16;
  put(rec, 0, hdr);
  put<uint64_t>(rec, sizeof(hdr), 7);  // id
  put<uint64_t>(rec, sizeof(hdr) + 8, lost);
  return rec;
}

}  // namespace

TEST_CASE("format file of a recent kernel: pid fields found by name") {
  auto fmt = parse_fork_format(kFormatDataLoc);
  REQUIRE(fmt.ok());
  CHECK(fmt->parent_pid_offset == 12);
  CHECK(fmt->parent_pid_size == 4);
  CHECK(fmt->child_pid_offset == 20);
  CHECK(fmt->child_pid_size == 4);
}

TEST_CASE("format file with comm arrays: other offsets, same fields") {
  auto fmt = parse_fork_format(kFormatArrays);
  REQUIRE(fmt.ok());
  CHECK(fmt->parent_pid_offset == 24);
  CHECK(fmt->child_pid_offset == 44);
}

TEST_CASE("format files without both pid fields, or with odd sizes, are refused") {
  std::string no_child = kFormatDataLoc;
  no_child.replace(no_child.find("child_pid;"), 10, "child_xyz;");
  CHECK(parse_fork_format(no_child).error().code == EINVAL);
  std::string odd = kFormatDataLoc;
  odd.replace(odd.find("offset:12;\tsize:4;"), 18, "offset:12;\tsize:2;");
  CHECK(parse_fork_format(odd).error().code == EINVAL);
  std::string bad_offset = kFormatDataLoc;
  bad_offset.replace(bad_offset.find("offset:20;"), 10, "offset:2x;");
  CHECK(parse_fork_format(bad_offset).error().code == EINVAL);
  CHECK(!parse_fork_format("").ok());
}

TEST_CASE("raw records are read at the offsets of their own format") {
  for (const char* text : {kFormatDataLoc, kFormatArrays}) {
    auto fmt = parse_fork_format(text);
    REQUIRE(fmt.ok());
    // A recent kernel appends the comm strings after the fixed fields.
    std::vector<char> raw = raw_record(*fmt, 64, 4242, 4343);
    pid_t parent = 0, child = 0;
    REQUIRE(parse_fork_raw(*fmt, raw.data(), raw.size(), &parent, &child));
    CHECK(parent == 4242);
    CHECK(child == 4343);
    // Cut before the end of child_pid: nothing is read.
    const size_t need = fmt->child_pid_offset + 4;
    CHECK_FALSE(parse_fork_raw(*fmt, raw.data(), need - 1, &parent, &child));
    CHECK(parse_fork_raw(*fmt, raw.data(), need, &parent, &child));
  }
}

TEST_CASE("perf sample record: time and the cloning thread as parent") {
  auto fmt = parse_fork_format(kFormatDataLoc);
  REQUIRE(fmt.ok());
  std::vector<char> rec = sample_record(123456789, raw_record(*fmt, 44, 101, 202));
  PerfForkRecord r = parse_perf_record(*fmt, rec.data(), rec.size());
  REQUIRE(r.kind == PerfForkRecord::Kind::kFork);
  CHECK(r.event.kind == ProcEvent::Kind::kFork);
  CHECK(r.event.parent_tid == 101);
  CHECK(r.event.tid == 202);
  CHECK(r.event.time_ns == 123456789);

  std::vector<char> lost = lost_record(17);
  PerfForkRecord l = parse_perf_record(*fmt, lost.data(), lost.size());
  CHECK(l.kind == PerfForkRecord::Kind::kLost);
  CHECK(l.lost == 17);

  // Every truncation decodes to nothing, without reading past the end.
  for (size_t len = 0; len < rec.size(); ++len) {
    std::vector<char> cut(rec.begin(), rec.begin() + static_cast<long>(len));
    CHECK(parse_perf_record(*fmt, cut.data(), cut.size()).kind == PerfForkRecord::Kind::kOther);
  }
  // A raw size larger than the record.
  std::vector<char> liar = rec;
  put<uint32_t>(liar, sizeof(perf_event_header) + 8, 4096);
  CHECK(parse_perf_record(*fmt, liar.data(), liar.size()).kind == PerfForkRecord::Kind::kOther);
  // Other record types are ignored.
  std::vector<char> other = rec;
  put<uint32_t>(other, 0, PERF_RECORD_COMM);
  CHECK(parse_perf_record(*fmt, other.data(), other.size()).kind == PerfForkRecord::Kind::kOther);
}

TEST_CASE("ring walk: records in order, one wrapping around the end reassembled") {
  auto fmt = parse_fork_format(kFormatDataLoc);
  REQUIRE(fmt.ok());
  const uint64_t size = 256;
  std::vector<char> ring(size, '\0');
  // Positions are free-running: start near the end of the second lap, so
  // that the second record's header straddles the end.
  const uint64_t start = 2 * size + 204;
  uint64_t head = start;
  std::vector<std::vector<char>> recs;
  for (int i = 0; i < 4; ++i) {
    recs.push_back(sample_record(1000 + i, raw_record(*fmt, 28, 10 + i, 20 + i)));
  }
  recs.push_back(lost_record(3));
  for (const auto& r : recs) {
    for (char c : r) ring[head++ % size] = c;
  }
  std::vector<PerfForkRecord> seen;
  const uint64_t tail = walk_perf_ring(
      ring.data(), size, start, head,
      [&](const char* rec, size_t len) { seen.push_back(parse_perf_record(*fmt, rec, len)); });
  CHECK(tail == head);
  REQUIRE(seen.size() == 5);
  for (int i = 0; i < 4; ++i) {
    REQUIRE(seen[i].kind == PerfForkRecord::Kind::kFork);
    CHECK(seen[i].event.parent_tid == 10 + i);
    CHECK(seen[i].event.tid == 20 + i);
    CHECK(seen[i].event.time_ns == static_cast<uint64_t>(1000 + i));
  }
  CHECK(seen[4].kind == PerfForkRecord::Kind::kLost);

  // A header whose size is zero stops the walk at head (nothing more read).
  std::vector<char> zero(size, '\0');
  int calls = 0;
  CHECK(walk_perf_ring(zero.data(), size, 0, 64, [&](const char*, size_t) { ++calls; }) == 64);
  CHECK(calls == 0);
  // Nothing between tail and head: no call.
  CHECK(walk_perf_ring(ring.data(), size, head, head, [&](const char*, size_t) { ++calls; }) ==
        head);
  CHECK(calls == 0);
}

namespace {

ProcEvent fork_at(uint64_t t, pid_t parent, pid_t child) {
  return ProcEvent{ProcEvent::Kind::kFork, parent, child, t};
}
ProcEvent exit_at(uint64_t t, pid_t tid) { return ProcEvent{ProcEvent::Kind::kExit, 0, tid, t}; }

bool same(const ProcEvent& a, const ProcEvent& b) {
  return a.kind == b.kind && a.parent_tid == b.parent_tid && a.tid == b.tid &&
         a.time_ns == b.time_ns;
}

}  // namespace

using resctrlfs::daemon::merge_task_events;

TEST_CASE("merge: per-CPU records and connector exits in time order, tid reuse kept apart") {
  // CPU 1's buffer was read before CPU 0's: thread 10 (cloned by 5 on CPU 0)
  // created 11 on CPU 1. Then 11 exited and its id was reused by a child of 7.
  std::vector<ProcEvent> traced = {fork_at(200, 10, 11), fork_at(400, 7, 11), fork_at(100, 5, 10)};
  std::vector<ProcEvent> connector = {exit_at(300, 11)};
  std::vector<ProcEvent> out = merge_task_events(traced, connector);
  REQUIRE(out.size() == 4);
  CHECK(same(out[0], fork_at(100, 5, 10)));
  CHECK(same(out[1], fork_at(200, 10, 11)));
  CHECK(same(out[2], exit_at(300, 11)));
  CHECK(same(out[3], fork_at(400, 7, 11)));
}

TEST_CASE("merge: the connector's fork of a child the tracepoint reported is dropped") {
  // Thread 21 of process 20 created thread 22 (connector: parent 20, the
  // leader) and, with CLONE_PARENT, process 30 (connector: its real parent 1).
  std::vector<ProcEvent> traced = {fork_at(110, 21, 22), fork_at(210, 21, 30)};
  std::vector<ProcEvent> connector = {fork_at(100, 20, 22), fork_at(200, 1, 30), exit_at(300, 22)};
  std::vector<ProcEvent> out = merge_task_events(traced, connector);
  REQUIRE(out.size() == 3);
  CHECK(same(out[0], fork_at(110, 21, 22)));
  CHECK(same(out[1], fork_at(210, 21, 30)));
  CHECK(same(out[2], exit_at(300, 22)));
}

TEST_CASE("merge: a traced fork takes its child's process id from the connector's report") {
  ProcEvent reported = fork_at(100, 20, 22);
  reported.tgid = 20;
  std::vector<ProcEvent> out = merge_task_events({fork_at(110, 21, 22)}, {reported});
  REQUIRE(out.size() == 1);
  CHECK(same(out[0], fork_at(110, 21, 22)));
  CHECK(out[0].tgid == 20);
}

TEST_CASE("merge: a connector fork the tracepoint never saw is kept (io_uring workers)") {
  std::vector<ProcEvent> traced = {fork_at(500, 40, 41)};
  std::vector<ProcEvent> connector = {fork_at(450, 40, 42), fork_at(490, 40, 41)};
  std::vector<ProcEvent> out = merge_task_events(traced, connector);
  REQUIRE(out.size() == 2);
  CHECK(same(out[0], fork_at(450, 40, 42)));
  CHECK(same(out[1], fork_at(500, 40, 41)));
  // Without the tracepoint (the fallback) the connector's events pass as
  // they are, in their order.
  std::vector<ProcEvent> alone = merge_task_events({}, connector);
  REQUIRE(alone.size() == 2);
  CHECK(same(alone[0], connector[0]));
  CHECK(same(alone[1], connector[1]));
}

TEST_CASE("merge: equal times keep each source's order, tracepoint first") {
  std::vector<ProcEvent> traced = {fork_at(7, 1, 2), fork_at(7, 2, 3)};
  std::vector<ProcEvent> connector = {exit_at(7, 9), exit_at(7, 8)};
  std::vector<ProcEvent> out = merge_task_events(traced, connector);
  REQUIRE(out.size() == 4);
  CHECK(out[0].tid == 2);
  CHECK(out[1].tid == 3);
  CHECK(out[2].tid == 9);
  CHECK(out[3].tid == 8);
}

TEST_CASE("online CPU lists: ranges and single CPUs, anything else is no list") {
  using resctrlfs::daemon::parse_cpu_list;
  CHECK(parse_cpu_list("0-1\n") == std::vector<unsigned>{0, 1});
  CHECK(parse_cpu_list("0-3,8,10-11\n") == std::vector<unsigned>{0, 1, 2, 3, 8, 10, 11});
  CHECK(parse_cpu_list("5") == std::vector<unsigned>{5});
  for (const char* bad : {"", "\n", "x", "1-", "-1", "3-1", "1,,2", "0-3x", "0-4294967295"}) {
    INFO(bad);
    CHECK(parse_cpu_list(bad).empty());
  }
}
