// The exposition of /metrics: the text format, escaping, label sets, omitted
// samples and the running totals of cumulative counters, on trees written in
// the kernel's shapes.
#include <catch2/catch.hpp>

#include "exporter/collector.h"
#include "exporter/tree.h"
#include "tests/exporter/tree_fixture.h"

namespace resctrlfs::exporter {
namespace {

using testing::find;
using testing::parse_exposition;
using testing::TempTree;
using testing::value_of;

TEST_CASE("mon_data values: numbers, the kernel's three words, telemetry decimals", "[parse]") {
  MonRead r = parse_mon_value("123456\n");
  CHECK(r.kind == ReadKind::kValue);
  CHECK(r.u == 123456);
  CHECK_FALSE(r.is_float);
  CHECK(parse_mon_value("18446744073709551615\n").u == UINT64_MAX);
  CHECK(parse_mon_value("Unavailable\n").kind == ReadKind::kUnavailable);
  CHECK(parse_mon_value("Unassigned\n").kind == ReadKind::kUnassigned);
  CHECK(parse_mon_value("Error\n").kind == ReadKind::kError);
  r = parse_mon_value("12.0625000\n");
  CHECK(r.kind == ReadKind::kValue);
  CHECK(r.is_float);
  CHECK(r.d == 12.0625);
  CHECK(parse_mon_value("7.0\n").d == 7.0);
  for (const char* bad : {"", "\n", "-1\n", "1e5\n", "12.\n", ".5\n", "0x10\n", "1 2\n",
                          "18446744073709551616\n", "unavailable\n"}) {
    INFO(bad);
    CHECK(parse_mon_value(bad).kind == ReadKind::kMalformed);
  }
}

TEST_CASE("schemata lines: padded names, CDP, pseudo-lock forms", "[parse]") {
  auto l = parse_schemata("    MB:0=100;1=50\nL3DATA:0=7f0;1=7ff\nL3CODE:0=f;1=7ff\n");
  REQUIRE(l.size() == 3);
  CHECK(l[0].name == "MB");
  CHECK(l[0].domains == std::vector<std::pair<unsigned, std::string>>{{0, "100"}, {1, "50"}});
  CHECK(l[1].name == "L3DATA");
  CHECK(l[2].domains[0].second == "f");
  l = parse_schemata("L3:uninitialized\nMB:uninitialized\n");
  REQUIRE(l.size() == 2);
  CHECK(l[0].uninitialized);
  CHECK(l[0].domains.empty());
  l = parse_schemata("L3:1=f0\n");
  REQUIRE(l.size() == 1);
  CHECK(l[0].domains == std::vector<std::pair<unsigned, std::string>>{{1, "f0"}});
  CHECK(parse_schemata("").empty());  // a monitor-only system
  CHECK(parse_schemata("garbage\n:0=1\n").empty());
  CHECK(parse_domain_list("0=SSEE;x=1;2;3=H0\n") ==
        std::vector<std::pair<unsigned, std::string>>{{0, "SSEE"}, {3, "H0"}});
}

TEST_CASE("domain directory names", "[parse]") {
  CHECK(mon_dir_resource("mon_L3_00") == "L3");
  CHECK(mon_dir_resource("mon_L3_100") == "L3");
  CHECK(mon_dir_resource("mon_sub_L3_03") == "L3");
  CHECK(mon_dir_resource("mon_PERF_PKG_01") == "PERF_PKG");
  CHECK(mon_dir_resource("mon_L3_") == "");
  CHECK(mon_dir_resource("mon_L3_x") == "");
  CHECK(mon_dir_resource("llc_occupancy") == "");
}

TEST_CASE("label values are escaped and made valid UTF-8", "[exposition]") {
  CHECK(escape_label_value("plain") == "plain");
  CHECK(escape_label_value("a\"b") == "a\\\"b");
  CHECK(escape_label_value("a\\b") == "a\\\\b");
  CHECK(escape_label_value("a\nb") == "a\\nb");
  CHECK(escape_label_value("caf\xC3\xA9") == "caf\xC3\xA9");
  CHECK(escape_label_value("bad\xFFname") == "bad\xEF\xBF\xBDname");
  CHECK(escape_label_value("\xC0\xAF") == "\xEF\xBF\xBD\xEF\xBF\xBD");  // overlong '/'
  CHECK(escape_label_value("\xED\xA0\x80") == "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
  CHECK(escape_label_value("\xE2\x82") == "\xEF\xBF\xBD\xEF\xBF\xBD");  // cut short
  CHECK(group_label("") == "/");
  CHECK(group_label("g1") == "g1");
}

TEST_CASE("metric names follow node_exporter's conventions", "[exposition]") {
  CHECK(metric_name_for("L3", "llc_occupancy") == "node_resctrl_llc_occupancy_bytes");
  CHECK(metric_name_for("L3", "mbm_total_bytes") == "node_resctrl_mbm_bytes_total");
  CHECK(metric_name_for("L3", "mbm_local_bytes") == "node_resctrl_mbm_bytes_total");
  CHECK(metric_name_for("PERF_PKG", "core_energy") ==
        "node_resctrl_perf_pkg_core_energy_joules_total");
  CHECK(metric_name_for("PERF_PKG", "activity") == "node_resctrl_perf_pkg_activity_farads_total");
  CHECK(metric_name_for("PERF_PKG", "uops_retired") == "node_resctrl_perf_pkg_uops_retired_total");
  CHECK_FALSE(cumulative_event("llc_occupancy"));
  CHECK(cumulative_event("mbm_local_bytes"));
}

TEST_CASE("an Intel tree: every family, label sets and values", "[exposition]") {
  TempTree t;
  t.intel_2s({"g1", "g2"});
  t.write("g1/schemata", "    MB:0=50;1=100\n    L3:0=3;1=7f0\n");
  t.write("g1/mode", "exclusive\n");
  t.write("info/L3/bit_usage", "0=SSSSSSSSSEE;1=EEEEEEESSSS\n");
  t.mkdir("g1/mon_groups/m1");
  t.mon("g1/mon_groups/m1/", 0, 4096, 1000, 600);
  t.mon("g1/mon_groups/m1/", 1, 0, 5, 2);
  t.mon("g1/", 0, 8192, 3000, 1600);
  TreeReader reader(t.root());
  Collector c(reader);
  auto s = parse_exposition(c.metrics());

  CHECK(value_of(s, "node_resctrl_up") == "1");
  CHECK(value_of(s, "node_resctrl_closids", {{"schema", "L3"}}) == "16");
  CHECK(value_of(s, "node_resctrl_closids", {{"schema", "MB"}}) == "8");
  CHECK(value_of(s, "node_resctrl_closids_in_use") == "3");
  CHECK(value_of(s, "node_resctrl_closids_free") == "5");  // MB has 8
  CHECK(value_of(s, "node_resctrl_rmids", {{"resource", "L3"}}) == "224");
  CHECK(value_of(s, "node_resctrl_rmids_in_use", {{"resource", "L3"}}) == "4");
  CHECK(value_of(s, "node_resctrl_rmids_free", {{"resource", "L3"}}) == "220");
  CHECK(value_of(s, "node_resctrl_groups", {{"type", "ctrl_mon"}}) == "3");
  CHECK(value_of(s, "node_resctrl_groups", {{"type", "mon"}}) == "1");
  CHECK(value_of(s, "node_resctrl_cache_ways", {{"schema", "L3"}}) == "11");
  CHECK(value_of(s, "node_resctrl_mbm_assign_mode", {{"mode", "default"}}) == "1");
  CHECK(value_of(s, "node_resctrl_bit_usage_ways",
                 {{"schema", "L3"}, {"domain", "1"}, {"usage", "exclusive"}}) == "7");
  CHECK(find(s, "node_resctrl_mbm_counters").empty());  // no ABMC

  // Controls: ways, masks, MB values, modes (one 1 per group).
  CHECK(value_of(s, "node_resctrl_group_cache_ways",
                 {{"group", "g1"}, {"schema", "L3"}, {"domain", "0"}}) == "2");
  CHECK(value_of(s, "node_resctrl_group_cache_mask",
                 {{"group", "g1"}, {"schema", "L3"}, {"domain", "1"}}) == "2032");
  CHECK(value_of(s, "node_resctrl_group_cache_ways",
                 {{"group", "/"}, {"schema", "L3"}, {"domain", "1"}}) == "11");
  CHECK(value_of(s, "node_resctrl_group_bandwidth",
                 {{"group", "g1"}, {"schema", "MB"}, {"domain", "0"}}) == "50");
  CHECK(find(s, "node_resctrl_group_cache_ways", {{"schema", "MB"}}).empty());
  CHECK(value_of(s, "node_resctrl_group_mode", {{"group", "g1"}, {"mode", "exclusive"}}) == "1");
  CHECK(value_of(s, "node_resctrl_group_mode", {{"group", "g1"}, {"mode", "shareable"}}) == "0");
  CHECK(find(s, "node_resctrl_group_mode", {{"group", "g2"}}).size() == 4);

  // Monitoring: the exact label set of each family.
  for (const auto& x : find(s, "node_resctrl_llc_occupancy_bytes")) {
    CHECK(x.labels.size() == 3);
    CHECK(x.labels.count("group"));
    CHECK(x.labels.count("mon_group"));
    CHECK(x.labels.count("domain"));
  }
  for (const auto& x : find(s, "node_resctrl_mbm_bytes_total")) {
    CHECK(x.labels.size() == 4);
    CHECK((x.labels.at("scope") == "total" || x.labels.at("scope") == "local"));
  }
  // 3 CTRL_MON + 1 MON group, 2 domains.
  CHECK(find(s, "node_resctrl_llc_occupancy_bytes").size() == 8);
  CHECK(find(s, "node_resctrl_mbm_bytes_total").size() == 16);
  CHECK(value_of(s, "node_resctrl_llc_occupancy_bytes",
                 {{"group", "g1"}, {"mon_group", "m1"}, {"domain", "mon_L3_00"}}) == "4096");
  CHECK(value_of(s, "node_resctrl_llc_occupancy_bytes",
                 {{"group", "g1"}, {"mon_group", ""}, {"domain", "mon_L3_00"}}) == "8192");
  CHECK(
      value_of(s, "node_resctrl_mbm_bytes_total",
               {{"group", "g1"}, {"mon_group", ""}, {"domain", "mon_L3_00"}, {"scope", "local"}}) ==
      "1600");
  CHECK(value_of(
            s, "node_resctrl_mbm_bytes_total",
            {{"group", "g1"}, {"mon_group", "m1"}, {"domain", "mon_L3_01"}, {"scope", "total"}}) ==
        "5");
  CHECK(value_of(s, "node_resctrl_samples_omitted_total", {{"reason", "unavailable"}}) == "0");
}

TEST_CASE("Unavailable, Unassigned and Error are omitted and counted, never 0", "[exposition]") {
  TempTree t;
  t.intel_2s({"g1"});
  t.write("g1/mon_data/mon_L3_00/mbm_total_bytes", "Unavailable\n");
  t.write("g1/mon_data/mon_L3_01/mbm_total_bytes", "Unassigned\n");
  t.write("g1/mon_data/mon_L3_01/mbm_local_bytes", "Unassigned\n");
  t.write("g1/mon_data/mon_L3_00/llc_occupancy", "Error\n");
  t.write("g1/mon_data/mon_L3_01/llc_occupancy", "garbage\n");
  t.remove("mon_data/mon_L3_01/mbm_local_bytes");  // listed nowhere: not expected
  TreeReader reader(t.root());
  Collector c(reader);
  auto s = parse_exposition(c.metrics());
  CHECK(find(s, "node_resctrl_llc_occupancy_bytes", {{"group", "g1"}}).empty());
  CHECK(find(s, "node_resctrl_mbm_bytes_total", {{"group", "g1"}, {"scope", "total"}}).empty());
  CHECK(find(s, "node_resctrl_mbm_bytes_total", {{"group", "g1"}, {"scope", "local"}}).size() == 1);
  CHECK(value_of(s, "node_resctrl_samples_omitted_total", {{"reason", "unavailable"}}) == "1");
  CHECK(value_of(s, "node_resctrl_samples_omitted_total", {{"reason", "unassigned"}}) == "1");
  CHECK(value_of(s, "node_resctrl_samples_omitted_total", {{"reason", "error"}}) == "1");
  CHECK(value_of(s, "node_resctrl_samples_omitted_total", {{"reason", "malformed"}}) == "1");
  CHECK(value_of(s, "node_resctrl_samples_omitted_total", {{"reason", "read_failed"}}) == "0");
  // Counted per scrape, cumulatively.
  s = parse_exposition(c.metrics());
  CHECK(value_of(s, "node_resctrl_samples_omitted_total", {{"reason", "unassigned"}}) == "2");
  // A file the default group lists but this group lacks cannot be read: omitted too.
  t.remove("g1/mon_data/mon_L3_00/mbm_local_bytes");
  TreeReader reader2(t.root());
  Collector c2(reader2);
  s = parse_exposition(c2.metrics());
  CHECK(value_of(s, "node_resctrl_samples_omitted_total", {{"reason", "read_failed"}}) == "1");
  CHECK(find(s, "node_resctrl_mbm_bytes_total", {{"group", "g1"}, {"scope", "local"}}).empty());
}

TEST_CASE("group names that need escaping", "[exposition]") {
  TempTree t;
  const std::string odd = "a\"b\\c\xFF";
  t.intel_2s({odd});
  TreeReader reader(t.root());
  Collector c(reader);
  const std::string text = c.metrics();
  CHECK(text.find("group=\"a\\\"b\\\\c\xEF\xBF\xBD\"") != std::string::npos);
  auto s = parse_exposition(text);
  CHECK(find(s, "node_resctrl_llc_occupancy_bytes", {{"group", "a\"b\\c\xEF\xBF\xBD"}}).size() ==
        2);
}

TEST_CASE("an unreadable tree says so and keeps the format", "[exposition]") {
  TreeReader reader("/nonexistent/resctrl");
  Collector c(reader);
  auto s = parse_exposition(c.metrics());
  CHECK(value_of(s, "node_resctrl_up") == "0");
  CHECK(find(s, "node_resctrl_groups").empty());
  CHECK(find(s, "node_resctrl_samples_omitted_total").size() == 5);
}

TEST_CASE("counters: equal to the file, monotonic across a reset", "[counters]") {
  TempTree t;
  t.intel_2s({"g1"});
  const std::map<std::string, std::string> total = {
      {"group", "g1"}, {"mon_group", ""}, {"domain", "mon_L3_00"}, {"scope", "total"}};
  TreeReader reader(t.root());
  Collector c(reader);
  t.mon("g1/", 0, 100, 1000, 10);
  auto s = parse_exposition(c.metrics());
  CHECK(value_of(s, "node_resctrl_mbm_bytes_total", total) == "1000");
  t.mon("g1/", 0, 50, 1500, 10);
  s = parse_exposition(c.metrics());
  CHECK(value_of(s, "node_resctrl_mbm_bytes_total", total) == "1500");
  CHECK(value_of(s, "node_resctrl_llc_occupancy_bytes",
                 {{"group", "g1"}, {"domain", "mon_L3_00"}}) == "50");  // a gauge goes down
  CHECK(value_of(s, "node_resctrl_mon_data_resets_total") == "0");
  // The counter starts again (a domain came back): its new value is added whole.
  t.mon("g1/", 0, 50, 300, 10);
  s = parse_exposition(c.metrics());
  CHECK(value_of(s, "node_resctrl_mbm_bytes_total", total) == "1800");
  CHECK(value_of(s, "node_resctrl_mon_data_resets_total") == "1");
  t.mon("g1/", 0, 50, 400, 10);
  s = parse_exposition(c.metrics());
  CHECK(value_of(s, "node_resctrl_mbm_bytes_total", total) == "1900");
  // Large values: exact integer arithmetic, no rounding through double.
  t.mon("g1/", 0, 0, (uint64_t{1} << 60) + 7, 0);
  s = parse_exposition(c.metrics());
  CHECK(value_of(s, "node_resctrl_mbm_bytes_total", total) == "1152921504606848483");
  // A failed read keeps the total for the next good one.
  t.mon("g1/", 0, 0, 400, 0);
  (void)c.metrics();
  t.write("g1/mon_data/mon_L3_00/mbm_total_bytes", "Unavailable\n");
  (void)c.metrics();
  t.mon("g1/", 0, 0, 500, 0);
  const std::string before =
      value_of(parse_exposition(c.metrics()), "node_resctrl_mbm_bytes_total", total);
  t.mon("g1/", 0, 0, 600, 0);
  const std::string after =
      value_of(parse_exposition(c.metrics()), "node_resctrl_mbm_bytes_total", total);
  CHECK(std::stoull(after) - std::stoull(before) == 100);
  // A removed group is forgotten; made again, it starts from its file.
  t.remove("g1");
  s = parse_exposition(c.metrics());
  CHECK(find(s, "node_resctrl_mbm_bytes_total", {{"group", "g1"}}).empty());
  t.group("g1", "    MB:0=100;1=100\n    L3:0=7ff;1=7ff\n");
  t.mon("g1/", 0, 0, 77, 0);
  s = parse_exposition(c.metrics());
  CHECK(value_of(s, "node_resctrl_mbm_bytes_total", total) == "77");
}

TEST_CASE("SNC: sums and node domains, telemetry, AMD with assignable counters", "[exposition]") {
  TempTree t;
  t.intel_2s({"g1"});
  // SNC2: mon_L3_00 holds the sum and mon_sub_L3_00/01.
  for (const std::string p : {"", "g1/"}) {
    t.write(p + "mon_data/mon_L3_00/mon_sub_L3_00/llc_occupancy", "10\n");
    t.write(p + "mon_data/mon_L3_00/mon_sub_L3_00/mbm_total_bytes", "100\n");
    t.write(p + "mon_data/mon_L3_00/mon_sub_L3_01/llc_occupancy", "20\n");
    t.write(p + "mon_data/mon_L3_00/mon_sub_L3_01/mbm_total_bytes", "200\n");
    t.write(p + "mon_data/mon_PERF_PKG_00/core_energy", "12.5000\n");
    t.write(p + "mon_data/mon_PERF_PKG_00/uops_retired", "123456789\n");
  }
  t.write("info/PERF_PKG_MON/num_rmids", "576\n");
  t.write("info/PERF_PKG_MON/mon_features", "core_energy\nuops_retired\n");
  t.write("info/L3_MON/mbm_assign_mode", "[mbm_event]\ndefault\n");
  t.write("info/L3_MON/num_mbm_cntrs", "0=32;1=32\n");
  t.write("info/L3_MON/available_mbm_cntrs", "0=30;1=31\n");
  TreeReader reader(t.root());
  Collector c(reader);
  auto s = parse_exposition(c.metrics());
  CHECK(value_of(s, "node_resctrl_llc_occupancy_bytes",
                 {{"group", "g1"}, {"domain", "mon_sub_L3_01"}}) == "20");
  CHECK(value_of(s, "node_resctrl_mbm_bytes_total",
                 {{"group", "/"}, {"domain", "mon_sub_L3_00"}, {"scope", "total"}}) == "100");
  // mon_sub directories carry only the events they have.
  CHECK(find(s, "node_resctrl_mbm_bytes_total", {{"domain", "mon_sub_L3_00"}, {"scope", "local"}})
            .empty());
  CHECK(value_of(s, "node_resctrl_perf_pkg_core_energy_joules_total",
                 {{"group", "g1"}, {"domain", "mon_PERF_PKG_00"}}) == "12.5");
  CHECK(value_of(s, "node_resctrl_perf_pkg_uops_retired_total",
                 {{"group", "/"}, {"domain", "mon_PERF_PKG_00"}}) == "123456789");
  CHECK(value_of(s, "node_resctrl_rmids", {{"resource", "PERF_PKG"}}) == "576");
  CHECK(value_of(s, "node_resctrl_mbm_counters", {{"domain", "1"}}) == "32");
  CHECK(value_of(s, "node_resctrl_mbm_assign_mode", {{"mode", "mbm_event"}}) == "1");
  // available_mbm_cntrs resets last_cmd_status under the kernel: only on request.
  CHECK(find(s, "node_resctrl_mbm_counters_available").empty());
  TreeReader reader2(t.root(), ReaderOptions{true});
  Collector c2(reader2);
  s = parse_exposition(c2.metrics());
  CHECK(value_of(s, "node_resctrl_mbm_counters_available", {{"domain", "0"}}) == "30");
  // Telemetry decimals are counters too: a decrease is a reset.
  t.write("g1/mon_data/mon_PERF_PKG_00/core_energy", "13.2500\n");
  s = parse_exposition(c.metrics());
  CHECK(value_of(s, "node_resctrl_perf_pkg_core_energy_joules_total", {{"group", "g1"}}) ==
        "13.25");
  t.write("g1/mon_data/mon_PERF_PKG_00/core_energy", "1.0000\n");
  s = parse_exposition(c.metrics());
  CHECK(value_of(s, "node_resctrl_perf_pkg_core_energy_joules_total", {{"group", "g1"}}) ==
        "14.25");
}

TEST_CASE("CDP, pseudo-locking and io_alloc", "[exposition]") {
  TempTree t;
  t.intel_2s({"lock", "setup"});
  t.remove("info/L3");
  for (const std::string s : {"L3CODE", "L3DATA"}) {
    t.write("info/" + s + "/num_closids", "8\n");
    t.write("info/" + s + "/cbm_mask", "7ff\n");
    t.write("info/" + s + "/shareable_bits", "600\n");
    t.write("info/" + s + "/bit_usage", "0=XXSSSSSSPPP;1=HHSSSSSSSSS\n");
    t.write("info/" + s + "/io_alloc", "enabled\n");
  }
  t.write("schemata", "    MB:0=100;1=100\nL3DATA:0=7f8;1=7ff\nL3CODE:0=7f8;1=7ff\n");
  t.write("lock/schemata", "L3:0=7\n");
  t.write("lock/mode", "pseudo-locked\n");
  t.remove("lock/mon_data");
  t.remove("lock/mon_groups");
  t.write("setup/schemata", "L3DATA:uninitialized\nL3CODE:uninitialized\nMB:uninitialized\n");
  t.write("setup/mode", "pseudo-locksetup\n");
  TreeReader reader(t.root());
  Collector c(reader);
  auto s = parse_exposition(c.metrics());
  CHECK(value_of(s, "node_resctrl_group_cache_ways",
                 {{"group", "/"}, {"schema", "L3CODE"}, {"domain", "0"}}) == "8");
  CHECK(value_of(s, "node_resctrl_group_cache_ways",
                 {{"group", "lock"}, {"schema", "L3"}, {"domain", "0"}}) == "3");
  CHECK(find(s, "node_resctrl_group_cache_ways", {{"group", "setup"}}).empty());
  CHECK(value_of(s, "node_resctrl_group_mode", {{"group", "lock"}, {"mode", "pseudo-locked"}}) ==
        "1");
  CHECK(value_of(s, "node_resctrl_io_alloc_enabled", {{"schema", "L3CODE"}}) == "1");
  CHECK(value_of(s, "node_resctrl_cache_shareable_ways", {{"schema", "L3DATA"}}) == "2");
  CHECK(value_of(s, "node_resctrl_bit_usage_ways",
                 {{"schema", "L3DATA"}, {"domain", "0"}, {"usage", "pseudo_locked"}}) == "3");
  // CLOSIDs: 3 groups + io_alloc of the 8 CDP CLOSIDs; RMIDs: the locked and
  // the set-up group hold none, and neither has monitoring.
  CHECK(value_of(s, "node_resctrl_closids_in_use") == "4");
  CHECK(value_of(s, "node_resctrl_closids_free") == "4");
  CHECK(value_of(s, "node_resctrl_rmids_in_use", {{"resource", "L3"}}) == "1");
  CHECK(find(s, "node_resctrl_llc_occupancy_bytes", {{"group", "lock"}}).empty());
  CHECK(value_of(s, "node_resctrl_samples_omitted_total", {{"reason", "read_failed"}}) == "0");
}

}  // namespace
}  // namespace resctrlfs::exporter
