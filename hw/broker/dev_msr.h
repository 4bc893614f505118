// Defines DevMsrDevice: the MsrDevice over the kernel's /dev/cpu/N/msr, one
// lazily opened file descriptor per CPU, pread/pwrite of 8 bytes at
// offset = register number. Only the broker uses it.
#pragma once

#include <map>
#include <mutex>
#include <string>

#include "hw/x86/device.h"

namespace resctrlfs::hw::broker {

class DevMsrDevice final : public MsrDevice {
 public:
  explicit DevMsrDevice(std::string dev_root = "/dev/cpu") : root_(std::move(dev_root)) {}
  ~DevMsrDevice() override;
  Result<uint64_t> read(unsigned cpu, uint32_t msr) override;
  Result<void> write(unsigned cpu, uint32_t msr, uint64_t value) override;

 private:
  Result<int> fd_for(unsigned cpu);

  std::string root_;
  std::mutex mu_;
  std::map<unsigned, int> fds_;
};

}  // namespace resctrlfs::hw::broker
