// Property tests over random valid values (seeded, reproducible):
//  - format_schemata then parse_schemata gives back exactly the values;
//  - a partial write, in any accepted spelling (0x, case, '+', leading
//    zeros, whitespace, trailing ';', any line order), stages exactly the
//    schemas/domains it names, with the values the kernel would store.
// Run for every capability set: Intel-like, CDP, L2 CDP, mba_MBps, AMD-like
// sparse with SMBA, Haswell, sparse with min 2 bits.
#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

#include "tests/schemata/fixtures.h"

namespace resctrlfs::schemata {
namespace {

using Key = std::pair<int, int>;  // schema index, domain id
using State = std::map<Key, uint32_t>;

// A random value the schema accepts unchanged.
uint32_t random_valid(const Schema& s, std::mt19937& rng) {
  auto pick = [&](uint64_t lo, uint64_t hi) {
    return std::uniform_int_distribution<uint64_t>(lo, hi)(rng);
  };
  if (s.kind == Kind::BANDWIDTH) {
    if (s.mba_sc) return static_cast<uint32_t>(pick(0, UINT32_MAX));
    const unsigned gran = std::max(1u, s.bw_gran);
    const uint64_t lo = (s.min_bw + gran - 1) / gran, hi = s.max_bw / gran;
    return static_cast<uint32_t>(pick(lo, hi) * gran);
  }
  const unsigned len = s.cbm_len;
  if (s.min_cbm_bits == 0 && pick(0, 7) == 0) return 0;
  const unsigned run = static_cast<unsigned>(pick(std::max(1u, s.min_cbm_bits), len));
  const unsigned start = static_cast<unsigned>(pick(0, len - run));
  uint64_t m = ((uint64_t{1} << run) - 1) << start;
  if (s.sparse_masks && start + run + 1 < len) {
    // Extra bits above a gap keep the lowest run as it is.
    const uint64_t above = pick(0, s.full_mask()) & ~((uint64_t{2} << (start + run)) - 1);
    m |= above;
  }
  return static_cast<uint32_t>(m & s.full_mask());
}

// One accepted spelling of `v` for schema `s`.
std::string spell(const Schema& s, uint32_t v, std::mt19937& rng) {
  auto coin = [&](int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng) == 0; };
  std::string digits;
  if (s.kind == Kind::CACHE) {
    char buf[16];
    std::snprintf(buf, sizeof buf, coin(2) ? "%x" : "%X", v);
    digits = buf;
    if (coin(3)) digits = (coin(2) ? "0x" : "0X") + digits;
  } else {
    digits = std::to_string(v);
  }
  if (coin(4))
    digits = (s.kind == Kind::CACHE && digits[0] == '0' && digits.size() > 1 &&
              (digits[1] | 0x20) == 'x')
                 ? digits
                 : "00" + digits;
  if (coin(5)) digits = "+" + digits;
  static const char* const kSpace[] = {"", " ", "\t", "  ", "\r"};
  std::string pre = coin(3) ? kSpace[rng() % 4] : "";
  std::string post = coin(3) ? kSpace[rng() % 5] : "";
  return pre + digits + post;
}

std::string spell_id(int id, std::mt19937& rng) {
  std::string s = std::to_string(id);
  if (rng() % 5 == 0) s = "0" + s;
  if (rng() % 7 == 0) s = "+" + s;
  return s;
}

State parsed_state(const ParseResult& r) {
  State st;
  for (const StagedValue& v : r.staged) st[{v.schema, v.domain_id}] = v.value;
  for (const StagedValue& v : r.mba_sc_applied) st[{v.schema, v.domain_id}] = v.value;
  return st;
}

constexpr int kIterations = 3000;

TEST_CASE("round trip: parse(format_schemata(state)) == state", "[schemata][roundtrip]") {
  std::mt19937 rng(20261122);
  for (const testing::CapSet& cs : testing::all_capsets()) {
    const SchemaList list = cs.list();
    INFO("capset " << cs.name);
    for (int it = 0; it < kIterations; ++it) {
      State st;
      for (size_t si = 0; si < list.schemas.size(); ++si) {
        for (int d : list.schemas[si].domain_ids) {
          st[{static_cast<int>(si), d}] = random_valid(list.schemas[si], rng);
        }
      }
      const std::string text = format_schemata(list, 0, [&](int si, int d) {
        return st.at({si, d});
      });
      NoPolicy p;
      const ParseResult r = parse_schemata(text, list, GroupMode::SHAREABLE, p);
      INFO("text:\n" << text);
      REQUIRE(r.status.ok());
      REQUIRE(parsed_state(r) == st);
    }
  }
}

TEST_CASE("round trip: partial writes in any spelling stage exactly what they name",
          "[schemata][roundtrip][partial]") {
  std::mt19937 rng(42);
  for (const testing::CapSet& cs : testing::all_capsets()) {
    const SchemaList list = cs.list();
    INFO("capset " << cs.name);
    for (int it = 0; it < kIterations; ++it) {
      State want;
      std::vector<std::string> lines;
      for (size_t si = 0; si < list.schemas.size(); ++si) {
        const Schema& s = list.schemas[si];
        if (rng() % 2) continue;  // schema not mentioned
        std::vector<int> doms;
        for (int d : s.domain_ids) {
          if (rng() % 3) doms.push_back(d);
        }
        if (doms.empty()) continue;
        std::shuffle(doms.begin(), doms.end(), rng);
        std::string line =
            (rng() % 4 == 0 ? " " : "") + s.name + (rng() % 4 == 0 ? "\t" : "") + ":";
        for (size_t k = 0; k < doms.size(); ++k) {
          const uint32_t v = random_valid(s, rng);
          want[{static_cast<int>(si), doms[k]}] = v;
          if (k) line += ';';
          line += spell_id(doms[k], rng) + "=" + spell(s, v, rng);
        }
        if (rng() % 4 == 0) line += ';';
        lines.push_back(line);
      }
      if (lines.empty()) continue;
      std::shuffle(lines.begin(), lines.end(), rng);
      std::string text;
      for (const std::string& l : lines) text += l + "\n";
      NoPolicy p;
      const ParseResult r = parse_schemata(text, list, GroupMode::SHAREABLE, p);
      INFO("text:\n" << text);
      REQUIRE(r.status.ok());
      REQUIRE(parsed_state(r) == want);
      // Staged values name only what was written, each once.
      REQUIRE(r.staged.size() + r.mba_sc_applied.size() == want.size());
    }
  }
}

TEST_CASE("round trip: bandwidth values round up to bandwidth_gran", "[schemata][roundtrip]") {
  std::mt19937 rng(7);
  const SchemaList list = testing::intel_2s().list();
  const Schema& mb = list.schemas[list.find("MB")];
  for (int it = 0; it < kIterations; ++it) {
    const uint32_t v = std::uniform_int_distribution<uint32_t>(mb.min_bw, mb.max_bw)(rng);
    NoPolicy p;
    const ParseResult r =
        parse_schemata("MB:1=" + std::to_string(v) + "\n", list, GroupMode::SHAREABLE, p);
    REQUIRE(r.status.ok());
    REQUIRE(r.staged.size() == 1);
    const uint32_t got = r.staged[0].value;
    REQUIRE(got % mb.bw_gran == 0);
    REQUIRE(got >= v);
    REQUIRE(got - v < mb.bw_gran);
    // The stored value is itself a fixed point.
    const ParseResult again =
        parse_schemata("MB:1=" + std::to_string(got) + "\n", list, GroupMode::SHAREABLE, p);
    REQUIRE(again.staged.at(0).value == got);
  }
}

TEST_CASE("round trip: io_alloc_cbm format then parse", "[schemata][roundtrip][io_alloc]") {
  std::mt19937 rng(99);
  for (const char* name : {"amd", "intel-2s", "intel-cdp", "haswell"}) {
    const SchemaList list = testing::capset(name).list();
    for (size_t si = 0; si < list.schemas.size(); ++si) {
      const Schema& s = list.schemas[si];
      if (s.kind != Kind::CACHE) continue;
      for (int it = 0; it < 500; ++it) {
        std::map<int, uint32_t> vals;
        for (int d : s.domain_ids) vals[d] = random_valid(s, rng);
        const std::string text = format_io_alloc_cbm(s, [&](int d) { return vals.at(d); });
        NoPolicy p;
        const ParseResult r = parse_io_alloc_cbm(text, list, static_cast<int>(si), p);
        REQUIRE(r.status.ok());
        std::map<int, uint32_t> got;
        for (const StagedValue& v : r.staged) {
          if (v.schema == static_cast<int>(si)) got[v.domain_id] = v.value;
        }
        REQUIRE(got == vals);
      }
    }
  }
}

}  // namespace
}  // namespace resctrlfs::schemata
