// Implements the kernel string helpers of kstr.h.
#include "fs/kstr.h"

#include <cctype>
#include <cerrno>

namespace resctrlfs::fs::kstr {

bool is_space(char c) {
  unsigned char u = static_cast<unsigned char>(c);
  return u == ' ' || (u >= '\t' && u <= '\r') || u == 0xa0;
}

std::string_view c_string(std::string_view s) {
  size_t nul = s.find('\0');
  return nul == std::string_view::npos ? s : s.substr(0, nul);
}

std::string_view strim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

std::string_view strsep(std::optional<std::string_view>& rest, std::string_view delims) {
  if (!rest) return {};
  std::string_view r = *rest;
  size_t pos = r.find_first_of(delims);
  if (pos == std::string_view::npos) {
    rest.reset();
    return r;
  }
  rest = r.substr(pos + 1);
  return r.substr(0, pos);
}

namespace {

int digit_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  char l = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (l >= 'a' && l <= 'f') return l - 'a' + 10;
  return 99;
}

// _kstrtoull: no sign handling.
int parse_unsigned(std::string_view s, unsigned base, uint64_t& out) {
  // _parse_integer_fixup_radix
  if (base == 0) {
    if (!s.empty() && s[0] == '0') {
      if (s.size() >= 3 && std::tolower(static_cast<unsigned char>(s[1])) == 'x' &&
          std::isxdigit(static_cast<unsigned char>(s[2]))) {
        base = 16;
      } else {
        base = 8;
      }
    } else {
      base = 10;
    }
  }
  if (base == 16 && s.size() >= 2 && s[0] == '0' &&
      std::tolower(static_cast<unsigned char>(s[1])) == 'x') {
    s.remove_prefix(2);
  }
  uint64_t v = 0;
  bool overflow = false;
  size_t i = 0;
  for (; i < s.size(); ++i) {
    int d = digit_value(s[i]);
    if (d >= static_cast<int>(base)) break;
    if (v > (UINT64_MAX - static_cast<uint64_t>(d)) / base) overflow = true;
    v = v * base + static_cast<uint64_t>(d);
  }
  if (overflow) return -ERANGE;
  if (i == 0) return -EINVAL;
  s.remove_prefix(i);
  if (!s.empty() && s[0] == '\n') s.remove_prefix(1);
  if (!s.empty()) return -EINVAL;
  out = v;
  return 0;
}

}  // namespace

int kstrtoull(std::string_view s, unsigned base, uint64_t& out) {
  if (!s.empty() && s[0] == '+') s.remove_prefix(1);
  return parse_unsigned(s, base, out);
}

int kstrtoul(std::string_view s, unsigned base, uint64_t& out) { return kstrtoull(s, base, out); }

int kstrtouint(std::string_view s, unsigned base, uint32_t& out) {
  uint64_t v = 0;
  int rc = kstrtoull(s, base, v);
  if (rc != 0) return rc;
  if (v > UINT32_MAX) return -ERANGE;
  out = static_cast<uint32_t>(v);
  return 0;
}

int kstrtoint(std::string_view s, unsigned base, int& out) {
  int64_t v = 0;
  if (!s.empty() && s[0] == '-') {
    uint64_t t = 0;
    int rc = parse_unsigned(s.substr(1), base, t);
    if (rc != 0) return rc;
    if (t > static_cast<uint64_t>(INT64_MAX) + 1) return -ERANGE;
    v = -static_cast<int64_t>(t);
  } else {
    uint64_t t = 0;
    int rc = kstrtoull(s, base, t);
    if (rc != 0) return rc;
    if (t > static_cast<uint64_t>(INT64_MAX)) return -ERANGE;
    v = static_cast<int64_t>(t);
  }
  if (v < INT32_MIN || v > INT32_MAX) return -ERANGE;
  out = static_cast<int>(v);
  return 0;
}

int kstrtobool(std::string_view s, bool& out) {
  if (s.empty()) return -EINVAL;
  switch (s[0]) {
    case 'y':
    case 'Y':
    case 't':
    case 'T':
    case '1':
      out = true;
      return 0;
    case 'n':
    case 'N':
    case 'f':
    case 'F':
    case '0':
      out = false;
      return 0;
    case 'o':
    case 'O':
      if (s.size() >= 2) {
        char c = static_cast<char>(std::tolower(static_cast<unsigned char>(s[1])));
        if (c == 'n') {
          out = true;
          return 0;
        }
        if (c == 'f') {
          out = false;
          return 0;
        }
      }
      break;
    default:
      break;
  }
  return -EINVAL;
}

}  // namespace resctrlfs::fs::kstr
