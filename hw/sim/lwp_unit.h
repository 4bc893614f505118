// Defines LwpUnit: the simulator's AMD Lightweight Profiling unit, the state
// one logical processor holds for the thread it runs (the hardware switches
// it with the thread through XSAVE component 62, so the simulator keeps one
// per thread), driven by the workload model's event counts. An extension
// of the simulator (ours): no Linux kernel enables LWP and no processor
// after family 15h has it, so it exists here as a measuring instrument of
// the simulated machine only; the simulated CPUID does not advertise it.
//
// Structure-exact: the unit is loaded from and flushed to an LWPCB
// (hw/x86/lwp_format.h, the proposal's layout with the slot offset 40) and
// writes 32-byte records into a ring buffer of BufferSize bytes. It is of
// one generation (lwp::Generation, the platform's CPUID 8000_001Ch layout,
// see hw/x86/lwp_cpuid.h): the 2007 proposal (event ids 1 instructions, 2
// branches, 3 DCache misses; no LWPVAL, no LWPINS) or the shipped
// specification, AMD pub. 43724 (1 LWPVAL, 2 instructions, 3 branches, 4
// DCache misses, 255 LWPINS). Rules, common to both unless said:
//   - LLWPCB: #UD (refused) while LWP_CFG (the proposal's LWPMSR0) bit 0 is
//     clear. Flags = EN, the bit of each event id that is both in a slot
//     with a non-zero id and enabled (LWP_CFG, within what CPUID
//     8000_001Ch EDX offers), and INT when LWP_CFG enables threshold
//     interrupts; a repeated id counts in its first slot only; no usable
//     event: Flags 0 and LWP stays off. The previous LWPCB is flushed.
//   - Counting: every event decrements its counter; a counter that reaches
//     zero freezes there, and the next occurrence of the event is the one
//     described by the record (so a record every Interval + 1 events, as
//     LWPVAL's "every k-th execution, k - 1 = interval"); then the counter
//     reloads with Interval, its low Random bits replaced by random bits.
//   - Store: the record goes to BufferBase + head; if advancing the head
//     would make it equal the tail, the head stays and MissedEvents (64-bit)
//     is incremented, so the last record is overwritten and one slot always
//     stays empty (capacity BufferSize / 32 - 1 records).
//   - Threshold: after each head advance, used = (head - tail) mod
//     BufferSize; used == Threshold with INT set raises one interrupt.
//   - Shipped only: LWPINS always stores an id-255 record (CF = 1 when the
//     buffer was full); LWPVAL counts event 1 and stores an id-1 record when
//     it fires; both do nothing while LWP is off.
//   - DCache misses count only when eligible: latency >= MinLatency x 16
//     (when MinLatency != 0) and, with CLF, the serving level's bit (NBC:
//     local L3, RDC: remote cache, RAM: DRAM, OTH: other) set. Latencies are
//     reported in multiples of 16 cycles, saturating at 2^n - 16 with n the
//     CPUID latency width (12 here).
// Simplifications: stores complete at once (the proposal lets them lag);
// the tail is read at every store; NDB has no effect (the model's branches
// are all conditional); PTSC timestamps are not written (Data3 0).
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "base/result.h"
#include "hw/x86/lwp_cpuid.h"
#include "hw/x86/lwp_format.h"

namespace resctrlfs::hw::sim {

// The most the simulated LWP unit implements in generation `g` (CPUID
// 8000_001Ch as it would read with every event enabled): instructions,
// branches and DCache misses (shipped: also LWPVAL), threshold interrupts,
// one slot per event at offset 40, 32-byte records, 12-bit latencies, data
// addresses, latency and level filtering, branch prediction bits. A
// platform may offer less (its own leaf); the unit follows that.
x86::LwpCaps sim_lwp_caps(lwp::Generation g = lwp::Generation::kShipped);

// One class of DCache miss the workload model produces: how many per
// instruction, their mean latency in cycles and where they were served.
struct MissClass {
  double per_instruction = 0;
  double latency_cycles = 0;
  unsigned source = lwp::kSrcUnknown;  // lwp::DataSource
};

// What a thread did in one step of simulated time.
struct LwpActivity {
  double instructions = 0;
  double branches = 0;
  std::vector<MissClass> misses;  // per-instruction rates; counts = rate x instructions
  uint64_t data_base = 0;         // the workload's data region, for data addresses
  uint64_t data_bytes = 0;
};

class LwpUnit {
 public:
  // `lwp_cfg`: the LWP_CFG value the simulated OS loaded (enable mask in
  // bits 31:0, CoreId in 39:32, interrupt vector in 47:40). `seed` fixes
  // the random stream (counter randomisation, addresses, latency jitter).
  LwpUnit(x86::LwpCaps caps, uint64_t lwp_cfg, uint64_t seed);

  // LLWPCB: loads `cb` (its Flags and the counters' state are computed;
  // BufferSize, BufferBase, head, tail, intervals are validated) and returns
  // the LWPCB that was active before, flushed (nullopt if none). std::nullopt
  // as `cb` disables LWP (LLWPCB 0). Invalid LWPCBs are refused whole.
  Result<std::optional<lwp::Lwpcb>> llwpcb(std::optional<lwp::Lwpcb> cb);
  // SLWPCB: the active LWPCB with the current head, counters and missed
  // count, or nullopt when LWP is off.
  std::optional<lwp::Lwpcb> slwpcb() const;
  bool active() const { return active_; }
  lwp::Generation generation() const { return caps_.generation; }
  // Whether the generation has the LWPINS and LWPVAL instructions (the
  // shipped one; the proposal has neither).
  bool has_instructions() const { return caps_.generation == lwp::Generation::kShipped; }

  // The thread's activity: counts events, stores records.
  void run(const LwpActivity& a);
  // LWPINS: returns CF (true: the buffer was full and the last record was
  // overwritten). No effect, CF 0, while LWP is off.
  bool lwpins(uint64_t reg, uint32_t rm32, uint16_t imm, uint64_t ip);
  // LWPVAL: counts event 1; stores an id-1 record when the counter fires.
  void lwpval(uint64_t reg, uint32_t rm32, uint16_t imm, uint64_t ip);

  // The consumer's side: records between tail and head (oldest first), then
  // tail = head. `max` bounds the number taken (0: all).
  std::vector<lwp::Record> drain(size_t max = 0);
  // Software moving the tail itself (a multiple of 32 below BufferSize).
  Result<void> set_tail(uint32_t tail);
  // The ring buffer's bytes (BufferSize of them).
  const std::vector<uint8_t>& buffer() const { return buf_; }
  // The LWPCB as the unit holds it (head, tail, missed count; the counters
  // as of the last LLWPCB): after LLWPCB 0, the last one in use.
  const lwp::Lwpcb& lwpcb() const { return cb_; }

  uint64_t interrupts() const { return interrupts_; }
  // Whether an interrupt was raised since the last call (then clears it).
  bool take_interrupt();
  uint8_t vector() const { return static_cast<uint8_t>(cfg_ >> 40); }
  uint8_t core_id() const { return static_cast<uint8_t>(cfg_ >> 32); }
  void set_core_id(uint8_t core);
  // LWP_CFG of the CPU the thread now runs on (read at the next LLWPCB).
  void set_cfg(uint64_t cfg) { cfg_ = cfg; }

 private:
  struct Slot {
    uint8_t id = 0;  // 0: unused (also a repeated id)
    uint32_t interval = 0;
    uint32_t counter = 0;
  };
  uint32_t reload(uint32_t interval);
  // Counts `n` events of slot `s`; `make` builds the record of one firing.
  template <typename Make>
  void count(Slot& s, uint64_t n, Make make);
  // Stores one record; returns false when the buffer was full.
  bool store(const lwp::Record& r);
  Slot* slot_of(uint8_t id);
  uint64_t pick_ip();

  x86::LwpCaps caps_;
  uint64_t cfg_;
  std::mt19937_64 rng_;
  bool active_ = false;
  lwp::Lwpcb cb_;
  std::vector<Slot> slots_;
  std::vector<uint8_t> buf_;
  uint64_t interrupts_ = 0;
  bool pending_ = false;
  // Fractional events carried between steps, per lwp::Event.
  double carry_[5] = {0, 0, 0, 0, 0};
};

}  // namespace resctrlfs::hw::sim
