// Implements the CPU bitmap parsers and printers of cpus.h, following the
// kernel's lib/bitmap-str.c rules.
#include "fs/cpus.h"

#include <cctype>
#include <cerrno>
#include <cstdint>
#include <vector>

#include "fs/kstr.h"

namespace resctrlfs::fs {

namespace {

int hex_to_bin(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool end_of_chunk(char c) { return kstr::is_space(c) || c == ','; }
bool end_of_str(char c) { return c == '\0' || c == '\n'; }
bool end_of_region(char c) { return end_of_chunk(c) || end_of_str(c); }

}  // namespace

Result<CpuMask> parse_cpu_mask(std::string_view text, unsigned nbits) {
  text = kstr::c_string(text);
  size_t nl = text.find('\n');
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
      int c = hex_to_bin(text[end--]);
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
        unsigned cpu = static_cast<unsigned>(ci) * 32 + b;
        if (cpu >= nbits) return Error::make(EOVERFLOW);
        mask.set(cpu);
      }
    }
  }
  return mask;
}

namespace {

struct Region {
  unsigned start = 0, end = 0, off = 0, group_len = 0;
};

// bitmap_getnum: decimal or 'N'; returns the position after the number.
int get_num(std::string_view s, size_t& pos, unsigned& num, unsigned lastbit) {
  if (pos < s.size() && s[pos] == 'N') {
    num = lastbit;
    ++pos;
    return 0;
  }
  uint64_t n = 0;
  size_t start = pos;
  bool overflow = false;
  while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') {
    uint64_t d = static_cast<uint64_t>(s[pos] - '0');
    if (n > (UINT64_MAX - d) / 10) overflow = true;
    n = n * 10 + d;
    ++pos;
  }
  if (pos == start) return -EINVAL;
  if (overflow || n > UINT32_MAX) return -EOVERFLOW;
  num = static_cast<unsigned>(n);
  return 0;
}

char at(std::string_view s, size_t pos) { return pos < s.size() ? s[pos] : '\0'; }

}  // namespace

Result<CpuMask> parse_cpu_list(std::string_view text, unsigned nbits) {
  text = kstr::c_string(text);
  CpuMask mask(nbits);
  const unsigned lastbit = nbits - 1;
  size_t pos = 0;
  for (;;) {
    // bitmap_find_region
    while (pos < text.size() && end_of_chunk(text[pos])) ++pos;
    if (end_of_str(at(text, pos))) return mask;
    Region r;
    bool finished = false;
    // bitmap_parse_region
    bool pattern = true;
    auto lower = [&](size_t i) { return std::tolower(static_cast<unsigned char>(at(text, i))); };
    if (lower(pos) == 'a' && lower(pos + 1) == 'l' && lower(pos + 2) == 'l') {
      r.start = 0;
      r.end = lastbit;
      pos += 3;
    } else {
      if (int rc = get_num(text, pos, r.start, lastbit); rc != 0) return Error::make(-rc);
      if (end_of_region(at(text, pos))) {
        r.end = r.start;
        pattern = false;
      } else {
        if (at(text, pos) != '-') return Error::make(EINVAL);
        ++pos;
        if (int rc = get_num(text, pos, r.end, lastbit); rc != 0) return Error::make(-rc);
      }
    }
    if (pattern && !end_of_region(at(text, pos))) {
      if (at(text, pos) != ':') return Error::make(EINVAL);
      ++pos;
      if (int rc = get_num(text, pos, r.off, lastbit); rc != 0) return Error::make(-rc);
      if (at(text, pos) != '/') return Error::make(EINVAL);
      ++pos;
      if (int rc = get_num(text, pos, r.group_len, lastbit); rc != 0) return Error::make(-rc);
    } else {
      r.off = r.end + 1;
      r.group_len = r.end + 1;
      finished = end_of_str(at(text, pos));
    }
    // bitmap_check_region
    if (r.start > r.end || r.group_len == 0 || r.off > r.group_len) return Error::make(EINVAL);
    if (r.end >= nbits) return Error::make(ERANGE);
    // bitmap_set_region
    for (uint64_t s = r.start; s <= r.end; s += r.group_len) {
      uint64_t len = r.end - s + 1;
      if (len > r.off) len = r.off;
      for (uint64_t b = s; b < s + len; ++b) mask.set(static_cast<unsigned>(b));
    }
    if (finished) return mask;
  }
}

std::string format_cpu_mask(const CpuMask& mask) {
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
    unsigned width = (chunksz + 3) / 4;
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

std::string format_cpu_list(const CpuMask& mask) {
  std::string out;
  const unsigned n = mask.size();
  unsigned c = 0;
  while (c < n) {
    if (!mask.test(c)) {
      ++c;
      continue;
    }
    unsigned start = c;
    while (c + 1 < n && mask.test(c + 1)) ++c;
    if (!out.empty()) out += ',';
    out += std::to_string(start);
    if (c != start) {
      out += '-';
      out += std::to_string(c);
    }
    ++c;
  }
  return out;
}

}  // namespace resctrlfs::fs
