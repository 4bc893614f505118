// Defines the byte formats of AMD Lightweight Profiling (LWP): the 32-byte
// event records LWP writes into a thread's ring buffer and the LWP control
// block (LWPCB) that describes the buffer and the event counters, with an
// encoder and a checking decoder for each, and the JSON-lines form of a
// record that `resctrlfsctl lwp decode` prints. Header-only and free of any
// other resctrlfs part (base/result.h aside), so that the simulator, the CLI
// (which links no hw/ library) and the fuzz target share one codec.
//
// Two generations of LWP, with the same record and LWPCB-Flags layouts but
// different event ids (Generation):
//   - the 2007 public LWP proposal (AMD, v1.01), its table of event ids:
//     1 instructions retired, 2 branches retired, 3 DCache misses;
//   - the LWP specification as shipped on family 15h (AMD pub. 43724), where
//     the programmed-value event (LWPVAL) took id 1 and the others moved up
//     by one: 1 programmed value sample (LWPVAL), 2 instructions retired,
//     3 branches retired, 4 DCache misses, 5 core clocks not halted,
//     6 reference clocks not halted, 255 programmed event (LWPINS). (Ids 1
//     and 255 as Microsoft's documentation of the __lwpval and __lwpins
//     intrinsics gives them; 2-4 from CPUID 8000_001Ch, whose bit i is
//     event id i, named LwpIRE, LwpBRE, LwpDME at bits 2-4 in the ccpuid.h
//     and x86-cpuid-db field tables, and from rr's LWP tick source, which
//     profiled branches retired as event 3, slot i counting event i + 1.)
// In both, LWPCB.Flags bit 0 is EN, bit i says event id i is profiled and
// bit 31 INT, so the same events give different Flags: instructions retired
// with the interrupt is 0x80000003 in the proposal, 0x80000005 as shipped.
//
// Record (little endian, 32 bytes):
//   byte 0      EventId (0 is invalid)
//   byte 1      CoreId (LWP_CFG[39:32] of the CPU that wrote it)
//   bytes 2-3   event flags (record bits 31:16)
//   bytes 4-7   Data1
//   bytes 8-15  instruction address
//   bytes 16-23 Data2
//   bytes 24-31 Data3: the timestamp when the OS enabled PTSC (CPUID
//               8000_001Ch EAX[30]), otherwise reserved (0)
// Per event:
//   LWPVAL / LWPINS: flags = the instruction's 16-bit immediate, Data1 = its
//     r/m32 operand, Data2 = its register operand;
//   instructions retired: flags, Data1 and Data2 reserved;
//   branches retired: record bit 31 taken, bit 30 predicted correctly, bit 29
//     prediction bits valid, bits 28:16 reserved; Data1 reserved; Data2 the
//     target (taken) or the fall-through address (not taken);
//   DCache misses: record bits 31:29 data source (0 unknown, 1 local L3 /
//     northbridge cache, 2 remote CPU or L3, 3 DRAM, 7 other: MMIO, config,
//     PCI, APIC; 4-6 reserved), bit 28 data address valid, bits 27:16
//     reserved; Data1 the total miss latency in cycles; Data2 the data's
//     linear address.
//
// LWPCB (the proposal's figure; little endian):
//   0   bits 31:0 Flags (bit 0 EN, bit i event id i enabled, bit 31 INT),
//       bits 59:32 BufferSize (bytes), bits 63:60 Random (low counter bits
//       randomised at each reload)
//   8   BufferBase (linear; low 5 bits ignored)
//   16  bits 31:0 BufferHeadOffset, bits 63:32 BufferTailOffset
//   24  MissedEvents (64 bits)
//   32  bits 31:0 Threshold (bytes; 0: no interrupt), bits 39:32 MinLatency
//       (x16 cycles), bit 40 CLF, 41 NBC, 42 RDC, 43 RAM, 44 OTH (cache level
//       filter), bits 62:45 reserved, bit 63 NDB (no direct branches)
//   40 + 8i  event slot i: bits 25:0 EventInterval, bits 31:26 EventId (0:
//       slot unused), bits 57:32 EventCounter (26-bit counters), bits 63:58
//       reserved
// The shipped processors lay the LWPCB out differently (see "LWPCB as
// shipped" below); the proposal codec takes the slot offset as a parameter
// so that it can also place its slots where CPUID 8000_001Ch EBX[31:24]
// says (128 on the FX-8150).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace resctrlfs::lwp {

inline constexpr size_t kRecordSize = 32;
inline constexpr size_t kLwpcbHeaderSize = 40;  // the proposal's first event slot
inline constexpr unsigned kCounterBits = 26;
inline constexpr uint32_t kCounterMask = (1U << kCounterBits) - 1;

// Which document an LWP unit follows (see above).
enum class Generation : uint8_t { kShipped, kProposal };

inline std::string_view generation_name(Generation g) {
  return g == Generation::kProposal ? "proposal" : "shipped";
}

// The shipped specification's event ids.
enum EventId : uint8_t {
  kProgrammedValue = 1,
  kInstructionsRetired = 2,
  kBranchesRetired = 3,
  kDcacheMiss = 4,
  kCoreClocksNotHalted = 5,
  kRefClocksNotHalted = 6,
  kProgrammedEvent = 255,
};

// The proposal's event ids (its table of EventIds).
inline constexpr uint8_t kProposalInstructionsRetired = 1;
inline constexpr uint8_t kProposalBranchesRetired = 2;
inline constexpr uint8_t kProposalDcacheMiss = 3;

// The events both generations know, and LWPVAL's, by meaning.
enum class Event : uint8_t { kNone, kValue, kInstructions, kBranches, kDcache, kOther };

// The id of event `e` in generation `g`; 0 when the generation has none
// (the proposal has no LWPVAL).
constexpr uint8_t event_id(Generation g, Event e) {
  if (g == Generation::kProposal) {
    switch (e) {
      case Event::kInstructions:
        return kProposalInstructionsRetired;
      case Event::kBranches:
        return kProposalBranchesRetired;
      case Event::kDcache:
        return kProposalDcacheMiss;
      default:
        return 0;
    }
  }
  switch (e) {
    case Event::kValue:
      return kProgrammedValue;
    case Event::kInstructions:
      return kInstructionsRetired;
    case Event::kBranches:
      return kBranchesRetired;
    case Event::kDcache:
      return kDcacheMiss;
    default:
      return 0;
  }
}

// What id `id` means in generation `g` (kNone: no such id; kOther: an id
// the shipped specification defines with no record fields of its own to
// check: clocks not halted, LWPINS).
constexpr Event event_of(Generation g, uint8_t id) {
  if (g == Generation::kProposal) {
    switch (id) {
      case kProposalInstructionsRetired:
        return Event::kInstructions;
      case kProposalBranchesRetired:
        return Event::kBranches;
      case kProposalDcacheMiss:
        return Event::kDcache;
      default:
        return Event::kNone;
    }
  }
  switch (id) {
    case kProgrammedValue:
      return Event::kValue;
    case kInstructionsRetired:
      return Event::kInstructions;
    case kBranchesRetired:
      return Event::kBranches;
    case kDcacheMiss:
      return Event::kDcache;
    case kCoreClocksNotHalted:
    case kRefClocksNotHalted:
    case kProgrammedEvent:
      return Event::kOther;
    default:
      return Event::kNone;
  }
}

// DCache-miss data sources (record bits 31:29).
enum DataSource : uint8_t {
  kSrcUnknown = 0,
  kSrcLocalCache = 1,   // local L3 / northbridge cache
  kSrcRemoteCache = 2,  // a remote CPU's cache or L3
  kSrcDram = 3,
  kSrcOther = 7,  // MMIO, configuration, PCI or APIC space
};

// The event name used in JSON lines, or "" for an id generation `g` does
// not define.
inline std::string_view event_name(uint8_t id, Generation g = Generation::kShipped) {
  if (g == Generation::kProposal) {
    switch (event_of(g, id)) {
      case Event::kInstructions:
        return "instructions_retired";
      case Event::kBranches:
        return "branches_retired";
      case Event::kDcache:
        return "dcache_miss";
      default:
        return "";
    }
  }
  switch (id) {
    case kProgrammedValue:
      return "programmed_value";
    case kInstructionsRetired:
      return "instructions_retired";
    case kBranchesRetired:
      return "branches_retired";
    case kDcacheMiss:
      return "dcache_miss";
    case kCoreClocksNotHalted:
      return "core_clocks_not_halted";
    case kRefClocksNotHalted:
      return "ref_clocks_not_halted";
    case kProgrammedEvent:
      return "programmed_event";
    default:
      return "";
  }
}

struct Record {
  uint8_t event_id = 0;
  uint8_t core_id = 0;
  uint16_t flags = 0;  // record bits 31:16
  uint32_t data1 = 0;
  uint64_t ip = 0;
  uint64_t data2 = 0;
  uint64_t data3 = 0;

  bool operator==(const Record&) const = default;

  // Branches retired (flags bit 15/14/13 = record bit 31/30/29).
  bool taken() const { return (flags >> 15) & 1; }
  bool predicted() const { return (flags >> 14) & 1; }
  bool prediction_valid() const { return (flags >> 13) & 1; }
  // DCache misses.
  unsigned data_source() const { return (flags >> 13) & 7; }
  bool data_address_valid() const { return (flags >> 12) & 1; }
  uint32_t latency() const { return data1; }

  static Record branch(uint8_t core, uint64_t ip, uint64_t to, bool taken, bool prd_valid,
                       bool predicted, Generation g = Generation::kShipped) {
    Record r;
    r.event_id = lwp::event_id(g, Event::kBranches);
    r.core_id = core;
    r.flags = static_cast<uint16_t>((taken ? 1U << 15 : 0) | (predicted ? 1U << 14 : 0) |
                                    (prd_valid ? 1U << 13 : 0));
    r.ip = ip;
    r.data2 = to;
    return r;
  }
  static Record dcache_miss(uint8_t core, uint64_t ip, uint32_t latency, unsigned source,
                            bool addr_valid, uint64_t addr, Generation g = Generation::kShipped) {
    Record r;
    r.event_id = lwp::event_id(g, Event::kDcache);
    r.core_id = core;
    r.flags = static_cast<uint16_t>(((source & 7U) << 13) | (addr_valid ? 1U << 12 : 0));
    r.data1 = latency;
    r.ip = ip;
    r.data2 = addr_valid ? addr : 0;
    return r;
  }
  static Record simple(uint8_t id, uint8_t core, uint64_t ip) {
    Record r;
    r.event_id = id;
    r.core_id = core;
    r.ip = ip;
    return r;
  }
  // LWPVAL (id 1) and LWPINS (id 255).
  static Record programmed(uint8_t id, uint8_t core, uint64_t ip, uint16_t imm, uint32_t rm32,
                           uint64_t reg) {
    Record r;
    r.event_id = id;
    r.core_id = core;
    r.flags = imm;
    r.data1 = rm32;
    r.ip = ip;
    r.data2 = reg;
    return r;
  }
};

namespace detail {
inline void put(uint8_t* p, uint64_t v, unsigned n) {
  for (unsigned i = 0; i < n; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
inline uint64_t get(const uint8_t* p, unsigned n) {
  uint64_t v = 0;
  for (unsigned i = 0; i < n; ++i) v |= uint64_t{p[i]} << (8 * i);
  return v;
}
inline Error bad(std::string what) { return Error::make(EINVAL, std::move(what)); }
}  // namespace detail

inline void encode_record(const Record& r, uint8_t out[kRecordSize]) {
  out[0] = r.event_id;
  out[1] = r.core_id;
  detail::put(out + 2, r.flags, 2);
  detail::put(out + 4, r.data1, 4);
  detail::put(out + 8, r.ip, 8);
  detail::put(out + 16, r.data2, 8);
  detail::put(out + 24, r.data3, 8);
}

// Any 32 bytes; check_record() says whether they are a valid record.
inline Record decode_record(const uint8_t in[kRecordSize]) {
  Record r;
  r.event_id = in[0];
  r.core_id = in[1];
  r.flags = static_cast<uint16_t>(detail::get(in + 2, 2));
  r.data1 = static_cast<uint32_t>(detail::get(in + 4, 4));
  r.ip = detail::get(in + 8, 8);
  r.data2 = detail::get(in + 16, 8);
  r.data3 = detail::get(in + 24, 8);
  return r;
}

// A record LWP of generation `g` can write: a defined event id and its
// reserved fields 0. (Data3 may hold a timestamp for any shipped event.)
inline Result<void> check_record(const Record& r, Generation g = Generation::kShipped) {
  if (r.event_id == 0) return detail::bad("event id 0 is invalid");
  switch (event_of(g, r.event_id)) {
    case Event::kInstructions:
      if (r.flags != 0 || r.data1 != 0 || r.data2 != 0)
        return detail::bad("instructions-retired record with reserved fields set");
      break;
    case Event::kBranches:
      if ((r.flags & 0x1FFF) != 0 || r.data1 != 0)
        return detail::bad("branches-retired record with reserved bits set");
      break;
    case Event::kDcache: {
      if ((r.flags & 0x0FFF) != 0) return detail::bad("DCache-miss record with reserved bits set");
      const unsigned src = r.data_source();
      if (src >= 4 && src <= 6)
        return detail::bad("DCache-miss record with a reserved data source");
      if (!r.data_address_valid() && r.data2 != 0)
        return detail::bad("DCache-miss record with an address not marked valid");
      break;
    }
    case Event::kValue:
    case Event::kOther:
      return Ok();
    case Event::kNone:
    default:
      return detail::bad("unknown event id " + std::to_string(r.event_id) + " (" +
                         std::string(generation_name(g)) + " LWP)");
  }
  // The proposal's records have no timestamp: bytes 24-31 are reserved.
  if (g == Generation::kProposal && r.data3 != 0)
    return detail::bad("record with reserved bytes 24-31 set");
  return Ok();
}

// A ring-buffer image or a drained file: whole records, each valid.
inline Result<std::vector<Record>> decode_records(const uint8_t* data, size_t size,
                                                  Generation g = Generation::kShipped) {
  if (size % kRecordSize != 0)
    return detail::bad("size " + std::to_string(size) + " is not a multiple of 32 bytes");
  std::vector<Record> out;
  out.reserve(size / kRecordSize);
  for (size_t off = 0; off < size; off += kRecordSize) {
    Record r = decode_record(data + off);
    if (auto ok = check_record(r, g); !ok)
      return detail::bad("record " + std::to_string(off / kRecordSize) + " (offset " +
                         std::to_string(off) + "): " + ok.error().message);
    out.push_back(r);
  }
  return out;
}

inline std::string encode_records(const std::vector<Record>& rs) {
  std::string out(rs.size() * kRecordSize, '\0');
  for (size_t i = 0; i < rs.size(); ++i)
    encode_record(rs[i], reinterpret_cast<uint8_t*>(out.data()) + i * kRecordSize);
  return out;
}

// One JSON object (no trailing newline) with every field of the record;
// numbers in decimal, addresses as "0x..." strings.
inline std::string record_json(const Record& r, Generation g = Generation::kShipped) {
  char buf[512];
  auto hex = [](uint64_t v) {
    char b[24];
    std::snprintf(b, sizeof(b), "\"0x%llx\"", static_cast<unsigned long long>(v));
    return std::string(b);
  };
  std::string name(event_name(r.event_id, g));
  std::snprintf(buf, sizeof(buf),
                "{\"event_id\":%u,\"event\":\"%s\",\"core_id\":%u,\"flags\":%u,\"data1\":%u,"
                "\"ip\":%s,\"data2\":%s,\"data3\":%llu",
                r.event_id, name.c_str(), r.core_id, r.flags, r.data1, hex(r.ip).c_str(),
                hex(r.data2).c_str(), static_cast<unsigned long long>(r.data3));
  std::string out = buf;
  const Event kind = event_of(g, r.event_id);
  if (kind == Event::kBranches) {
    out += ",\"taken\":" + std::string(r.taken() ? "true" : "false");
    out += ",\"prediction_valid\":" + std::string(r.prediction_valid() ? "true" : "false");
    out += ",\"predicted\":" + std::string(r.predicted() ? "true" : "false");
    out += ",\"target\":" + hex(r.data2);
  } else if (kind == Event::kDcache) {
    out += ",\"latency\":" + std::to_string(r.latency());
    out += ",\"data_source\":" + std::to_string(r.data_source());
    out += ",\"data_address_valid\":" + std::string(r.data_address_valid() ? "true" : "false");
    out += ",\"data_address\":" + hex(r.data2);
  }
  return out + "}";
}

// ---------------------------------------------------------------------------
// LWPCB

struct EventSlot {
  uint32_t interval = 0;  // 26 bits
  uint8_t event_id = 0;   // 6 bits; 0: unused
  uint32_t counter = 0;   // 26 bits
  bool operator==(const EventSlot&) const = default;
};

struct Lwpcb {
  uint32_t flags = 0;
  uint32_t buffer_size = 0;  // 28 bits
  uint8_t random = 0;        // 4 bits
  uint64_t buffer_base = 0;
  uint32_t head = 0;
  uint32_t tail = 0;
  uint64_t missed = 0;
  uint32_t threshold = 0;
  uint8_t min_latency = 0;  // x16 cycles
  bool clf = false, nbc = false, rdc = false, ram = false, oth = false;
  bool ndb = false;
  std::vector<EventSlot> events;
  bool operator==(const Lwpcb&) const = default;

  static constexpr uint32_t kFlagEn = 1U << 0;
  static constexpr uint32_t kFlagInt = 1U << 31;
  // The Flags bit of an event id (ids 1..30 have one; others none).
  static uint32_t flag_of(uint8_t event_id) {
    return event_id >= 1 && event_id <= 30 ? 1U << event_id : 0;
  }
};

inline size_t lwpcb_size(size_t n_events, size_t event_offset = kLwpcbHeaderSize) {
  return event_offset + 8 * n_events;
}

// Fields wider than their bits are an error, never silently cut.
inline Result<std::string> encode_lwpcb(const Lwpcb& cb, size_t event_offset = kLwpcbHeaderSize) {
  if (event_offset < kLwpcbHeaderSize || event_offset % 8 != 0)
    return detail::bad("event slot offset must be a multiple of 8, at least 40");
  if (cb.buffer_size >= (1U << 28)) return detail::bad("BufferSize wider than 28 bits");
  if (cb.random >= 16) return detail::bad("Random wider than 4 bits");
  for (const auto& e : cb.events)
    if (e.interval > kCounterMask || e.counter > kCounterMask || e.event_id >= 64)
      return detail::bad("event slot field wider than its bits");
  std::string out(lwpcb_size(cb.events.size(), event_offset), '\0');
  auto* p = reinterpret_cast<uint8_t*>(out.data());
  detail::put(p, cb.flags | (uint64_t{cb.buffer_size} << 32) | (uint64_t{cb.random} << 60), 8);
  detail::put(p + 8, cb.buffer_base, 8);
  detail::put(p + 16, cb.head | (uint64_t{cb.tail} << 32), 8);
  detail::put(p + 24, cb.missed, 8);
  uint64_t filt = cb.threshold | (uint64_t{cb.min_latency} << 32) | (uint64_t{cb.clf} << 40) |
                  (uint64_t{cb.nbc} << 41) | (uint64_t{cb.rdc} << 42) | (uint64_t{cb.ram} << 43) |
                  (uint64_t{cb.oth} << 44) | (uint64_t{cb.ndb} << 63);
  detail::put(p + 32, filt, 8);
  for (size_t i = 0; i < cb.events.size(); ++i) {
    const EventSlot& e = cb.events[i];
    uint64_t v = e.interval | (uint64_t{e.event_id} << 26) | (uint64_t{e.counter} << 32);
    detail::put(p + event_offset + 8 * i, v, 8);
  }
  return out;
}

// Decodes an LWPCB of `n_events` slots; reserved bits set are an error.
inline Result<Lwpcb> decode_lwpcb(const uint8_t* data, size_t size, size_t n_events,
                                  size_t event_offset = kLwpcbHeaderSize) {
  if (event_offset < kLwpcbHeaderSize || event_offset % 8 != 0)
    return detail::bad("event slot offset must be a multiple of 8, at least 40");
  if (n_events > 64) return detail::bad("more than 64 event slots");
  if (size < lwpcb_size(n_events, event_offset))
    return detail::bad("LWPCB of " + std::to_string(size) + " bytes, " +
                       std::to_string(lwpcb_size(n_events, event_offset)) + " needed");
  Lwpcb cb;
  uint64_t w0 = detail::get(data, 8);
  cb.flags = static_cast<uint32_t>(w0);
  cb.buffer_size = static_cast<uint32_t>((w0 >> 32) & ((1U << 28) - 1));
  cb.random = static_cast<uint8_t>(w0 >> 60);
  cb.buffer_base = detail::get(data + 8, 8);
  uint64_t w2 = detail::get(data + 16, 8);
  cb.head = static_cast<uint32_t>(w2);
  cb.tail = static_cast<uint32_t>(w2 >> 32);
  cb.missed = detail::get(data + 24, 8);
  uint64_t w4 = detail::get(data + 32, 8);
  if ((w4 & (((uint64_t{1} << 18) - 1) << 45)) != 0)
    return detail::bad("LWPCB filter word has reserved bits 62:45 set");
  cb.threshold = static_cast<uint32_t>(w4);
  cb.min_latency = static_cast<uint8_t>(w4 >> 32);
  cb.clf = (w4 >> 40) & 1;
  cb.nbc = (w4 >> 41) & 1;
  cb.rdc = (w4 >> 42) & 1;
  cb.ram = (w4 >> 43) & 1;
  cb.oth = (w4 >> 44) & 1;
  cb.ndb = (w4 >> 63) & 1;
  for (size_t i = 0; i < n_events; ++i) {
    uint64_t v = detail::get(data + event_offset + 8 * i, 8);
    if ((v >> 58) != 0)
      return detail::bad("event slot " + std::to_string(i) + " has reserved bits 63:58 set");
    EventSlot e;
    e.interval = static_cast<uint32_t>(v & kCounterMask);
    e.event_id = static_cast<uint8_t>((v >> 26) & 0x3F);
    e.counter = static_cast<uint32_t>((v >> 32) & kCounterMask);
    cb.events.push_back(e);
  }
  return cb;
}

// ---------------------------------------------------------------------------
// LWPCB as shipped on family 15h
//
// The shipped processors do not use the proposal's packing above. Their
// LWPCB, as software that drove LWP on Bulldozer and Piledriver parts laid
// it out (rr's LWP tick source, written against the LWP specification, AMD
// pub. 43724, and run on a Piledriver; the Linux kernel's xsave image of the
// LWP state names the same 32-bit Flags, BufferSize and Filters fields):
//   0   Flags (32 bits: bit i event id i, bit 31 threshold interrupt)
//   4   BufferSize (32 bits, bytes)
//   8   BufferBase (64)
//   16  BufferHeadOffset (32), 20 reserved (32)
//   24  MissedEvents (64)
//   32  Threshold (32), 36 Filters (32)
//   40  BaseIP (64), 48 LimitIP (64), 56 reserved (64)
//   64  BufferTailOffset (32), 68 reserved (32), 72..EventOffset reserved
//   EventOffset + 8i: EventInterval i (32), EventCounter i (32)
// CPUID 8000_001Ch EBX gives EventOffset ([31:24]) and the LWPCB size in
// quadwords ([7:0]); on the FX-8150 they are 128 and 19 (152 bytes = 128 +
// 3 slots of 8, its LwpMaxEvents being 3), the same offset and slot count
// rr's structure has. The Filters bits are kept as one raw word: no public
// source this project found gives all of them.
inline constexpr size_t kShippedHeaderSize = 72;
inline constexpr size_t kShippedEventOffset = 128;  // the FX-8150's 8000_001Ch EBX[31:24]

struct ShippedEventSlot {
  uint32_t interval = 0;
  uint32_t counter = 0;
  bool operator==(const ShippedEventSlot&) const = default;
};

struct ShippedLwpcb {
  uint32_t flags = 0;
  uint32_t buffer_size = 0;
  uint64_t buffer_base = 0;
  uint32_t head = 0;
  uint64_t missed = 0;
  uint32_t threshold = 0;
  uint32_t filters = 0;
  uint64_t base_ip = 0;
  uint64_t limit_ip = 0;
  uint32_t tail = 0;
  std::vector<ShippedEventSlot> events;  // slot i counts event id i + 1
  bool operator==(const ShippedLwpcb&) const = default;
};

namespace detail {
inline Result<void> check_shipped_offset(size_t event_offset) {
  if (event_offset < kShippedHeaderSize || event_offset % 8 != 0)
    return bad("event slot offset must be a multiple of 8, at least 72");
  return {};
}
}  // namespace detail

inline Result<std::string> encode_shipped_lwpcb(const ShippedLwpcb& cb,
                                                size_t event_offset = kShippedEventOffset) {
  RESCTRLFS_RETURN_IF_ERROR(detail::check_shipped_offset(event_offset));
  std::string out(event_offset + 8 * cb.events.size(), '\0');
  auto* p = reinterpret_cast<uint8_t*>(out.data());
  detail::put(p, cb.flags, 4);
  detail::put(p + 4, cb.buffer_size, 4);
  detail::put(p + 8, cb.buffer_base, 8);
  detail::put(p + 16, cb.head, 4);
  detail::put(p + 24, cb.missed, 8);
  detail::put(p + 32, cb.threshold, 4);
  detail::put(p + 36, cb.filters, 4);
  detail::put(p + 40, cb.base_ip, 8);
  detail::put(p + 48, cb.limit_ip, 8);
  detail::put(p + 64, cb.tail, 4);
  for (size_t i = 0; i < cb.events.size(); ++i) {
    detail::put(p + event_offset + 8 * i, cb.events[i].interval, 4);
    detail::put(p + event_offset + 8 * i + 4, cb.events[i].counter, 4);
  }
  return out;
}

// Decodes a shipped-layout LWPCB of `n_events` slots; a reserved field that
// is not zero is an error (software must leave them 0).
inline Result<ShippedLwpcb> decode_shipped_lwpcb(const uint8_t* data, size_t size, size_t n_events,
                                                 size_t event_offset = kShippedEventOffset) {
  RESCTRLFS_RETURN_IF_ERROR(detail::check_shipped_offset(event_offset));
  if (n_events > 32) return detail::bad("more than 32 event slots");
  const size_t need = event_offset + 8 * n_events;
  if (size < need)
    return detail::bad("LWPCB of " + std::to_string(size) + " bytes, " + std::to_string(need) +
                       " needed");
  auto reserved = [&](size_t from, size_t to) {
    for (size_t i = from; i < to; ++i)
      if (data[i] != 0) return true;
    return false;
  };
  if (reserved(20, 24) || reserved(56, 64) || reserved(68, event_offset))
    return detail::bad("LWPCB has a reserved field set (bytes 20-23, 56-63 or 68-" +
                       std::to_string(event_offset - 1) + ")");
  ShippedLwpcb cb;
  cb.flags = static_cast<uint32_t>(detail::get(data, 4));
  cb.buffer_size = static_cast<uint32_t>(detail::get(data + 4, 4));
  cb.buffer_base = detail::get(data + 8, 8);
  cb.head = static_cast<uint32_t>(detail::get(data + 16, 4));
  cb.missed = detail::get(data + 24, 8);
  cb.threshold = static_cast<uint32_t>(detail::get(data + 32, 4));
  cb.filters = static_cast<uint32_t>(detail::get(data + 36, 4));
  cb.base_ip = detail::get(data + 40, 8);
  cb.limit_ip = detail::get(data + 48, 8);
  cb.tail = static_cast<uint32_t>(detail::get(data + 64, 4));
  for (size_t i = 0; i < n_events; ++i) {
    ShippedEventSlot e;
    e.interval = static_cast<uint32_t>(detail::get(data + event_offset + 8 * i, 4));
    e.counter = static_cast<uint32_t>(detail::get(data + event_offset + 8 * i + 4, 4));
    cb.events.push_back(e);
  }
  return cb;
}

}  // namespace resctrlfs::lwp
