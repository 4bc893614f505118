// Implements DevCpuidSource (see dev_cpuid.h).
#include "hw/real/dev_cpuid.h"

#include <fcntl.h>
#include <unistd.h>

#include <string>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace resctrlfs::hw::real {

DevCpuidSource::~DevCpuidSource() {
  for (auto& [cpu, fd] : fds_)
    if (fd >= 0) ::close(fd);
}

CpuidRegs DevCpuidSource::cpuid(unsigned cpu, uint32_t leaf, uint32_t subleaf) const {
  {
    std::lock_guard lock(mu_);
    auto it = fds_.find(cpu);
    if (it == fds_.end()) {
      std::string path = root_ + "/" + std::to_string(cpu) + "/cpuid";
      it = fds_.emplace(cpu, ::open(path.c_str(), O_RDONLY | O_CLOEXEC)).first;
    }
    if (it->second >= 0) {
      uint32_t r[4];
      off_t off = static_cast<off_t>(leaf | (uint64_t{subleaf} << 32));
      if (::pread(it->second, r, sizeof(r), off) == static_cast<ssize_t>(sizeof(r)))
        return CpuidRegs{r[0], r[1], r[2], r[3]};
    }
  }
  if (!fallback_) return CpuidRegs{};
#if defined(__x86_64__) || defined(__i386__)
  unsigned a, b, c, d;
  __cpuid_count(leaf, subleaf, a, b, c, d);
  // The instruction answers out-of-range leaves with the highest leaf's
  // data; report them as absent like the device does.
  unsigned max_a, x1, x2, x3;
  __cpuid((leaf & 0x80000000U), max_a, x1, x2, x3);
  if (leaf > max_a) return CpuidRegs{};
  return CpuidRegs{a, b, c, d};
#else
  return CpuidRegs{};
#endif
}

}  // namespace resctrlfs::hw::real
