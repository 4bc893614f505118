// Implements DevMsrDevice (see dev_msr.h).
#include "hw/broker/dev_msr.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace resctrlfs::hw::broker {

DevMsrDevice::~DevMsrDevice() {
  for (auto& [cpu, fd] : fds_) ::close(fd);
}

Result<int> DevMsrDevice::fd_for(unsigned cpu) {
  std::lock_guard lock(mu_);
  if (auto it = fds_.find(cpu); it != fds_.end()) return it->second;
  std::string path = root_ + "/" + std::to_string(cpu) + "/msr";
  int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return Error::make(errno, path + ": " + std::strerror(errno));
  fds_[cpu] = fd;
  return fd;
}

Result<uint64_t> DevMsrDevice::read(unsigned cpu, uint32_t msr) {
  RESCTRLFS_ASSIGN_OR_RETURN(int fd, fd_for(cpu));
  uint64_t v = 0;
  if (::pread(fd, &v, sizeof(v), msr) != static_cast<ssize_t>(sizeof(v)))
    return Error::log_only(EIO, "rdmsr failed");
  return v;
}

Result<void> DevMsrDevice::write(unsigned cpu, uint32_t msr, uint64_t value) {
  RESCTRLFS_ASSIGN_OR_RETURN(int fd, fd_for(cpu));
  if (::pwrite(fd, &value, sizeof(value), msr) != static_cast<ssize_t>(sizeof(value)))
    return Error::log_only(EIO, "wrmsr failed");
  return Ok();
}

}  // namespace resctrlfs::hw::broker
