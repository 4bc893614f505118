// Defines schemata_parse_bench: the cost of parsing one large schemata write
// (an L3 line and an MB line naming every control domain once) for 256,
// 1024 and 4096 domains, printed as ns per domain so that linearity is
// visible (the 4096-domain write is ~64 KiB). Also times format_schemata.
//
// Not a timed test: it only reports. Usage: schemata_parse_bench [min_ms]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "schemata/schemata.h"

namespace {

using resctrlfs::schemata::build_schema_list;
using resctrlfs::schemata::format_schemata;
using resctrlfs::schemata::GroupMode;
using resctrlfs::schemata::Kind;
using resctrlfs::schemata::NoPolicy;
using resctrlfs::schemata::parse_schemata;
using resctrlfs::schemata::ResourceDesc;
using resctrlfs::schemata::SchemaList;

SchemaList make_list(int domains) {
  ResourceDesc l3;
  l3.name = "L3";
  l3.kind = Kind::CACHE;
  l3.cdp_capable = true;
  l3.num_closid = 16;
  l3.cbm_len = 11;
  l3.min_cbm_bits = 1;
  l3.cache_size_bytes = 16u << 20;
  ResourceDesc mb;
  mb.name = "MB";
  mb.resource_index = 2;
  mb.kind = Kind::BANDWIDTH;
  mb.num_closid = 8;
  mb.min_bw = 10;
  mb.bw_gran = 10;
  mb.max_bw = 100;
  mb.arch_needs_linear = true;
  for (int d = 0; d < domains; ++d) {
    l3.domain_ids.push_back(d);
    mb.domain_ids.push_back(d);
  }
  unsigned width = 0;
  return build_schema_list({l3, mb}, width);
}

// Every domain once per schema, values varying so nothing is constant.
std::string make_write(int domains) {
  std::string l3 = "L3:", mb = "MB:";
  for (int d = 0; d < domains; ++d) {
    if (d) {
      l3 += ';';
      mb += ';';
    }
    char buf[32];
    std::snprintf(buf, sizeof buf, "%d=%x", d, 0x7ffu >> (d % 11));
    l3 += buf;
    std::snprintf(buf, sizeof buf, "%d=%d", d, 10 + 10 * (d % 10));
    mb += buf;
  }
  return mb + "\n" + l3 + "\n";
}

template <typename F>
double ns_per_call(F&& f, double min_ms) {
  using Clock = std::chrono::steady_clock;
  // Median of 5 batches, each at least min_ms/5 long.
  std::vector<double> batches;
  for (int b = 0; b < 5; ++b) {
    long calls = 0;
    const auto start = Clock::now();
    double elapsed_ns = 0;
    do {
      f();
      ++calls;
      elapsed_ns = std::chrono::duration<double, std::nano>(Clock::now() - start).count();
    } while (elapsed_ns < min_ms * 1e6 / 5);
    batches.push_back(elapsed_ns / static_cast<double>(calls));
  }
  std::sort(batches.begin(), batches.end());
  return batches[2];
}

}  // namespace

int main(int argc, char** argv) {
  const double min_ms = argc > 1 ? std::atof(argv[1]) : 500.0;
  std::printf("%8s %8s %14s %12s %16s\n", "domains", "bytes", "parse ns/write", "parse ns/dom",
              "format ns/dom");
  for (int domains : {256, 1024, 4096}) {
    const SchemaList list = make_list(domains);
    const std::string text = make_write(domains);
    NoPolicy policy;
    size_t staged = 0;
    const double parse_ns = ns_per_call(
        [&] {
          const auto r = parse_schemata(text, list, GroupMode::SHAREABLE, policy);
          if (!r.status.ok()) {
            std::fprintf(stderr, "unexpected parse error: %s", r.status.error().message.c_str());
            std::exit(1);
          }
          staged = r.staged.size();
        },
        min_ms);
    if (staged != static_cast<size_t>(2 * domains)) {
      std::fprintf(stderr, "staged %zu values, expected %d\n", staged, 2 * domains);
      return 1;
    }
    std::string out;
    const double format_ns = ns_per_call(
        [&] { out = format_schemata(list, 0, [](int, int d) { return 0x7ffu >> (d % 11); }); },
        min_ms);
    // Per domain of the mount: each domain appears once in each of the 2 lines.
    std::printf("%8d %8zu %14.0f %12.1f %16.1f\n", domains, text.size(), parse_ns,
                parse_ns / domains, format_ns / domains);
  }
  return 0;
}
