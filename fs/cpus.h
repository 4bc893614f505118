// Defines the kernel's CPU bitmap syntaxes as the `cpus` and `cpus_list`
// files see them: the parsers and printers of base/cpulist.h (the hex chunk
// format of %*pb / bitmap_parse and the range list of %*pbl /
// bitmap_parselist, with the kernel's errno for each kind of bad input),
// given the write buffer cut at its first NUL as the kernel's handlers see
// it.
#pragma once

#include <string>
#include <string_view>

#include "base/cpulist.h"
#include "base/cpumask.h"
#include "base/result.h"

namespace resctrlfs::fs {

// bitmap_parse over `nbits` bits (base/cpulist.h parse_cpu_mask) of the
// text before the first NUL. Errors: EINVAL, EOVERFLOW; no message.
Result<CpuMask> parse_cpu_mask(std::string_view text, unsigned nbits);

// bitmap_parselist over `nbits` bits (base/cpulist.h parse_cpu_list,
// kernel syntax) of the text before the first NUL. Errors: EINVAL, ERANGE,
// EOVERFLOW; no message.
Result<CpuMask> parse_cpu_list(std::string_view text, unsigned nbits);

// %*pb and %*pbl (no trailing newline).
using resctrlfs::format_cpu_list;
using resctrlfs::format_cpu_mask;

}  // namespace resctrlfs::fs
