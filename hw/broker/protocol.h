// Defines the wire format between the MSR broker (resctrl-msrd) and its
// clients: a request is a batch of register operations, the reply carries
// one result per operation. Fixed-size little-endian records over a
// SOCK_STREAM Unix socket; both ends run on the same machine.
//
// Semantics: the broker first checks every operation of a batch against its
// policy; if any is refused, none is executed and every result is EPERM.
// Otherwise operations run in order; the first failing one gets EIO and the
// rest ECANCELED (not executed).
#pragma once

#include <cstdint>

namespace resctrlfs::hw::broker {

inline constexpr uint32_t kRequestMagic = 0x52534D31;  // "RSM1"
inline constexpr uint32_t kReplyMagic = 0x52534D32;    // "RSM2"
inline constexpr uint32_t kMaxBatch = 4096;

// MMIO operations (the I/O RDT tagging registers an ACPI IRDT table names)
// reuse the record: the physical address is (msr << 32) | cpu and the
// access width in bytes is in `reserved`. So do reads of Intel PMT
// telemetry aggregators (kPmtRead, never a write): `cpu` is N of the
// aggregator's /sys/class/intel_pmt/telem<N>, `msr` the byte offset in it,
// `reserved` the width (8: one counter word).
enum class OpKind : uint32_t { kRead = 0, kWrite = 1, kMmioRead = 2, kMmioWrite = 3, kPmtRead = 4 };

inline bool is_mmio(OpKind k) { return k == OpKind::kMmioRead || k == OpKind::kMmioWrite; }

struct WireHeader {
  uint32_t magic = 0;
  uint32_t count = 0;
};

struct WireOp {
  uint32_t cpu = 0;
  uint32_t msr = 0;
  uint64_t value = 0;     // value to write; ignored for reads
  uint32_t kind = 0;      // OpKind
  uint32_t reserved = 0;  // MMIO, PMT: access width in bytes; otherwise 0

  uint64_t mmio_addr() const { return (uint64_t{msr} << 32) | cpu; }
};

struct WireResult {
  int32_t err = 0;  // 0 or an errno value
  uint32_t reserved = 0;
  uint64_t value = 0;  // value read
};

static_assert(sizeof(WireHeader) == 8);
static_assert(sizeof(WireOp) == 24);
static_assert(sizeof(WireResult) == 16);

}  // namespace resctrlfs::hw::broker
