// Implements the kernel-compatible string helpers declared in kstrtox.h.
#include "schemata/kstrtox.h"

namespace resctrlfs::schemata::internal {

std::string_view strim(std::string_view s) {
  while (!s.empty() && kernel_isspace(s.back())) s.remove_suffix(1);
  while (!s.empty() && kernel_isspace(s.front())) s.remove_prefix(1);
  return s;
}

std::optional<uint64_t> kstrtoull(std::string_view s, unsigned base) {
  size_t pos = 0;
  if (pos < s.size() && s[pos] == '+') ++pos;
  // The kernel strips "0x" before looking at the digits, so "0x" alone has
  // no digits and is invalid, while "0x0x1" fails at the second 'x'.
  if (base == 16 && pos + 1 < s.size() && s[pos] == '0' && (s[pos + 1] | 0x20) == 'x') pos += 2;
  uint64_t value = 0;
  bool overflow = false;
  size_t digits = 0;
  for (; pos < s.size(); ++pos, ++digits) {
    const char c = s[pos];
    unsigned d;
    if (c >= '0' && c <= '9') {
      d = static_cast<unsigned>(c - '0');
    } else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f') {
      d = static_cast<unsigned>((c | 0x20) - 'a' + 10);
    } else {
      break;
    }
    if (d >= base) break;
    // Like the kernel, keep consuming digits after an overflow: the result
    // is an error either way, but the digit count decides nothing else.
    if (value > (UINT64_MAX - d) / base) overflow = true;
    value = value * base + d;
  }
  if (overflow || digits == 0) return std::nullopt;
  if (pos < s.size() && s[pos] == '\n') ++pos;
  if (pos != s.size()) return std::nullopt;
  return value;
}

std::optional<uint32_t> kstrtou32(std::string_view s, unsigned base) {
  const auto v = kstrtoull(s, base);
  if (!v || *v > UINT32_MAX) return std::nullopt;
  return static_cast<uint32_t>(*v);
}

}  // namespace resctrlfs::schemata::internal
