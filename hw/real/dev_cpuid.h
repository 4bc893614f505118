// Defines DevCpuidSource: CPUID of a logical CPU read from the kernel's
// /dev/cpu/N/cpuid (pread of 16 bytes at offset leaf | subleaf << 32), with
// the CPUID instruction of the calling CPU as a fallback when the device is
// missing or unreadable (RDT/PQoS leaves are identical on every CPU).
#pragma once

#include <map>
#include <mutex>

#include "hw/x86/device.h"

namespace resctrlfs::hw::real {

class DevCpuidSource final : public CpuidSource {
 public:
  // `instruction_fallback` false: a missing device reads as all-zero leaves
  // (an emulated /dev/cpu must not be mixed with this machine's CPUID).
  explicit DevCpuidSource(std::string dev_root = "/dev/cpu", bool instruction_fallback = true)
      : root_(std::move(dev_root)), fallback_(instruction_fallback) {}
  ~DevCpuidSource() override;
  CpuidRegs cpuid(unsigned cpu, uint32_t leaf, uint32_t subleaf) const override;

 private:
  std::string root_;
  bool fallback_ = true;
  mutable std::mutex mu_;
  mutable std::map<unsigned, int> fds_;  // lazily opened, -1 when unavailable
};

}  // namespace resctrlfs::hw::real
