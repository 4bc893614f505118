// Unit tests of base/cpulist.h: the kernel's CPU mask and list formats both
// ways, with the caller's bit count as the limit. The kernel syntax's full
// table (errno per bad input) is pinned again through fs/ by tests/fs's
// cpus tests; here the printed syntax the sysfs readers use, the limit and
// the formatters the sandbox's sysfs binds use.
#include "base/cpulist.h"

#include <catch2/catch.hpp>

namespace resctrlfs {
namespace {

std::vector<unsigned> list(std::string_view text, unsigned nbits, CpuListSyntax syntax) {
  Result<CpuMask> m = parse_cpu_list(text, nbits, syntax);
  REQUIRE(m.ok());
  CHECK(m->size() == nbits);
  return m->cpus();
}

int list_errno(std::string_view text, unsigned nbits, CpuListSyntax syntax) {
  Result<CpuMask> m = parse_cpu_list(text, nbits, syntax);
  return m.ok() ? 0 : m.error().code;
}

}  // namespace

TEST_CASE("cpulist: printed lists as sysfs shows them", "[cpulist]") {
  const auto P = CpuListSyntax::kPrinted;
  CHECK(list("0-1\n", 64, P) == std::vector<unsigned>{0, 1});
  CHECK(list("0-3,8,10-11\n", 64, P) == std::vector<unsigned>{0, 1, 2, 3, 8, 10, 11});
  CHECK(list("5", 64, P) == std::vector<unsigned>{5});
  CHECK(list(" 2-3 \n\n", 64, P) == std::vector<unsigned>{2, 3});
  CHECK(list("", 64, P).empty());
  CHECK(list("\n", 64, P).empty());
  for (const char* bad :
       {"x", "1-", "-1", "3-1", "1,,2", ",1", "1,", "0-3x", "0 1", "all", "N", "0-3:1/2", "1\n2"}) {
    INFO(bad);
    CHECK(list_errno(bad, 64, P) == EINVAL);
  }
}

TEST_CASE("cpulist: the limit is the caller's bit count", "[cpulist]") {
  for (auto syntax : {CpuListSyntax::kKernel, CpuListSyntax::kPrinted}) {
    CHECK(list("63", 64, syntax) == std::vector<unsigned>{63});
    CHECK(list_errno("64", 64, syntax) == ERANGE);
    CHECK(list_errno("0-64", 64, syntax) == ERANGE);
    CHECK(list_errno("0-4294967294", 65536, syntax) == ERANGE);
    CHECK(list_errno("4294967296", 65536, syntax) == EOVERFLOW);
  }
}

TEST_CASE("cpulist: the kernel syntax accepts what bitmap_parselist accepts", "[cpulist]") {
  const auto K = CpuListSyntax::kKernel;
  CHECK(list("1,,2", 8, K) == std::vector<unsigned>{1, 2});
  CHECK(list("all", 4, K) == std::vector<unsigned>{0, 1, 2, 3});
  CHECK(list("N", 4, K) == std::vector<unsigned>{3});
  CHECK(list("0-7:1/4", 8, K) == std::vector<unsigned>{0, 4});
  CHECK(list("1 3\n5", 8, K) == std::vector<unsigned>{1, 3});
  CHECK(list_errno("3-1", 8, K) == EINVAL);
}

TEST_CASE("cpulist: hex masks", "[cpulist]") {
  Result<CpuMask> m = parse_cpu_mask("1,00000001\n", 64);
  REQUIRE(m.ok());
  CHECK(m->cpus() == std::vector<unsigned>{0, 32});
  CHECK(parse_cpu_mask("1,00000000", 32).error().code == EOVERFLOW);
  CHECK(parse_cpu_mask("10", 4).error().code == EOVERFLOW);
  CHECK(parse_cpu_mask("0x1", 8).error().code == EINVAL);
}

// Moved from the sandbox's tests: the sysfs binds print through these.
TEST_CASE("cpulist: map and list formats match the kernel's bitmap printing", "[cpulist]") {
  CHECK(format_cpu_mask(cpu_mask_of({0, 1}, 2)) == "3");
  CHECK(format_cpu_mask(cpu_mask_of({1}, 2)) == "2");
  CHECK(format_cpu_mask(cpu_mask_of({0, 4}, 8)) == "11");
  CHECK(format_cpu_mask(cpu_mask_of({0, 35}, 40)) == "08,00000001");
  CHECK(format_cpu_mask(cpu_mask_of({}, 4)) == "0");
  CHECK(format_cpu_mask(cpu_mask_of({0}, 64)) == "00000000,00000001");
  CHECK(format_cpu_mask(cpu_mask_of({0, 9}, 4)) == "1");
  CHECK(format_cpu_list(cpu_mask_of({0, 1, 2, 5, 7, 8}, 9)) == "0-2,5,7-8");
  CHECK(format_cpu_list(cpu_mask_of({3}, 4)) == "3");
  CHECK(format_cpu_list(CpuMask(8)) == "");
}

// CpuMask scans a 64-CPU word per step (next, next_clear, cpus) and
// format_cpu_list goes run by run; both must agree with a bit-by-bit walk at
// every word boundary and at the end of a last, partial word.
TEST_CASE("cpumask: word-wise scans agree with a bit-by-bit walk", "[cpulist]") {
  uint64_t seed = 0x9e3779b97f4a7c15ULL;
  auto rnd = [&] {
    seed ^= seed << 13;
    seed ^= seed >> 7;
    seed ^= seed << 17;
    return seed;
  };
  for (unsigned n : {0U, 1U, 63U, 64U, 65U, 127U, 128U, 130U, 512U, 4097U}) {
    for (int round = 0; round < 40; ++round) {
      CpuMask m(n);
      // Empty, full, sparse, dense and runs across word boundaries.
      for (unsigned c = 0; c < n; ++c) {
        const bool on = round == 0   ? false
                        : round == 1 ? true
                        : round < 20 ? rnd() % 16 == 0
                                     : (c / (1 + round % 7)) % 2 == (round % 2);
        m.set(c, on);
      }
      std::vector<unsigned> want;
      std::string text;
      for (unsigned c = 0; c < n; ++c) {
        if (!m.test(c)) continue;
        want.push_back(c);
        const unsigned start = c;
        while (c + 1 < n && m.test(c + 1)) want.push_back(++c);
        text += (text.empty() ? "" : ",") + std::to_string(start);
        if (c != start) text += "-" + std::to_string(c);
      }
      CHECK(m.cpus() == want);
      CHECK(format_cpu_list(m) == text);
      for (unsigned from = 0; from <= n + 1; ++from) {
        unsigned set = from, clear = from;
        while (set < n && !m.test(set)) ++set;
        while (clear < n && m.test(clear)) ++clear;
        CHECK(m.next(from) == std::min(set, n));
        CHECK(m.next_clear(from) == std::min(clear, n));
      }
      CHECK(m.first() == (want.empty() ? n : want.front()));
    }
  }
}

}  // namespace resctrlfs
