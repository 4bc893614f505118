// Defines the decoding of AMD Lightweight Profiling (LWP) enumeration, in
// the two layouts of CPUID 8000_001Ch (lwp::Generation):
//   - as shipped on family 15h (Bulldozer to Excavator; the LWP
//     specification, AMD pub. 43724): EAX and EDX share one layout (bit 0
//     available, 1 LWPVAL, 2 instructions, 3 branches, 4 DCache misses,
//     5/6 core/reference clocks not halted, 29 continuous mode, 30 PTSC, 31
//     threshold interrupt), EBX[31:24] is the LWPCB's first event slot
//     (EventOffset) and ECX[15:9] the version. Sources: the field table of
//     the ccpuid.h header and of the x86-cpuid-db leaf tables Linux's kcpuid
//     reads (Lwp* fields), Microsoft's intrinsic documentation (presence
//     8000_0001h ECX[15], EAX[0] enabled by the OS, EAX[1] LWPVAL), and
//     real family-15h CPUID dumps (tests/hw/data);
//   - the 2007 proposal (its CPUID table): EAX (enabled; the copy of
//     LWPMSR0) bit 0 enabled, 1 instructions, 2 branches, 3 DCache misses,
//     30 extension leaf, 31 threshold interrupt; EDX (available) bit 0
//     available, 1 threshold interrupt, 2 instructions, 3 branches, 4 DCache
//     misses; EBX[7:0] the LWPCB size in bytes, [15:8] the record size,
//     [23:16] the events at once, [31:24] LWPVersion (1); ECX[4:0] the
//     latency counter width, 5 data address, 30 cache-level filtering, 31
//     latency filtering.
// The proposal leaves its presence bit "TBD"; both generations are present
// through the bit AMD assigned, 8000_0001h ECX[15]. Which layout a leaf has
// is read from EBX[31:24]: the proposal's LWPVersion is 1, while the shipped
// EventOffset is a byte offset past the LWPCB's 40-byte header, never below
// 40 (so 1..39 is the proposal's version, ours). EAX says what the OS
// enabled (what user code may use), EDX what the processor can do (what an
// OS may enable).
#pragma once

#include <cstdint>

#include "hw/x86/device.h"
#include "hw/x86/lwp_format.h"

namespace resctrlfs::hw::x86 {

// One set of LWP feature bits: CPUID 8000_001Ch EAX (enabled) or EDX
// (supported). Shipped: both in the layout of LWP_CFG[31:0] and
// LWPCB.Flags. Proposal: EAX in the layout of LWPMSR0 and LWPCB.Flags, EDX
// in its own (`caps_layout`). The named fields are by meaning, whatever the
// bit positions.
struct LwpFeatureBits {
  bool avail = false;      // bit 0: LWP available / enabled
  bool val = false;        // bit 1: LWPVAL (event 1, programmed value sample)
  bool ire = false;        // bit 2: instructions retired (event 2)
  bool bre = false;        // bit 3: branches retired (event 3)
  bool dme = false;        // bit 4: DCache misses (event 4)
  bool cnh = false;        // bit 5: core clocks not halted (event 5)
  bool rnh = false;        // bit 6: reference clocks not halted (event 6)
  bool cont = false;       // bit 29: continuous-mode sampling
  bool ptsc = false;       // bit 30: performance timestamp in records
  bool interrupt = false;  // bit 31: threshold interrupt
  bool extension = false;  // proposal EAX bit 30: events past 29 in 8000_001Dh
  uint32_t raw = 0;
  lwp::Generation gen = lwp::Generation::kShipped;
  bool caps_layout = false;  // the proposal's EDX layout

  static LwpFeatureBits decode(uint32_t v, lwp::Generation g = lwp::Generation::kShipped,
                               bool caps_layout = false);
  // In the layout the bits were decoded from.
  uint32_t encode() const;
  // In the enable-mask layout of the generation (LWP_CFG / LWPMSR0 bits
  // 31:0, LWPCB.Flags): bit 0 available, bit i event id i, bit 31 interrupt.
  uint32_t mask() const;
  // Whether event `id` of the generation is set.
  bool event(unsigned id) const;
};

struct LwpCaps {
  bool present = false;  // CPUID 8000_0001h ECX[15] (the cpuinfo flag "lwp")
  lwp::Generation generation = lwp::Generation::kShipped;
  LwpFeatureBits enabled;    // 8000_001Ch EAX
  LwpFeatureBits supported;  // 8000_001Ch EDX
  // EBX
  // [7:0] LWPCB size (shipped: in quadwords; proposal: in bytes), here in bytes
  unsigned cb_size_bytes = 0;
  unsigned event_size = 0;  // [15:8] bytes per ring-buffer record (32)
  unsigned max_events = 0;  // [23:16] event ids with a slot in the LWPCB
  // [31:24] shipped: offset of the first event slot in the LWPCB (the
  // proposal's slots are at 40: its [31:24] is `version`)
  unsigned event_offset = 0;
  // ECX
  unsigned latency_max_bits = 0;  // [4:0] width of the cache-latency counter
  bool data_address = false;      // [5] DCache records carry the data address
  unsigned latency_rnd_bits = 0;  // [8:6] low latency bits that are randomised
  unsigned version = 0;           // shipped [15:9], proposal EBX[31:24]
  unsigned min_buffer_records =
      0;  // [23:16] minimum ring size, in units of 32 records (here records)
  bool branch_prediction = false;  // [28] branch records carry prediction bits
  bool ip_filtering = false;       // [29] BaseIP/LimitIP filtering
  bool cache_levels = false;       // [30] filtering by the level that served a miss
  bool cache_latency = false;      // [31] filtering by minimum latency
  CpuidRegs raw;                   // the leaf as read

  // The leaf that decodes to these capabilities (for the simulator).
  CpuidRegs encode() const;
};

// Reads CPUID 8000_0000h, 8000_0001h and (when present) 8000_001Ch of `cpu`.
// A CPU whose vendor is not AMD, whose extended leaves stop below 8000_001Ch
// or whose 8000_0001h ECX[15] is clear has no LWP (present = false, the rest
// zero).
LwpCaps decode_lwp(const CpuidSource& src, unsigned cpu);

}  // namespace resctrlfs::hw::x86
