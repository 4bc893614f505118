// Implements DevMemDevice (see dev_mem.h).
#include "hw/broker/dev_mem.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace resctrlfs::hw::broker {

namespace {
constexpr uint64_t kPage = 4096;
}

DevMemDevice::~DevMemDevice() {
  for (auto& [page, p] : pages_) ::munmap(p, kPage);
  if (fd_ >= 0) ::close(fd_);
}

Result<volatile unsigned char*> DevMemDevice::at(uint64_t addr, unsigned width) {
  if ((width != 1 && width != 2 && width != 4 && width != 8) || addr % width != 0)
    return Error::log_only(EIO, "unaligned MMIO access");
  const uint64_t page = addr & ~(kPage - 1);
  std::lock_guard lock(mu_);
  if (auto it = pages_.find(page); it != pages_.end())
    return static_cast<volatile unsigned char*>(it->second) + (addr - page);
  if (fd_ < 0) {
    fd_ = ::open(path_.c_str(), O_RDWR | O_SYNC | O_CLOEXEC);
    if (fd_ < 0) return Error::make(EIO, path_ + ": " + std::strerror(errno));
  }
  struct stat st;
  if (::fstat(fd_, &st) != 0) return Error::make(EIO, path_ + ": " + std::strerror(errno));
  // A regular file (a test's stand-in) ends; touching a mapping past its end
  // would be SIGBUS.
  if (S_ISREG(st.st_mode) && page + kPage > static_cast<uint64_t>(st.st_size))
    return Error::make(EIO, path_ + ": address beyond the file");
  if (page > static_cast<uint64_t>(INT64_MAX)) return Error::log_only(EIO, "address out of range");
  void* p =
      ::mmap(nullptr, kPage, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, static_cast<off_t>(page));
  if (p == MAP_FAILED) return Error::make(EIO, path_ + ": mmap: " + std::strerror(errno));
  pages_[page] = p;
  return static_cast<volatile unsigned char*>(p) + (addr - page);
}

Result<uint64_t> DevMemDevice::mmio_read(uint64_t addr, unsigned width) {
  RESCTRLFS_ASSIGN_OR_RETURN(volatile unsigned char* p, at(addr, width));
  switch (width) {
    case 1:
      return uint64_t{*p};
    case 2:
      return uint64_t{*reinterpret_cast<volatile uint16_t*>(p)};
    case 4:
      return uint64_t{*reinterpret_cast<volatile uint32_t*>(p)};
    default:
      return *reinterpret_cast<volatile uint64_t*>(p);
  }
}

Result<void> DevMemDevice::mmio_write(uint64_t addr, unsigned width, uint64_t value) {
  RESCTRLFS_ASSIGN_OR_RETURN(volatile unsigned char* p, at(addr, width));
  switch (width) {
    case 1:
      *p = static_cast<uint8_t>(value);
      break;
    case 2:
      *reinterpret_cast<volatile uint16_t*>(p) = static_cast<uint16_t>(value);
      break;
    case 4:
      *reinterpret_cast<volatile uint32_t*>(p) = static_cast<uint32_t>(value);
      break;
    default:
      *reinterpret_cast<volatile uint64_t*>(p) = value;
  }
  return Ok();
}

}  // namespace resctrlfs::hw::broker
