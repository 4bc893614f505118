// Defines the kernel's small string helpers that resctrl's parsers are built
// on (isspace, strim, strsep, kstrtoull/kstrtoint/kstrtobool), reproduced so
// that resctrlfs accepts and rejects exactly the inputs the kernel does.
//
// All functions work on C-string semantics where the kernel does: callers
// cut the write buffer at its first NUL byte first (see c_string()).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace resctrlfs::fs::kstr {

// The kernel's isspace(): \t \n \v \f \r, space and Latin-1 NBSP (0xa0).
bool is_space(char c);

// The write buffer as the kernel's handlers see it: cut at the first NUL.
std::string_view c_string(std::string_view s);

// strim(): leading and trailing isspace() removed.
std::string_view strim(std::string_view s);

// strsep(): returns the text up to the first character of `delims` and
// advances `rest` past it; when no delimiter remains, returns all of `rest`
// and sets `rest` to nullopt (the kernel's NULL).
std::string_view strsep(std::optional<std::string_view>& rest, std::string_view delims);

// kstrtoull(s, base): 0 on success, else -EINVAL or -ERANGE. Accepts a
// leading '+', base auto-detection for base 0 (0x hex, leading 0 octal), a
// "0x" prefix for base 16, and one trailing '\n'.
int kstrtoull(std::string_view s, unsigned base, uint64_t& out);
int kstrtoul(std::string_view s, unsigned base, uint64_t& out);
int kstrtouint(std::string_view s, unsigned base, uint32_t& out);
// kstrtoint(s, base): signed, '-' allowed.
int kstrtoint(std::string_view s, unsigned base, int& out);
// kstrtobool(): first character 1yYtT / 0nNfF, "on"/"of..." any case.
int kstrtobool(std::string_view s, bool& out);

}  // namespace resctrlfs::fs::kstr
