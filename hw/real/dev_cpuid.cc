// Implements DevCpuidSource (see dev_cpuid.h).
#include "hw/real/dev_cpuid.h"

#include <fcntl.h>
#include <unistd.h>

#include <string>

#include "hw/x86/sysfs_topology.h"

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

namespace resctrlfs::hw {

// Here rather than beside make_msr_backend(): the sandbox, which links no
// real backend, reads the same identity.
Result<x86::X86Platform> x86_platform_from_cpuid(const std::string& hw_root) {
  const std::string root = hw_root == "/" ? "" : hw_root;
  RESCTRLFS_ASSIGN_OR_RETURN(x86::Topology topo,
                             x86::read_sysfs_topology(root + "/sys/devices/system/cpu"));
  real::DevCpuidSource cpuid(root + "/dev/cpu", /*instruction_fallback=*/root.empty());
  return x86::decode_platform(cpuid, topo, nullptr, x86::RdtOptions::all());
}

Result<std::string> cpuinfo_flags_from_cpuid(const std::string& hw_root) {
  RESCTRLFS_ASSIGN_OR_RETURN(x86::X86Platform info, x86_platform_from_cpuid(hw_root));
  std::string line = "flags\t\t:";
  for (const auto& f : x86::cpuinfo_rdt_flags(info)) line += " " + f;
  return line + "\n";
}

}  // namespace resctrlfs::hw
