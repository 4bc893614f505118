// Defines the two hardware seams of hw/: CpuidSource (CPUID leaves of a
// logical CPU) and MsrDevice (64-bit model-specific registers of a logical
// CPU). Everything above them (decoding, register programming, counter
// folding) is the same code on the real machine and on the simulator.
#pragma once

#include <array>
#include <cstdint>

#include "base/result.h"

namespace resctrlfs::hw {

struct CpuidRegs {
  uint32_t eax = 0, ebx = 0, ecx = 0, edx = 0;
  bool operator==(const CpuidRegs&) const = default;
};

class CpuidSource {
 public:
  virtual ~CpuidSource() = default;
  // CPUID(leaf, subleaf) as executed on `cpu`. Leaves the processor does
  // not implement read as zero.
  virtual CpuidRegs cpuid(unsigned cpu, uint32_t leaf, uint32_t subleaf) const = 0;
};

class MsrDevice {
 public:
  virtual ~MsrDevice() = default;
  // RDMSR on `cpu`. Fails (EIO) as a #GP would: unknown register, offline
  // CPU, or a broker that refused the request (EPERM).
  virtual Result<uint64_t> read(unsigned cpu, uint32_t msr) = 0;
  // WRMSR on `cpu`. Fails (EIO) as a #GP would: unknown register, reserved
  // bits set, index beyond the enumerated maximum.
  virtual Result<void> write(unsigned cpu, uint32_t msr, uint64_t value) = 0;
};

// The simulated machine's scheduler: which (CLOSID, RMID) each thread runs
// with. Real hardware has none (user space cannot retag a thread on every
// context switch), so the x86 Arch forwards thread tags only when given one.
class SchedulerModel {
 public:
  virtual ~SchedulerModel() = default;
  virtual void set_thread_tags(int tid, uint32_t closid, uint32_t rmid) = 0;
  virtual void thread_exited(int tid) = 0;
};

}  // namespace resctrlfs::hw
