// Table-driven tests of the kernel string helpers (lib/kstrtox.c and
// strim() semantics) the schemata grammar is built on.
#include <optional>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "schemata/kstrtox.h"

namespace resctrlfs::schemata::internal {
namespace {

struct NumRow {
  std::string in;
  unsigned base;
  std::optional<uint64_t> want;
};

TEST_CASE("kstrtoull: kernel acceptance rules", "[schemata][kstrtox]") {
  const std::vector<NumRow> rows = {
      {"0", 10, 0},
      {"42", 10, 42},
      {"+42", 10, 42},
      {"0042", 10, 42},
      {"42\n", 10, 42},  // one trailing newline is accepted
      {"42\n\n", 10, std::nullopt},
      {"\n", 10, std::nullopt},
      {"", 10, std::nullopt},
      {"+", 10, std::nullopt},
      {"++1", 10, std::nullopt},
      {"-1", 10, std::nullopt},
      {" 1", 10, std::nullopt},
      {"1 ", 10, std::nullopt},
      {"0x10", 10, std::nullopt},  // no prefix in base 10
      {"1a", 10, std::nullopt},
      {"18446744073709551615", 10, UINT64_MAX},
      {"18446744073709551616", 10, std::nullopt},
      {"99999999999999999999999", 10, std::nullopt},
      {"ff", 16, 0xff},
      {"FF", 16, 0xff},
      {"0xff", 16, 0xff},
      {"0XfF", 16, 0xff},
      {"+0x1f", 16, 0x1f},
      {"0x", 16, std::nullopt},
      {"0x0x1", 16, std::nullopt},
      {"x1", 16, std::nullopt},
      {"g", 16, std::nullopt},
      {"ffffffffffffffff", 16, UINT64_MAX},
      {"10000000000000000", 16, std::nullopt},
      {"0000000000000000000000001", 16, 1},  // leading zeros never overflow
      {"0", 16, 0},
      {"0\n", 16, 0},
  };
  for (const NumRow& r : rows) {
    INFO("in=\"" << r.in << "\" base " << r.base);
    CHECK(kstrtoull(r.in, r.base) == r.want);
  }
}

TEST_CASE("kstrtou32: range", "[schemata][kstrtox]") {
  CHECK(kstrtou32("4294967295", 10) == 4294967295u);
  CHECK(kstrtou32("4294967296", 10) == std::nullopt);
  CHECK(kstrtou32("+7", 10) == 7u);
  CHECK(kstrtou32("0x7", 10) == std::nullopt);
}

TEST_CASE("strim: kernel isspace set", "[schemata][kstrtox]") {
  CHECK(strim("  a b  ") == "a b");
  CHECK(strim("\t\n\v\f\ra\r") == "a");
  CHECK(strim("\xa0x\xa0") == "x");
  CHECK(strim("   ").empty());
  CHECK(strim("").empty());
  CHECK(strim("\x1cx") == "\x1cx");  // not space in the kernel's table
  CHECK(kernel_isspace(' '));
  CHECK_FALSE(kernel_isspace('\0'));
  CHECK_FALSE(kernel_isspace('\x85'));
}

}  // namespace
}  // namespace resctrlfs::schemata::internal
