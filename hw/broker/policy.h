// Defines the MSR broker's policy: which (cpu, register, value, read|write)
// operations a client may perform. Only the RDT/PQoS registers the CPU
// enumerates are allowed, with indices below the enumerated CLOSID / RMID /
// counter limits and reserved bits clear, plus the prefetcher bits of
// MSR_MISC_FEATURE_CONTROL on models that offer cache pseudo-locking.
// Everything else is refused. MMIO is allowed only inside the I/O RDT
// register blocks (IO_PQR_CLOSn / IO_PQR_RMIDn) of the machine's IRDT
// table, at the block's register width and alignment. Intel PMT telemetry
// is only read, one aligned 8-byte counter word at a time, and only from
// the aggregators the broker found whose GUID is a known per-RMID layout
// (hw/x86/aet.h), inside their size.
#pragma once

#include <string>
#include <vector>

#include "base/result.h"
#include "hw/arch.h"
#include "hw/broker/protocol.h"
#include "hw/x86/cpuid_decode.h"
#include "hw/x86/irdt.h"
#include "hw/x86/pmt_sysfs.h"

namespace resctrlfs::hw::broker {

class Policy {
 public:
  Policy(x86::X86Platform info, x86::HwLimits limits);
  // Ok, or EPERM with the reason (for the broker's log).
  Result<void> check(unsigned cpu, uint32_t msr, uint64_t value, OpKind kind) const;
  // Ok, or EPERM with the reason: an MMIO access of `width` bytes at `addr`.
  Result<void> check_mmio(uint64_t addr, unsigned width) const;
  // The register blocks MMIO may touch (none until set: every MMIO access
  // is refused on a machine without an IRDT table).
  void set_mmio_blocks(std::vector<x86::IrdtRegisterBlock> blocks) {
    mmio_blocks_ = std::move(blocks);
  }
  // Ok with the index of the aggregator in the list set_pmt() was given, or
  // EPERM with the reason: a read of `width` bytes at `offset` of telem<N>.
  Result<size_t> check_pmt(unsigned telem, uint64_t offset, unsigned width) const;
  // The telemetry aggregators reads may touch (none until set).
  void set_pmt(const std::vector<x86::PmtAggregator>& aggregators);
  const x86::X86Platform& info() const { return info_; }

 private:
  Result<void> check_write(uint32_t msr, uint64_t value) const;

  x86::X86Platform info_;
  x86::HwLimits limits_;
  unsigned num_closid_any_ = 1;
  unsigned num_rmid_any_ = 1;
  uint64_t prefetch_bits_ = 0;
  std::vector<x86::IrdtRegisterBlock>
      mmio_blocks_;  // pseudo-locking: MSR_MISC_FEATURE_CONTROL bits allowed
  struct PmtAllowed {
    unsigned telem;
    uint32_t guid;
    uint64_t size;
  };
  std::vector<PmtAllowed> pmt_;
};

}  // namespace resctrlfs::hw::broker
