// Defines the kernel's CPU bitmap syntaxes used by the `cpus` and
// `cpus_list` files: the hex chunk format (%*pb / bitmap_parse) and the
// range list format (%*pbl / bitmap_parselist), both ways, with the
// kernel's errno for each kind of bad input.
#pragma once

#include <string>
#include <string_view>

#include "base/cpumask.h"
#include "base/result.h"

namespace resctrlfs::fs {

// bitmap_parse over `nbits` bits: 32-bit hex chunks, most significant first,
// separated by commas; whitespace and empty chunks allowed; stops at the
// first newline. Errors: EINVAL (bad character, "0x"), EOVERFLOW (a chunk of
// more than 8 digits, too many chunks, or bits at or beyond nbits). The
// Error carries no message (the caller words it).
Result<CpuMask> parse_cpu_mask(std::string_view text, unsigned nbits);

// bitmap_parselist over `nbits` bits: "a", "a-b", "a-b:used/group", "all",
// "N" (last bit), comma or whitespace separated. Errors: EINVAL (syntax),
// ERANGE (a CPU number >= nbits), EOVERFLOW (a number beyond 32 bits).
Result<CpuMask> parse_cpu_list(std::string_view text, unsigned nbits);

// %*pb over mask.size() bits (no trailing newline).
std::string format_cpu_mask(const CpuMask& mask);
// %*pbl (no trailing newline): "0-3,8".
std::string format_cpu_list(const CpuMask& mask);

}  // namespace resctrlfs::fs
