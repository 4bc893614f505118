// Table-driven tests of the kernel CPU bitmap syntaxes (fs/cpus.h) and the
// kernel string helpers (fs/kstr.h).
#include <catch2/catch.hpp>

#include "fs/cpus.h"
#include "fs/kstr.h"

namespace resctrlfs::fs {

namespace {
CpuMask mask_of(unsigned nbits, std::initializer_list<unsigned> cpus) {
  CpuMask m(nbits);
  for (unsigned c : cpus) m.set(c);
  return m;
}
}  // namespace

TEST_CASE("cpus: %*pb formatting", "[cpus]") {
  struct Row {
    unsigned nbits;
    std::vector<unsigned> cpus;
    const char* text;
  };
  const Row rows[] = {
      {8, {0, 1, 2, 3, 4, 5, 6, 7}, "ff"},
      {8, {0}, "01"},
      {4, {}, "0"},
      {12, {}, "000"},
      {8, {4, 5}, "30"},
      {64, {0}, "00000000,00000001"},
      {33, {32}, "1,00000000"},
  };
  for (const Row& r : rows) {
    CpuMask m(r.nbits);
    for (unsigned c : r.cpus) m.set(c);
    CHECK(format_cpu_mask(m) == r.text);
  }
  CpuMask all36(36);
  for (unsigned c = 0; c < 36; ++c) all36.set(c);
  CHECK(format_cpu_mask(all36) == "f,ffffffff");
}

TEST_CASE("cpus: %*pbl formatting", "[cpus]") {
  CHECK(format_cpu_list(mask_of(16, {0, 1, 2, 3, 8, 10, 11})) == "0-3,8,10-11");
  CHECK(format_cpu_list(CpuMask(8)) == "");
  CHECK(format_cpu_list(mask_of(8, {7})) == "7");
}

TEST_CASE("cpus: bitmap_parse accepts and rejects like the kernel", "[cpus]") {
  struct Row {
    const char* text;
    int err;  // 0 = ok
    std::vector<unsigned> cpus;
  };
  const Row rows[] = {
      {"ff\n", 0, {0, 1, 2, 3, 4, 5, 6, 7}},
      {"03,\n", 0, {0, 1}},  // pqos writes a trailing comma
      {"  3 \n", 0, {0, 1}},
      {"\n", 0, {}},
      {"", 0, {}},
      {"0x3\n", EINVAL, {}},
      {"g\n", EINVAL, {}},
      {"100\n", EOVERFLOW, {}},   // bit 8 on an 8-CPU machine
      {"0,ff\n", EOVERFLOW, {}},  // a second chunk on an 8-CPU machine
      {"000000001\n", EOVERFLOW, {}},
      {"1\n2\n", 0, {0}},  // stops at the first newline
  };
  for (const Row& r : rows) {
    INFO(r.text);
    auto m = parse_cpu_mask(r.text, 8);
    if (r.err != 0) {
      REQUIRE_FALSE(m.ok());
      CHECK(m.error().code == r.err);
    } else {
      REQUIRE(m.ok());
      CpuMask want(8);
      for (unsigned c : r.cpus) want.set(c);
      CHECK(*m == want);
    }
  }
  auto wide = parse_cpu_mask("1,00000000\n", 64);
  REQUIRE(wide.ok());
  CHECK(wide->test(32));
}

TEST_CASE("cpus: bitmap_parselist accepts and rejects like the kernel", "[cpus]") {
  struct Row {
    const char* text;
    int err;
    std::vector<unsigned> cpus;
  };
  const Row rows[] = {
      {"0-3\n", 0, {0, 1, 2, 3}},
      {"1,3,5\n", 0, {1, 3, 5}},
      {"0-7:2/4\n", 0, {0, 1, 4, 5}},
      {"N\n", 0, {7}},
      {"all\n", 0, {0, 1, 2, 3, 4, 5, 6, 7}},
      {" 2 , 4 \n", 0, {2, 4}},
      {"\n", 0, {}},
      {"", 0, {}},
      {"100-200\n", ERANGE, {}},
      {"8\n", ERANGE, {}},
      {"3-1\n", EINVAL, {}},
      {"a\n", EINVAL, {}},
      {"1-\n", EINVAL, {}},
      {"99999999999\n", EOVERFLOW, {}},
  };
  for (const Row& r : rows) {
    INFO(r.text);
    auto m = parse_cpu_list(r.text, 8);
    if (r.err != 0) {
      REQUIRE_FALSE(m.ok());
      CHECK(m.error().code == r.err);
    } else {
      REQUIRE(m.ok());
      CpuMask want(8);
      for (unsigned c : r.cpus) want.set(c);
      CHECK(*m == want);
    }
  }
}

TEST_CASE("kstr: kstrtoint with base auto-detection", "[kstr]") {
  struct Row {
    const char* text;
    int rc;
    int value;
  };
  const Row rows[] = {
      {"10", 0, 10},        {"010", 0, 8},
      {"0x10", 0, 16},      {"+5", 0, 5},
      {"-3", 0, -3},        {"7\n", 0, 7},
      {"", -EINVAL, 0},     {"1 2", -EINVAL, 0},
      {"1\n2", -EINVAL, 0}, {"99999999999", -ERANGE, 0},
      {"0x", -EINVAL, 0},   {"08", -EINVAL, 0},
  };
  for (const Row& r : rows) {
    INFO(r.text);
    int v = -1;
    CHECK(kstr::kstrtoint(r.text, 0, v) == r.rc);
    if (r.rc == 0) CHECK(v == r.value);
  }
  uint32_t u = 0;
  CHECK(kstr::kstrtouint("4294967296", 0, u) == -ERANGE);
  bool b = false;
  CHECK(kstr::kstrtobool("on", b) == 0);
  CHECK(b);
  CHECK(kstr::kstrtobool("x", b) == -EINVAL);
  CHECK(kstr::strim(" \t a b \n") == "a b");
}

}  // namespace resctrlfs::fs
