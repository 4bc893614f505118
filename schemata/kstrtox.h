// Defines the kernel's string helpers that the schemata grammar depends on,
// re-implemented over std::string_view: its isspace() set, strim(), and the
// kstrtoull()/kstrtoul()/kstrtou32() number parsers.
//
// The kernel's acceptance rules are part of the user-visible ABI (a leading
// '+', a "0x" prefix only in base 16, one trailing '\n', no '-', overflow is
// an error), so they are mimicked here exactly rather than approximated with
// strtoul().
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace resctrlfs::schemata::internal {

// The kernel's isspace(): '\t' '\n' '\v' '\f' '\r', ' ' and Latin-1 NBSP
// (0xa0), which lib/ctype.c also classifies as space.
constexpr bool kernel_isspace(char c) {
  const auto u = static_cast<unsigned char>(c);
  return u == ' ' || (u >= '\t' && u <= '\r') || u == 0xa0;
}

// strim(): removes leading and trailing kernel_isspace() characters.
std::string_view strim(std::string_view s);

// kstrtoull(s, base): optional '+', then (base 16 only) an optional "0x"/"0X",
// then at least one digit of `base`, then at most one '\n' and nothing else.
// Returns nothing on any error (invalid text or overflow of 64 bits).
std::optional<uint64_t> kstrtoull(std::string_view s, unsigned base);
// kstrtoul on a 64-bit kernel is kstrtoull.
inline std::optional<uint64_t> kstrtoul(std::string_view s, unsigned base) {
  return kstrtoull(s, base);
}
// kstrtou32: kstrtoull, then values above U32_MAX are an error.
std::optional<uint32_t> kstrtou32(std::string_view s, unsigned base);

}  // namespace resctrlfs::schemata::internal
