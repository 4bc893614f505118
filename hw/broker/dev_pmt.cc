// Implements DevPmtDevice (see dev_pmt.h).
#include "hw/broker/dev_pmt.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace resctrlfs::hw::broker {

DevPmtDevice::~DevPmtDevice() {
  for (auto& [i, fd] : fds_) ::close(fd);
}

std::vector<PmtRegion> DevPmtDevice::pmt_regions() const {
  std::vector<PmtRegion> out;
  for (const auto& a : aggregators_) out.push_back(a.region);
  return out;
}

Result<uint64_t> DevPmtDevice::pmt_read64(size_t region, uint64_t offset) {
  if (region >= aggregators_.size() || offset % sizeof(uint64_t) != 0 ||
      offset >= aggregators_[region].region.size ||
      aggregators_[region].region.size - offset < sizeof(uint64_t))
    return Error::log_only(EIO, "PMT read outside the aggregator");
  const std::string& path = aggregators_[region].data_path;
  std::lock_guard lock(mu_);
  auto it = fds_.find(region);
  if (it == fds_.end()) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return Error::log_only(EIO, path + ": " + std::strerror(errno));
    it = fds_.emplace(region, fd).first;
  }
  uint64_t v = 0;  // little-endian, as the aggregator's words
  ssize_t n = ::pread(it->second, &v, sizeof(v), static_cast<off_t>(offset));
  if (n != static_cast<ssize_t>(sizeof(v)))
    return Error::log_only(EIO, path + ": read at " + std::to_string(offset) + ": " +
                                    (n < 0 ? std::strerror(errno) : "short read"));
  return v;
}

}  // namespace resctrlfs::hw::broker
