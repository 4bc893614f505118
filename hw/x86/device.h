// Defines the hardware seams of hw/: CpuidSource (CPUID leaves of a
// logical CPU), MsrDevice (64-bit model-specific registers of a logical
// CPU), MmioDevice (physical-memory registers: the I/O RDT tagging
// registers IO_PQR_CLOSn / IO_PQR_RMIDn of the channels an ACPI IRDT table
// names) and PmtTelemetryDevice (Intel PMT telemetry aggregators, MMIO
// regions of per-RMID counters). Everything above them (decoding, register
// programming, counter folding, telemetry layouts) is the same code on the
// real machine and on the simulator.
#pragma once

#include <array>
#include <cerrno>
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

// One register access of a batch (MsrDevice::run).
struct MsrOp {
  unsigned cpu = 0;
  uint32_t msr = 0;
  uint64_t value = 0;  // the value to write; the value read after a read
  bool write = false;
  int err = 0;  // after run: 0, EIO (#GP), EPERM (refused), ECANCELED (not run)
};

class MsrDevice {
 public:
  virtual ~MsrDevice() = default;
  // Runs `ops` in order and stops at the first that fails: that one gets
  // its error, the rest ECANCELED. A device behind a transport (the broker)
  // sends the whole batch as one request; when the transport itself fails
  // every op reads EIO, and which of them reached the registers is unknown
  // (see reconnects()).
  virtual void run(std::vector<MsrOp>& ops) {
    bool failed = false;
    for (MsrOp& op : ops) {
      if (failed) {
        op.err = ECANCELED;
        continue;
      }
      if (op.write) {
        auto r = write(op.cpu, op.msr, op.value);
        op.err = r.ok() ? 0 : r.error().code;
      } else {
        auto r = read(op.cpu, op.msr);
        op.err = r.ok() ? 0 : r.error().code;
        if (r.ok()) op.value = *r;
      }
      if (op.err == 0) continue;
      if (op.err != EPERM) op.err = EIO;
      failed = true;
    }
  }
  // How many times the way to the registers was lost and made again (a
  // broker that restarted). While it was lost, writes may have reached the
  // registers or not, so a caller that sees this change writes its state
  // again. 0 for a device that cannot lose it.
  virtual uint64_t reconnects() const { return 0; }
  // RDMSR on `cpu`. Fails (EIO) as a #GP would: unknown register, offline
  // CPU, or a broker that refused the request (EPERM).
  virtual Result<uint64_t> read(unsigned cpu, uint32_t msr) = 0;
  // WRMSR on `cpu`. Fails (EIO) as a #GP would: unknown register, reserved
  // bits set, index beyond the enumerated maximum.
  virtual Result<void> write(unsigned cpu, uint32_t msr, uint64_t value) = 0;
};

// One access of a batch (MmioDevice::run): `width` bytes (2, 4 or 8,
// naturally aligned) at physical address `addr`, little-endian.
struct MmioOp {
  uint64_t addr = 0;
  unsigned width = 0;
  uint64_t value = 0;  // the value to write; the value read after a read
  bool write = false;
  int err = 0;  // after run: 0, EIO, EPERM (refused), ECANCELED (not run)
};

// Memory-mapped registers. Writes to reserved offsets of a register page,
// or of values beyond a field's width, are ignored by the hardware (Intel
// RDT architecture specification, chapter 6), so a write never faults on
// the device's side; EIO is a transport or mapping failure, EPERM an
// address the device (the broker) does not serve.
class MmioDevice {
 public:
  virtual ~MmioDevice() = default;
  // Runs `ops` in order and stops at the first that fails, as
  // MsrDevice::run.
  virtual void run(std::vector<MmioOp>& ops) {
    bool failed = false;
    for (MmioOp& op : ops) {
      if (failed) {
        op.err = ECANCELED;
        continue;
      }
      if (op.write) {
        auto r = mmio_write(op.addr, op.width, op.value);
        op.err = r.ok() ? 0 : r.error().code;
      } else {
        auto r = mmio_read(op.addr, op.width);
        op.err = r.ok() ? 0 : r.error().code;
        if (r.ok()) op.value = *r;
      }
      if (op.err == 0) continue;
      if (op.err != EPERM) op.err = EIO;
      failed = true;
    }
  }
  virtual Result<uint64_t> mmio_read(uint64_t addr, unsigned width) = 0;
  virtual Result<void> mmio_write(uint64_t addr, unsigned width, uint64_t value) = 0;
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
