// Defines DevMemDevice: the MmioDevice over a physical-memory file (the
// kernel's /dev/mem on a real machine; in tests a sparse regular file
// standing in for it, file offset = physical address). On a character
// device (/dev/mem) each 4 KiB page is mapped once (MAP_SHARED, uncached
// through O_SYNC) and accessed with one load or store of exactly the
// register's width, as the I/O RDT registers need. Any other file (a test's
// stand-in, or resctrl-fakehw's emulation, whose accesses must reach the
// simulated machine as they happen) is read and written with one pread or
// pwrite of the register's width at offset = address. Only the broker uses
// it, and only for the pages its Policy allows.
#pragma once

#include <map>
#include <mutex>
#include <string>

#include "hw/x86/device.h"

namespace resctrlfs::hw::broker {

class DevMemDevice final : public MmioDevice {
 public:
  explicit DevMemDevice(std::string path = "/dev/mem") : path_(std::move(path)) {}
  ~DevMemDevice() override;
  DevMemDevice(const DevMemDevice&) = delete;
  DevMemDevice& operator=(const DevMemDevice&) = delete;
  Result<uint64_t> mmio_read(uint64_t addr, unsigned width) override;
  Result<void> mmio_write(uint64_t addr, unsigned width, uint64_t value) override;

 private:
  // The mapping of the page holding [addr, addr + width), or an error
  // (unaligned or page-crossing access, a page beyond a regular file's end,
  // open or mmap failure).
  Result<volatile unsigned char*> at(uint64_t addr, unsigned width);
  // Opens the file once; true when it is a character device (mapped).
  Result<bool> open_locked();
  // pread/pwrite of `width` bytes (not a character device).
  Result<uint64_t> file_read(uint64_t addr, unsigned width);
  Result<void> file_write(uint64_t addr, unsigned width, uint64_t value);

  std::string path_;
  std::mutex mu_;
  int fd_ = -1;
  bool chr_ = false;
  std::map<uint64_t, void*> pages_;
};

}  // namespace resctrlfs::hw::broker
