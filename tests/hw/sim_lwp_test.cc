// Tests the simulator's LWP unit (hw/sim/lwp_unit.h) on its own: LLWPCB's
// Flags and refusals, freeze-at-zero and intervals, randomisation, the ring
// buffer's edges (full buffer and the missed-event counter, wrap-around, the
// threshold interrupt), LWPINS/LWPVAL, DCache-miss filtering and latency
// reporting; then through the simulated machine: a thread's DCache-miss
// records respond to its group's L3 mask and bandwidth limit, and on the
// manual clock its events come from the advanced time only.
#include <catch2/catch.hpp>
#include <chrono>
#include <map>
#include <thread>

#include "hw/backend.h"
#include "hw/sim/lwp_unit.h"
#include "hw/sim/machine.h"
#include "hw/x86/lwp_format.h"
#include "hw/x86/registers.h"
#include "lwp_profile.h"

using namespace resctrlfs;
using namespace resctrlfs::hw;
using namespace resctrlfs::hw::sim;
using namespace resctrlfs::lwp;

namespace {

// LWP_CFG enabling every event the simulated unit has and the interrupt.
const uint64_t kCfgAll = sim_lwp_caps().supported.raw;

Lwpcb ring(uint32_t records, std::vector<EventSlot> events, uint32_t threshold = 0) {
  Lwpcb cb;
  cb.buffer_size = records * kRecordSize;
  cb.buffer_base = 0x7f0000100000;
  cb.threshold = threshold;
  cb.events = std::move(events);
  return cb;
}

LwpUnit armed(const Lwpcb& cb, uint64_t cfg = kCfgAll) {
  LwpUnit u(sim_lwp_caps(), cfg, 1);
  auto r = u.llwpcb(cb);
  REQUIRE(r.ok());
  return u;
}

LwpActivity instructions(double n) {
  LwpActivity a;
  a.instructions = n;
  return a;
}

}  // namespace

TEST_CASE("LLWPCB computes Flags from the slots, LWP_CFG and CPUID, first slot wins") {
  // Slots: instructions, DCache misses, instructions again (ignored), id 5
  // (not implemented by the unit).
  Lwpcb cb = ring(32, {{10, kInstructionsRetired, 10},
                       {5, kDcacheMiss, 5},
                       {7, kInstructionsRetired, 7},
                       {3, kCoreClocksNotHalted, 3}});
  LwpUnit u = armed(cb);
  REQUIRE(u.active());
  auto now = u.slwpcb();
  REQUIRE(now.has_value());
  CHECK(now->flags == (Lwpcb::kFlagEn | Lwpcb::flag_of(kInstructionsRetired) |
                       Lwpcb::flag_of(kDcacheMiss) | Lwpcb::kFlagInt));
  // LWP_CFG without the interrupt and without DCache misses.
  LwpUnit v = armed(cb, kCfgAll & ~(1U << 31) & ~(1U << kDcacheMiss));
  CHECK(v.slwpcb()->flags == (Lwpcb::kFlagEn | Lwpcb::flag_of(kInstructionsRetired)));
  // Only id 5 and an empty slot: no usable event, LWP stays off.
  LwpUnit w(sim_lwp_caps(), kCfgAll, 1);
  REQUIRE(w.llwpcb(ring(32, {{1, kCoreClocksNotHalted, 1}, {1, 0, 1}})).ok());
  CHECK_FALSE(w.active());
  CHECK_FALSE(w.slwpcb().has_value());
  CHECK_FALSE(w.lwpins(1, 2, 3, 4));  // no effect while off
  CHECK(w.drain().empty());
  // LLWPCB returns the previous LWPCB, flushed; LLWPCB 0 disables.
  auto prev = u.llwpcb(std::nullopt);
  REQUIRE(prev.ok());
  REQUIRE(prev->has_value());
  CHECK((*prev)->events[0].counter == 10);
  CHECK_FALSE(u.active());
}

TEST_CASE("LLWPCB refuses an LWPCB the unit cannot use, whole") {
  LwpUnit u(sim_lwp_caps(), kCfgAll, 1);
  Lwpcb cb = ring(32, {{10, kInstructionsRetired, 10}});
  cb.buffer_size = 1000;  // not a multiple of 32
  CHECK_FALSE(u.llwpcb(cb).ok());
  cb = ring(31, {{10, kInstructionsRetired, 10}});  // below 32 records
  CHECK_FALSE(u.llwpcb(cb).ok());
  cb = ring(32, {{10, kInstructionsRetired, 10}});
  cb.head = 16;
  CHECK_FALSE(u.llwpcb(cb).ok());
  cb.head = 0;
  cb.tail = 32 * 32;
  CHECK_FALSE(u.llwpcb(cb).ok());
  cb = ring(32, {{1, 2, 1}, {1, 3, 1}, {1, 4, 1}, {1, 1, 1}, {1, 2, 1}});  // 5 slots
  CHECK_FALSE(u.llwpcb(cb).ok());
  CHECK_FALSE(u.active());
  auto r = u.llwpcb(ring(32, {{10, kInstructionsRetired, 10}}));
  REQUIRE(r.ok());
  CHECK_FALSE(r->has_value());  // nothing was active before
}

TEST_CASE("a counter freezes at zero and the next event is recorded") {
  LwpUnit u = armed(ring(64, {{9, kInstructionsRetired, 9}}));
  u.run(instructions(9));
  CHECK(u.slwpcb()->events[0].counter == 0);  // frozen, no record yet
  CHECK(u.drain().empty());
  u.run(instructions(1));
  auto r = u.drain();
  REQUIRE(r.size() == 1);
  CHECK(r[0].event_id == kInstructionsRetired);
  CHECK(check_record(r[0]).ok());
  CHECK(u.slwpcb()->events[0].counter == 9);  // reloaded
  // One record per Interval + 1 events; fractions carry over.
  for (int i = 0; i < 40; ++i) u.run(instructions(2.5));
  CHECK(u.drain().size() == 10);
}

TEST_CASE("reloads randomise the low Random bits of the interval") {
  Lwpcb cb = ring(1024, {{0x1000, kInstructionsRetired, 0}});
  cb.random = 4;
  LwpUnit u = armed(cb);
  std::map<uint32_t, int> seen;
  for (int i = 0; i < 64; ++i) {
    const uint32_t before = u.slwpcb()->events[0].counter;
    u.run(instructions(before + 1.0));  // exactly one firing
    const uint32_t c = u.slwpcb()->events[0].counter;
    CHECK((c & ~0xFU) == 0x1000);
    ++seen[c & 0xF];
  }
  CHECK(u.drain().size() == 64);
  CHECK(seen.size() > 4);  // the low bits vary
}

TEST_CASE("a full buffer keeps one slot empty, overwrites the last record, counts missed") {
  LwpUnit u = armed(ring(32, {{0, kProgrammedValue, 0}}));
  // 31 records fit (capacity BufferSize/32 - 1); the 9 others overwrite the
  // slot at the head and count as missed, CF = 1.
  for (uint64_t i = 0; i < 40; ++i) CHECK(u.lwpins(i, 0, 0, 0x401000) == (i >= 31));
  Lwpcb cb = *u.slwpcb();
  CHECK(cb.missed == 9);
  CHECK(cb.head == 31 * 32);
  CHECK(cb.tail == 0);
  // The slot at the head holds the newest record, not counted as written.
  Record last = decode_record(u.buffer().data() + cb.head);
  CHECK(last.event_id == kProgrammedEvent);
  CHECK(last.data2 == 39);
  auto r = u.drain();
  REQUIRE(r.size() == 31);
  for (uint64_t i = 0; i < 31; ++i) CHECK(r[i].data2 == i);
  // The missed counter is 64 bits: a flood into a full buffer.
  LwpUnit f = armed(ring(32, {{99, kInstructionsRetired, 99}}));
  f.run(instructions(1e12));  // a record every 100 instructions: 1e10 firings
  CHECK(f.slwpcb()->missed == 10'000'000'000ULL - 31);
  CHECK(f.drain().size() == 31);
}

TEST_CASE("head and tail wrap around the ring in order") {
  LwpUnit u = armed(ring(32, {{0, kProgrammedValue, 0}}));
  for (uint64_t i = 0; i < 20; ++i) CHECK_FALSE(u.lwpins(i, 0, 0, 0));
  CHECK(u.drain().size() == 20);
  CHECK(u.slwpcb()->tail == 20 * 32);
  for (uint64_t i = 20; i < 40; ++i) CHECK_FALSE(u.lwpins(i, 0, 0, 0));
  CHECK(u.slwpcb()->head == (40 * 32) % (32 * 32));  // wrapped
  auto r = u.drain(5);
  REQUIRE(r.size() == 5);
  CHECK(r[0].data2 == 20);
  r = u.drain();
  REQUIRE(r.size() == 15);
  CHECK(r.back().data2 == 39);
  // Software may move the tail itself (multiples of 32 below BufferSize).
  CHECK_FALSE(u.set_tail(33).ok());
  CHECK_FALSE(u.set_tail(32 * 32).ok());
  CHECK(u.set_tail(0).ok());
}

TEST_CASE("the threshold interrupt fires once per crossing, only when enabled") {
  LwpUnit u = armed(ring(32, {{0, kProgrammedValue, 0}}, 10 * 32));
  for (int i = 0; i < 9; ++i) u.lwpins(i, 0, 0, 0);
  CHECK(u.interrupts() == 0);
  u.lwpins(9, 0, 0, 0);  // used == Threshold
  CHECK(u.interrupts() == 1);
  CHECK(u.take_interrupt());
  CHECK_FALSE(u.take_interrupt());
  CHECK(u.vector() == 0);
  for (int i = 0; i < 30; ++i) u.lwpins(i, 0, 0, 0);  // fills up, missed
  CHECK(u.interrupts() == 1);
  u.drain();
  for (int i = 0; i < 10; ++i) u.lwpins(i, 0, 0, 0);  // crosses again
  CHECK(u.interrupts() == 2);
  // Threshold set but interrupts not enabled in LWP_CFG: Flags has no INT.
  LwpUnit q = armed(ring(32, {{0, kProgrammedValue, 0}}, 10 * 32), kCfgAll & ~(1U << 31));
  for (int i = 0; i < 20; ++i) q.lwpins(i, 0, 0, 0);
  CHECK(q.interrupts() == 0);
}

TEST_CASE("LWPVAL records every Interval + 1 executions, LWPINS always") {
  LwpUnit u = armed(ring(32, {{2, kProgrammedValue, 2}}));
  for (uint32_t i = 0; i < 9; ++i) u.lwpval(100 + i, 7, 0x55, 0x401000);
  auto r = u.drain();
  REQUIRE(r.size() == 3);
  CHECK(r[0].event_id == kProgrammedValue);
  CHECK(r[0].data2 == 102);
  CHECK(r[0].data1 == 7);
  CHECK(r[0].flags == 0x55);
  CHECK(r[0].ip == 0x401000);
  // Without event 1 in the LWPCB, LWPVAL does nothing; LWPINS still writes.
  LwpUnit v = armed(ring(32, {{10, kInstructionsRetired, 10}}));
  v.lwpval(1, 2, 3, 4);
  CHECK(v.drain().empty());
  CHECK_FALSE(v.lwpins(0xAABBCCDD11223344, 0x99, 0xBEEF, 0x401234));
  r = v.drain();
  REQUIRE(r.size() == 1);
  CHECK(r[0] ==
        Record::programmed(kProgrammedEvent, 0, 0x401234, 0xBEEF, 0x99, 0xAABBCCDD11223344));
}

TEST_CASE("DCache misses: latency and level filters, reported latencies") {
  LwpActivity a;
  a.instructions = 10000;
  a.misses = {{0.01, 40, kSrcLocalCache}, {0.002, 200, kSrcDram}};
  a.data_base = 0x7f0000000000;
  a.data_bytes = 1 << 20;
  SECTION("no filter: both kinds, in proportion") {
    LwpUnit u = armed(ring(1024, {{0, kDcacheMiss, 0}}));
    u.run(a);
    auto r = u.drain();
    CHECK(r.size() == 120);
    size_t dram = 0;
    for (const auto& x : r) {
      CHECK(check_record(x).ok());
      CHECK(x.latency() % 16 == 0);
      CHECK(x.data_address_valid());
      CHECK(x.data2 >= a.data_base);
      CHECK(x.data2 < a.data_base + a.data_bytes);
      dram += x.data_source() == kSrcDram;
    }
    CHECK(dram > 5);
    CHECK(dram < 40);
  }
  SECTION("MinLatency 4 (64 cycles) leaves the DRAM misses") {
    Lwpcb cb = ring(1024, {{0, kDcacheMiss, 0}});
    cb.min_latency = 4;
    LwpUnit u = armed(cb);
    u.run(a);
    auto r = u.drain();
    CHECK(r.size() == 20);
    for (const auto& x : r) {
      CHECK(x.data_source() == kSrcDram);
      CHECK(x.latency() >= 64);
    }
  }
  SECTION("CLF with NBC only leaves the L3 misses") {
    Lwpcb cb = ring(1024, {{0, kDcacheMiss, 0}});
    cb.clf = true;
    cb.nbc = true;
    LwpUnit u = armed(cb);
    u.run(a);
    auto r = u.drain();
    CHECK(r.size() == 100);
    for (const auto& x : r) CHECK(x.data_source() == kSrcLocalCache);
  }
  SECTION("latencies saturate at 2^12 - 16") {
    LwpActivity slow = a;
    slow.misses = {{0.001, 100000, kSrcDram}};
    LwpUnit u = armed(ring(1024, {{0, kDcacheMiss, 0}}));
    u.run(slow);
    auto r = u.drain();
    REQUIRE(r.size() == 10);
    for (const auto& x : r) CHECK(x.latency() == 4080);
  }
}

namespace {

struct Probe {
  double misses_per_kinstr = 0;
  double mean_latency = 0;
};

// Arms `tid` for instructions (a record per 100000) and DCache misses of
// at least 64 cycles (a record per 10000), runs 200 ms, and measures from
// the records.
Probe probe(SimMachine& m, int tid) {
  Lwpcb cb;
  cb.buffer_size = 1 << 20;
  cb.buffer_base = 0x7f0000100000;
  cb.min_latency = 4;
  cb.events = {{99999, kInstructionsRetired, 99999}, {9999, kDcacheMiss, 9999}};
  auto bytes = encode_lwpcb(cb);
  REQUIRE(bytes.ok());
  REQUIRE(m.lwp_arm(tid, *bytes).ok());
  REQUIRE(m.lwp_drain(tid, 0).ok());  // start from an empty ring
  m.advance_ms(200);
  auto st = m.lwp_status(tid);
  REQUIRE(st.ok());
  CHECK(st->missed == 0);
  auto drained = m.lwp_drain(tid, 0);
  REQUIRE(drained.ok());
  auto recs = decode_records(reinterpret_cast<const uint8_t*>(drained->data()), drained->size());
  REQUIRE(recs.ok());
  double instr = 0, misses = 0, lat = 0;
  for (const auto& r : *recs) {
    if (r.event_id == kInstructionsRetired) instr += 100000;
    if (r.event_id == kDcacheMiss) {
      misses += 10000;
      lat += r.latency();
    }
  }
  REQUIRE(instr > 0);
  REQUIRE(misses > 0);
  return Probe{misses * 1000 / instr, lat * 10000 / misses};
}

}  // namespace

TEST_CASE("a thread's DCache-miss records respond to its L3 mask and bandwidth limit") {
  // An AMD part with LWP (the unit follows the platform's CPUID).
  auto owner = test::lwp_machine();
  SimMachine* m = owner.get();
  // CLOSID 1: all 11 ways; CLOSID 2: 1 way. A thread of 12 MiB on CPU 0,
  // 2 GB/s of traffic, 1e9 instructions per second.
  REQUIRE(m->write(0, x86::IA32_L3_MASK_0 + 1, 0x7ff).ok());
  REQUIRE(m->write(0, x86::IA32_L3_MASK_0 + 2, 0x1).ok());
  Workload w{12u << 20, 2000, 1.0};
  w.cpu = 0;
  w.instructions_per_sec = 1e9;
  REQUIRE(m->attach_thread_workload(4242, w).ok());
  m->set_thread_tags(4242, 1, 0);
  Probe wide = probe(*m, 4242);
  m->set_thread_tags(4242, 2, 0);
  Probe narrow = probe(*m, 4242);
  INFO("11-way: " << wide.misses_per_kinstr << " misses/kinstr, " << wide.mean_latency
                  << " cycles; 1-way: " << narrow.misses_per_kinstr << ", " << narrow.mean_latency);
  CHECK(narrow.misses_per_kinstr > 2 * wide.misses_per_kinstr);
  CHECK(narrow.mean_latency > 1.2 * wide.mean_latency);
  // Back to 11 ways, unlimited then 2 x 1/8 GB/s (a throttle of 1/8).
  m->set_thread_tags(4242, 1, 0);
  REQUIRE(m->write(0, x86::L3QOS_BW_CONTROL_0 + 1, 1U << 11).ok());
  Probe fast = probe(*m, 4242);
  REQUIRE(m->write(0, x86::L3QOS_BW_CONTROL_0 + 1, 2).ok());
  Probe slow = probe(*m, 4242);
  INFO("unlimited: " << fast.mean_latency << " cycles; 250 MB/s: " << slow.mean_latency);
  CHECK(slow.mean_latency > 3 * fast.mean_latency);
  // Unknown threads are refused; an empty LWPCB disarms.
  CHECK(m->lwp_drain(1, 0).error().code == ENOENT);
  auto off = m->lwp_arm(4242, "");
  REQUIRE(off.ok());
  CHECK_FALSE(off->active);
  CHECK(m->lwp_arm(4242, std::string(41, '\0')).error().code == EINVAL);
}

TEST_CASE("on the manual clock a thread's events come from the advanced time only") {
  // The real time between the model's last step and the switch to the
  // manual clock (under 1 ms, the least step a read makes) must not reach
  // the first advance: 10 ms of 2e8 branches per second are 2e6 branches,
  // exactly 2000 records of one per 1000. A thread is given a workload on
  // the real clock (a step), real time passes, the clock turns manual, LWP
  // is armed, 10 ms are advanced. Rounds on fresh machines, so that one
  // sleep overshooting 1 ms on a loaded machine (the step would then
  // happen before arming and hide the leak) cannot hide it every time.
  for (int round = 0; round < 5; ++round) {
    auto p = parse_profile(test::amd_with_lwp("{}"), "lwp-test");
    REQUIRE(p.ok());
    auto owner = std::make_unique<SimMachine>(std::move(p).value());
    SimMachine* m = owner.get();
    REQUIRE_FALSE(m->manual_clock());
    std::this_thread::sleep_for(std::chrono::microseconds(1100));
    Workload w{1u << 20, 100, 1.0};
    w.cpu = 0;
    w.instructions_per_sec = 1e9;  // branch_share 0.2: 2e8 branches per second
    REQUIRE(m->attach_thread_workload(4243, w).ok());
    std::this_thread::sleep_for(std::chrono::microseconds(400));
    m->set_manual_clock(true);
    Lwpcb cb = ring(2048, {{999, kBranchesRetired, 999}});
    auto bytes = encode_lwpcb(cb);
    REQUIRE(bytes.ok());
    REQUIRE(m->lwp_arm(4243, *bytes).ok());
    m->advance_ms(10);
    auto st = m->lwp_status(4243);
    REQUIRE(st.ok());
    INFO("round " << round);
    CHECK(st->pending_records == 2000);
    CHECK(st->missed == 0);
  }
}

TEST_CASE(
    "LWP units: freed at a disarm with nothing to drain, at the drain that empties them "
    "and at the thread's exit, with their rings capped") {
  auto owner = test::lwp_machine();
  SimMachine* m = owner.get();
  Workload w{1u << 20, 100, 1.0};
  w.cpu = 0;
  w.instructions_per_sec = 1e9;  // 2e8 branches per second
  REQUIRE(m->attach_thread_workload(4243, w).ok());
  auto bytes = encode_lwpcb(ring(2048, {{999, kBranchesRetired, 999}}));
  REQUIRE(bytes.ok());
  CHECK(m->lwp_usage().units == 0);
  // Disarmed with an empty ring: gone.
  REQUIRE(m->lwp_arm(4243, *bytes).ok());
  CHECK(m->lwp_usage().units == 1);
  CHECK(m->lwp_usage().bytes == 2048 * kRecordSize);
  REQUIRE(m->lwp_arm(4243, "").ok());
  CHECK(m->lwp_usage().units == 0);
  CHECK(m->lwp_usage().bytes == 0);
  CHECK(m->lwp_status(4243).error().code == ENOENT);
  // Disarmed with records left: kept until they are drained.
  REQUIRE(m->lwp_arm(4243, *bytes).ok());
  m->advance_ms(1);  // 200 records
  auto off = m->lwp_arm(4243, "");
  REQUIRE(off.ok());
  CHECK(off->pending_records == 200);
  CHECK(m->lwp_usage().units == 1);
  auto some = m->lwp_drain(4243, 100);
  REQUIRE(some.ok());
  CHECK(m->lwp_usage().units == 1);
  LwpThreadStatus after;
  auto rest = m->lwp_drain(4243, 0, &after);
  REQUIRE(rest.ok());
  CHECK(rest->size() == 100 * kRecordSize);
  CHECK(after.pending_records == 0);
  CHECK_FALSE(after.active);
  CHECK(m->lwp_usage().units == 0);
  // The thread's exit frees an armed unit.
  REQUIRE(m->lwp_arm(4243, *bytes).ok());
  m->thread_exited(4243);
  CHECK(m->lwp_usage().units == 0);
  REQUIRE(m->lwp_arm(4243, *bytes).ok());
  m->lwp_forget(4243);
  CHECK(m->lwp_usage().units == 0);
  // The cap: rings of the largest size until the limit; one more is
  // ENOMEM and leaves nothing; re-arming a thread counts its ring once.
  const uint64_t limit = m->lwp_usage().limit_bytes;
  const uint32_t big = 16u << 20;
  REQUIRE(limit % big == 0);
  auto large = encode_lwpcb(ring(big / kRecordSize, {{999, kBranchesRetired, 999}}));
  REQUIRE(large.ok());
  const int n = static_cast<int>(limit / big);
  for (int t = 1; t <= n; ++t) REQUIRE(m->lwp_arm(5000 + t, *large).ok());
  CHECK(m->lwp_usage().bytes == limit);
  auto over = m->lwp_arm(6000, *bytes);
  REQUIRE_FALSE(over.ok());
  CHECK(over.error().code == ENOMEM);
  CHECK(over.error().message.find("limit") != std::string::npos);
  CHECK(m->lwp_usage().units == static_cast<size_t>(n));
  CHECK(m->lwp_arm(5001, *large).ok());
  REQUIRE(m->lwp_arm(5001, "").ok());
  CHECK(m->lwp_arm(6000, *bytes).ok());
}
