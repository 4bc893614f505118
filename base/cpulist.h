// Defines the kernel's two printed forms of a CPU set, both ways, for every
// layer: the hex mask of %*pb (resctrl's `cpus` file, sysfs shared_cpu_map)
// and the range list of %*pbl (`cpus_list`, sysfs cpu/online). The parsers
// follow the rules of the kernel's lib/bitmap-str.c (bitmap_parse,
// bitmap_parselist) and report the kernel's errno for each kind of bad
// input; the caller gives the number of bits, which is its limit.
//
// Header-only, like the rest of base/.
#pragma once

#include <cctype>
#include <cerrno>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/cpumask.h"
#include "base/result.h"

namespace resctrlfs {

// Which list syntax parse_cpu_list() accepts.
enum class CpuListSyntax {
  // Everything bitmap_parselist() accepts: "a", "a-b", "a-b:used/group",
  // "all", "N" (the last bit), items separated by commas or whitespace,
  // empty items skipped, the text ending at the first newline.
  kKernel,
  // Only what the kernel prints (%*pbl): "a" and "a-b" with a <= b joined by
  // single commas; blanks around the list and trailing newlines are ignored.
  // For text read from sysfs, where anything else means the file is not a
  // CPU list.
  kPrinted,
};

namespace cpulist_detail {

// The kernel's isspace() (Latin-1: 0xa0 counts).
inline bool is_space(char c) {
  const unsigned char u = static_cast<unsigned char>(c);
  return u == ' ' || (u >= '\t' && u <= '\r') || u == 0xa0;
}
inline int hex_to_bin(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}
inline bool end_of_chunk(char c) { return is_space(c) || c == ','; }
inline bool end_of_str(char c) { return c == '\0' || c == '\n'; }
inline bool end_of_region(char c) { return end_of_chunk(c) || end_of_str(c); }
inline char at(std::string_view s, size_t pos) { return pos < s.size() ? s[pos] : '\0'; }

// bitmap_getnum: decimal, or 'N' for `lastbit` when `allow_n`; advances
// `pos` past the number. 0, -EINVAL (no digits) or -EOVERFLOW (> 32 bits).
inline int get_num(std::string_view s, size_t& pos, unsigned& num, unsigned lastbit, bool allow_n) {
  if (allow_n && at(s, pos) == 'N') {
    num = lastbit;
    ++pos;
    return 0;
  }
  uint64_t n = 0;
  const size_t start = pos;
  bool overflow = false;
  while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') {
    const uint64_t d = static_cast<uint64_t>(s[pos] - '0');
    if (n > (UINT64_MAX - d) / 10) overflow = true;
    n = n * 10 + d;
    ++pos;
  }
  if (pos == start) return -EINVAL;
  if (overflow || n > UINT32_MAX) return -EOVERFLOW;
  num = static_cast<unsigned>(n);
  return 0;
}

// Blanks around the text and trailing newlines removed (kPrinted).
inline std::string_view trim_printed(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() &&
         (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '\n'))
    s.remove_suffix(1);
  return s;
}

}  // namespace cpulist_detail

// bitmap_parse over `nbits` bits: 32-bit hex chunks, most significant first,
// separated by commas; whitespace and empty chunks allowed; stops at the
// first newline. Errors: EINVAL (bad character, "0x"), EOVERFLOW (a chunk of
// more than 8 digits, too many chunks, or bits at or beyond nbits). The
// Error carries no message (the caller words it).
inline Result<CpuMask> parse_cpu_mask(std::string_view text, unsigned nbits) {
  using namespace cpulist_detail;
  const size_t nl = text.find('\n');
  if (nl != std::string_view::npos) text = text.substr(0, nl);
  const unsigned nchunks = (nbits + 31) / 32;
  std::vector<uint32_t> chunks;
  // Parse backwards from the end, as the kernel does: the last chunk is the
  // least significant.
  long end = static_cast<long>(text.size()) - 1;
  for (;;) {
    while (end >= 0 && end_of_chunk(text[end])) --end;
    if (end < 0) break;
    if (chunks.size() >= nchunks) return Error::make(EOVERFLOW);
    uint32_t val = 0;
    bool done = false;
    for (int i = 0; i < 32; i += 4) {
      const int c = hex_to_bin(text[end--]);
      if (c < 0) return Error::make(EINVAL);
      val |= static_cast<uint32_t>(c) << i;
      if (end < 0 || end_of_chunk(text[end])) {
        done = true;
        break;
      }
    }
    // After eight digits the kernel consumes one more character: a hex digit
    // is an overflow, anything else is skipped.
    if (!done && end >= 0 && hex_to_bin(text[end--]) >= 0) return Error::make(EOVERFLOW);
    chunks.push_back(val);
  }
  CpuMask mask(nbits);
  for (size_t ci = 0; ci < chunks.size(); ++ci) {
    for (unsigned b = 0; b < 32; ++b) {
      if ((chunks[ci] >> b) & 1U) {
        const unsigned cpu = static_cast<unsigned>(ci) * 32 + b;
        if (cpu >= nbits) return Error::make(EOVERFLOW);
        mask.set(cpu);
      }
    }
  }
  return mask;
}

// A CPU list over `nbits` bits in `syntax` (see CpuListSyntax). Errors, as
// bitmap_parselist: EINVAL (syntax, or a range whose start is after its
// end), ERANGE (a CPU number >= nbits), EOVERFLOW (a number beyond 32 bits).
// The Error carries no message (the caller words it).
inline Result<CpuMask> parse_cpu_list(std::string_view text, unsigned nbits,
                                      CpuListSyntax syntax = CpuListSyntax::kKernel) {
  using namespace cpulist_detail;
  const bool kernel = syntax == CpuListSyntax::kKernel;
  if (!kernel) text = trim_printed(text);
  CpuMask mask(nbits);
  const unsigned lastbit = nbits - 1;
  size_t pos = 0;
  for (;;) {
    // bitmap_find_region
    if (kernel) {
      while (pos < text.size() && end_of_chunk(text[pos])) ++pos;
      if (end_of_str(at(text, pos))) return mask;
    } else if (pos >= text.size()) {
      return mask;
    }
    unsigned start = 0, end = 0, off = 0, group_len = 0;
    bool finished = false;
    // bitmap_parse_region
    bool pattern = true;
    auto lower = [&](size_t i) { return std::tolower(static_cast<unsigned char>(at(text, i))); };
    if (kernel && lower(pos) == 'a' && lower(pos + 1) == 'l' && lower(pos + 2) == 'l') {
      start = 0;
      end = lastbit;
      pos += 3;
    } else {
      if (int rc = get_num(text, pos, start, lastbit, kernel); rc != 0) return Error::make(-rc);
      if (end_of_region(at(text, pos))) {
        end = start;
        pattern = false;
      } else {
        if (at(text, pos) != '-') return Error::make(EINVAL);
        ++pos;
        if (int rc = get_num(text, pos, end, lastbit, kernel); rc != 0) return Error::make(-rc);
      }
    }
    if (pattern && !end_of_region(at(text, pos))) {
      if (!kernel || at(text, pos) != ':') return Error::make(EINVAL);
      ++pos;
      if (int rc = get_num(text, pos, off, lastbit, true); rc != 0) return Error::make(-rc);
      if (at(text, pos) != '/') return Error::make(EINVAL);
      ++pos;
      if (int rc = get_num(text, pos, group_len, lastbit, true); rc != 0) return Error::make(-rc);
    } else {
      off = end + 1;
      group_len = end + 1;
      finished = end_of_str(at(text, pos));
    }
    if (!kernel) {
      // One comma, then the next item; nothing else between items.
      if (pos < text.size()) {
        if (text[pos] != ',' || pos + 1 >= text.size()) return Error::make(EINVAL);
        ++pos;
      }
      finished = pos >= text.size();
    }
    // bitmap_check_region
    if (start > end || group_len == 0 || off > group_len) return Error::make(EINVAL);
    if (end >= nbits) return Error::make(ERANGE);
    // bitmap_set_region
    for (uint64_t s = start; s <= end; s += group_len) {
      uint64_t len = end - s + 1;
      if (len > off) len = off;
      for (uint64_t b = s; b < s + len; ++b) mask.set(static_cast<unsigned>(b));
    }
    if (finished) return mask;
  }
}

// %*pb over mask.size() bits (no trailing newline): 32-bit groups of hex
// digits, most significant first, joined by commas; the first group has as
// many digits as its bits need.
inline std::string format_cpu_mask(const CpuMask& mask) {
  static const char kHex[] = "0123456789abcdef";
  const unsigned nbits = mask.size();
  unsigned chunksz = nbits & 31U;
  if (chunksz == 0) chunksz = 32;
  std::string out;
  bool first = true;
  for (long i = static_cast<long>((nbits + 31) / 32 * 32) - 32; i >= 0; i -= 32) {
    uint32_t val = 0;
    for (unsigned b = 0; b < chunksz; ++b)
      if (mask.test(static_cast<unsigned>(i) + b)) val |= 1U << b;
    if (!first) out += ',';
    first = false;
    const unsigned width = (chunksz + 3) / 4;
    std::string digits;
    do {
      digits.insert(digits.begin(), kHex[val & 0xf]);
      val >>= 4;
    } while (val != 0);
    while (digits.size() < width) digits.insert(digits.begin(), '0');
    out += digits;
    chunksz = 32;
  }
  return out;
}

// %*pbl (no trailing newline): "0-3,8"; "" for no CPUs.
inline std::string format_cpu_list(const CpuMask& mask) {
  std::string out;
  const unsigned n = mask.size();
  // Run by run, a word per step (CpuMask::next / next_clear): the cost is
  // the words and the runs, not every CPU of the machine.
  for (unsigned start = mask.next(0); start < n;) {
    const unsigned end = mask.next_clear(start);  // one past the run
    if (!out.empty()) out += ',';
    out += std::to_string(start);
    if (end - 1 != start) {
      out += '-';
      out += std::to_string(end - 1);
    }
    start = mask.next(end);
  }
  return out;
}

// A CPU set given as numbers, as a mask of `nbits` bits (numbers at or
// beyond nbits are left out).
inline CpuMask cpu_mask_of(const std::vector<unsigned>& cpus, unsigned nbits) {
  CpuMask m(nbits);
  for (unsigned c : cpus) m.set(c);
  return m;
}

}  // namespace resctrlfs
