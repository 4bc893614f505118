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

Result<bool> DevMemDevice::open_locked() {
  if (fd_ < 0) {
    int fd = ::open(path_.c_str(), O_RDWR | O_SYNC | O_CLOEXEC);
    if (fd < 0) return Error::make(EIO, path_ + ": " + std::strerror(errno));
    struct stat st;
    if (::fstat(fd, &st) != 0) {
      const int e = errno;
      ::close(fd);
      return Error::make(EIO, path_ + ": " + std::strerror(e));
    }
    fd_ = fd;
    chr_ = S_ISCHR(st.st_mode);
  }
  return chr_;
}

namespace {
bool valid_access(uint64_t addr, unsigned width) {
  return (width == 1 || width == 2 || width == 4 || width == 8) && addr % width == 0 &&
         addr <= static_cast<uint64_t>(INT64_MAX) - width;
}
}  // namespace

Result<uint64_t> DevMemDevice::file_read(uint64_t addr, unsigned width) {
  uint64_t v = 0;  // little-endian, as the registers
  ssize_t n = ::pread(fd_, &v, width, static_cast<off_t>(addr));
  if (n != static_cast<ssize_t>(width))
    return Error::make(EIO, path_ + ": read at " + std::to_string(addr) + ": " +
                                (n < 0 ? std::strerror(errno) : "short read"));
  return v;
}

Result<void> DevMemDevice::file_write(uint64_t addr, unsigned width, uint64_t value) {
  ssize_t n = ::pwrite(fd_, &value, width, static_cast<off_t>(addr));
  if (n != static_cast<ssize_t>(width))
    return Error::make(EIO, path_ + ": write at " + std::to_string(addr) + ": " +
                                (n < 0 ? std::strerror(errno) : "short write"));
  return Ok();
}

Result<volatile unsigned char*> DevMemDevice::at(uint64_t addr, unsigned width) {
  (void)width;  // valid_access() checked it: an aligned access stays in its page
  const uint64_t page = addr & ~(kPage - 1);
  if (auto it = pages_.find(page); it != pages_.end())
    return static_cast<volatile unsigned char*>(it->second) + (addr - page);
  void* p =
      ::mmap(nullptr, kPage, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, static_cast<off_t>(page));
  if (p == MAP_FAILED) return Error::make(EIO, path_ + ": mmap: " + std::strerror(errno));
  pages_[page] = p;
  return static_cast<volatile unsigned char*>(p) + (addr - page);
}

Result<uint64_t> DevMemDevice::mmio_read(uint64_t addr, unsigned width) {
  if (!valid_access(addr, width)) return Error::log_only(EIO, "unaligned MMIO access");
  std::lock_guard lock(mu_);
  RESCTRLFS_ASSIGN_OR_RETURN(bool mapped, open_locked());
  if (!mapped) return file_read(addr, width);
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
  if (!valid_access(addr, width)) return Error::log_only(EIO, "unaligned MMIO access");
  std::lock_guard lock(mu_);
  RESCTRLFS_ASSIGN_OR_RETURN(bool mapped, open_locked());
  if (!mapped) return file_write(addr, width, value);
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
