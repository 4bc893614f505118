// Implements fs's CPU bitmap parsers: the kernel's (base/cpulist.h) on the
// write buffer as the kernel's handlers see it.
#include "fs/cpus.h"

#include "fs/kstr.h"

namespace resctrlfs::fs {

Result<CpuMask> parse_cpu_mask(std::string_view text, unsigned nbits) {
  return resctrlfs::parse_cpu_mask(kstr::c_string(text), nbits);
}

Result<CpuMask> parse_cpu_list(std::string_view text, unsigned nbits) {
  return resctrlfs::parse_cpu_list(kstr::c_string(text), nbits, CpuListSyntax::kKernel);
}

}  // namespace resctrlfs::fs
