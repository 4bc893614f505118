// Defines DevPmtDevice: the PmtTelemetryDevice over the intel_pmt driver's
// files, one ROOT/sys/class/intel_pmt/telem<N>/telem per aggregator (read
// with one 8-byte pread at the counter's byte offset; the kernel copies
// the word out of the aggregator's MMIO region). Each file is opened once,
// read-only, on its first read. Only the broker uses it, and only for the
// aggregators and offsets its Policy allows.
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "hw/x86/device.h"
#include "hw/x86/pmt_sysfs.h"

namespace resctrlfs::hw::broker {

class DevPmtDevice final : public PmtTelemetryDevice {
 public:
  explicit DevPmtDevice(std::vector<x86::PmtAggregator> aggregators)
      : aggregators_(std::move(aggregators)) {}
  ~DevPmtDevice() override;
  DevPmtDevice(const DevPmtDevice&) = delete;
  DevPmtDevice& operator=(const DevPmtDevice&) = delete;
  std::vector<PmtRegion> pmt_regions() const override;
  Result<uint64_t> pmt_read64(size_t region, uint64_t offset) override;

 private:
  std::vector<x86::PmtAggregator> aggregators_;
  std::mutex mu_;
  std::map<size_t, int> fds_;
};

}  // namespace resctrlfs::hw::broker
