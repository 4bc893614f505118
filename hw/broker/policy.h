// Defines the MSR broker's policy: which (cpu, register, value, read|write)
// operations a client may perform. Only the RDT/PQoS registers the CPU
// enumerates are allowed, with indices below the enumerated CLOSID / RMID /
// counter limits and reserved bits clear, plus the prefetcher bits of
// MSR_MISC_FEATURE_CONTROL on models that offer cache pseudo-locking.
// Everything else is refused.
#pragma once

#include <string>

#include "base/result.h"
#include "hw/arch.h"
#include "hw/broker/protocol.h"
#include "hw/x86/cpuid_decode.h"

namespace resctrlfs::hw::broker {

class Policy {
 public:
  Policy(x86::X86Platform info, x86::HwLimits limits);
  // Ok, or EPERM with the reason (for the broker's log).
  Result<void> check(unsigned cpu, uint32_t msr, uint64_t value, OpKind kind) const;
  const x86::X86Platform& info() const { return info_; }

 private:
  Result<void> check_write(uint32_t msr, uint64_t value) const;

  x86::X86Platform info_;
  x86::HwLimits limits_;
  unsigned num_closid_any_ = 1;
  unsigned num_rmid_any_ = 1;
  uint64_t prefetch_bits_ = 0;  // pseudo-locking: MSR_MISC_FEATURE_CONTROL bits allowed
};

}  // namespace resctrlfs::hw::broker
