// Defines the decoding of AMD Lightweight Profiling (LWP) enumeration as it
// shipped on family 15h (Bulldozer to Excavator): presence in CPUID
// 8000_0001h ECX[15] and the capabilities leaf 8000_001Ch, whose layout is
// that of the LWP specification (AMD pub. 43724), which differs from the
// 2007 proposal (there the presence bit was "TBD" and EAX/EDX had other bit
// positions). EAX says what the OS enabled through LWP_CFG (what user code
// may use), EDX what the processor can do (what an OS may enable).
#pragma once

#include <cstdint>

#include "hw/device.h"

namespace resctrlfs::hw::x86 {

// One set of LWP feature bits: CPUID 8000_001Ch EAX (enabled) or EDX
// (supported); the same layout as LWP_CFG[31:0] and LWPCB.Flags.
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
  uint32_t raw = 0;

  static LwpFeatureBits decode(uint32_t v);
  uint32_t encode() const;
  // Whether event `id` (1..6) is set.
  bool event(unsigned id) const;
};

struct LwpCaps {
  bool present = false;      // CPUID 8000_0001h ECX[15] (the cpuinfo flag "lwp")
  LwpFeatureBits enabled;    // 8000_001Ch EAX
  LwpFeatureBits supported;  // 8000_001Ch EDX
  // EBX
  unsigned cb_size_bytes = 0;  // [7:0] LWPCB size in quadwords, here in bytes
  unsigned event_size = 0;     // [15:8] bytes per ring-buffer record (32)
  unsigned max_events = 0;     // [23:16] event ids with a slot in the LWPCB
  unsigned event_offset = 0;   // [31:24] offset of the first event slot in the LWPCB
  // ECX
  unsigned latency_max_bits = 0;  // [4:0] width of the cache-latency counter
  bool data_address = false;      // [5] DCache records carry the data address
  unsigned latency_rnd_bits = 0;  // [8:6] low latency bits that are randomised
  unsigned version = 0;           // [15:9]
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
