// Defines the hardware seams of hw/: CpuidSource (CPUID leaves of a
// logical CPU), MsrDevice (64-bit model-specific registers of a logical
// CPU) and PmtTelemetryDevice (Intel PMT telemetry aggregators, MMIO
// regions of per-RMID counters). Everything above them (decoding, register
// programming, counter folding, telemetry layouts) is the same code on the
// real machine and on the simulator.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

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

// The kind of per-RMID telemetry an aggregator carries (the PMT "feature"
// it is enumerated under).
enum class PmtFeature : uint8_t { kPerRmidEnergy = 0, kPerRmidPerf = 1 };

// One telemetry aggregator as the PMT driver describes it. Its layout (which
// counter lives at which offset) is not in the region: it is identified by
// the GUID and known to hw/x86/aet.h.
struct PmtRegion {
  PmtFeature feature = PmtFeature::kPerRmidEnergy;
  uint32_t guid = 0;
  int package_id = 0;      // physical package the aggregator belongs to
  unsigned num_rmids = 0;  // RMIDs it can track at once
  uint64_t size = 0;       // bytes of MMIO
};

class PmtTelemetryDevice {
 public:
  virtual ~PmtTelemetryDevice() = default;
  // Every per-RMID telemetry aggregator of the machine. Stable.
  virtual std::vector<PmtRegion> pmt_regions() const = 0;
  // A 64-bit read at byte `offset` of aggregator `region` (an index into
  // pmt_regions()). EIO for an unknown region, an unaligned offset or one
  // beyond the region.
  virtual Result<uint64_t> pmt_read64(size_t region, uint64_t offset) = 0;
};

}  // namespace resctrlfs::hw
