// The page's data beyond /api/state: the history of samples the exporter
// keeps for the plots (/api/history, its bounds) and the unit of each
// bandwidth schema (percent, MBps under mba_MBps, 1/8 GB/s on AMD).
#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "exporter/history.h"
#include "exporter/routes.h"
#include "tests/exporter/tree_fixture.h"

namespace resctrlfs::exporter {
namespace {

using testing::TempTree;

Snapshot snapshot_with(std::vector<std::pair<std::string, double>> occ_by_group) {
  Snapshot s;
  s.ok = true;
  for (auto& [name, occ] : occ_by_group) {
    Group g;
    g.name = name;
    MonRead r;
    r.kind = ReadKind::kValue;
    r.domain = "mon_L3_00";
    r.resource = "L3";
    r.event = "llc_occupancy";
    r.d = occ;
    g.mon.push_back(r);
    r.domain = "mon_L3_01";
    g.mon.push_back(r);
    // mon_sub_ directories are already in their mon_L3_ sum.
    r.domain = "mon_sub_L3_01";
    g.mon.push_back(r);
    s.groups.push_back(g);
    Group mon = g;
    mon.mon_group = "m";
    s.groups.push_back(mon);
  }
  return s;
}

TEST_CASE("history: per CTRL_MON group sums, oldest first", "[history]") {
  History h;
  h.record(snapshot_with({{"", 10}, {"g1", 100}}), 1'000'000);
  h.record(snapshot_with({{"", 20}, {"g1", 200}}), 1'001'000);
  auto j = nlohmann::json::parse(h.json());
  CHECK(j["window_ms"] == History::kWindowMs);
  REQUIRE(j["samples"].size() == 2);
  CHECK(j["samples"][0]["time_ms"] == 1'000'000);
  const auto& groups = j["samples"][1]["groups"];
  REQUIRE(groups.size() == 2);  // MON groups are not plotted
  CHECK(groups[0]["label"] == "/");
  CHECK(groups[0]["occupancy_bytes"] == 40.0);
  CHECK(groups[1]["label"] == "g1");
  CHECK(groups[1]["occupancy_bytes"] == 400.0);
  CHECK(groups[1]["mbm_total_bytes"].is_null());
  // A tree that could not be read adds nothing.
  Snapshot bad;
  h.record(bad, 1'002'000);
  CHECK(h.samples().size() == 2);
}

TEST_CASE("history: bounded by time, by count and by the gap between samples", "[history]") {
  History h;
  const Snapshot s = snapshot_with({{"", 1}});
  int64_t t = 5'000'000;
  h.record(s, t);
  h.record(s, t + History::kMinGapMs - 1);  // too close: a page and a scraper at once
  CHECK(h.samples().size() == 1);
  for (int i = 0; i < 2000; ++i) h.record(s, t += History::kMinGapMs);
  CHECK(h.samples().size() <= History::kMaxSamples);
  CHECK(h.samples().front().time_ms >= t - History::kWindowMs);
  CHECK(h.samples().back().time_ms == t);
  // Samples far apart: only the window is kept.
  History w;
  for (int i = 0; i < 10; ++i) w.record(s, t += History::kWindowMs / 4);
  CHECK(w.samples().size() == 5);
  // A clock that steps back starts a new history.
  w.record(s, t - 10'000);
  CHECK(w.samples().size() == 1);
}

TEST_CASE("routes: /api/history holds what the exporter read before", "[history][routes]") {
  TempTree t;
  t.intel_2s({"g1"});
  t.mon("g1/", 0, 4096, 1000, 500);
  TreeReader reader(t.root());
  Collector c(reader);
  auto j = nlohmann::json::parse(serve(c, "/api/history").body);
  CHECK(j["samples"].empty());
  c.collect();
  HttpResponse r = serve(c, "/api/history");
  CHECK(r.status == 200);
  CHECK(r.content_type == "application/json");
  j = nlohmann::json::parse(r.body);
  REQUIRE(j["samples"].size() == 1);
  const auto& groups = j["samples"][0]["groups"];
  REQUIRE(groups.size() == 2);
  CHECK(groups[1]["label"] == "g1");
  CHECK(groups[1]["occupancy_bytes"] == 4096.0);
  CHECK(groups[1]["mbm_total_bytes"] == 1000.0);
  // /api/state's time is the time of its read, the one the history keeps.
  auto state = nlohmann::json::parse(serve(c, "/api/state").body);
  CHECK(state["time_ms"].get<int64_t>() >= j["samples"][0]["time_ms"].get<int64_t>());
}

TEST_CASE("sampler: reads the tree at start and on its timer", "[history]") {
  TempTree t;
  t.intel_2s({"g1"});
  t.mon("g1/", 0, 4096, 1000, 500);
  TreeReader reader(t.root());
  Collector c(reader);
  boost::asio::io_context io;
  Sampler sampler(io, c, std::chrono::milliseconds(1));
  CHECK(c.history().samples().empty());
  sampler.start();
  // A page opened right after the exporter started has a sample.
  REQUIRE(c.history().samples().size() == 1);
  CHECK(c.since_last_collect() < std::chrono::hours(1));
  // The timer fires at least 1 ms after the read of start(), so it reads
  // again (a read after t0).
  const auto t0 = std::chrono::steady_clock::now();
  CHECK(io.run_one() == 1);
  CHECK(c.since_last_collect() <= std::chrono::steady_clock::now() - t0);
  io.stop();
}

TEST_CASE("bandwidth units: percent on Intel, 1/8 GB/s on AMD, MBps under mba_MBps",
          "[history][units]") {
  TempTree t;
  t.intel_2s();
  TreeReader reader(t.root());
  Collector c(reader);
  auto unit = [&]() {
    auto j = nlohmann::json::parse(c.api_state());
    REQUIRE(j["bandwidth"].size() == 1);
    CHECK(j["bandwidth"][0]["schema"] == "MB");
    return j["bandwidth"][0]["unit"].get<std::string>();
  };
  CHECK(unit() == "percent");
  // The kernel on AMD: no thread_throttle_mode, delay_linear 0, min 0, step 1.
  t.remove("info/MB/thread_throttle_mode");
  t.write("info/MB/delay_linear", "0\n");
  t.write("info/MB/min_bandwidth", "0\n");
  t.write("info/MB/bandwidth_gran", "1\n");
  CHECK(unit() == "1/8 GB/s");
  // An Intel MBA with non-linear delays is still percent.
  t.write("info/MB/min_bandwidth", "10\n");
  t.write("info/MB/thread_throttle_mode", "per-thread\n");
  CHECK(unit() == "percent");
  // mba_MBps: the default group has mba_MBps_event (kernels from 6.14).
  t.write("mba_MBps_event", "mbm_local_bytes\n");
  CHECK(unit() == "MBps");
}

TEST_CASE("mount options from mountinfo", "[history][units]") {
  const std::string mi =
      "22 1 0:20 / /sys/fs/resctrl rw,relatime shared:5 - resctrl resctrl rw,mba_MBps\n"
      "23 1 0:21 / /mnt/my\\040tree rw,relatime - resctrl resctrl rw,cdp\n"
      "24 1 0:22 / /mnt/other rw,relatime - tmpfs tmpfs rw,mba_MBps\n";
  CHECK(mount_has_option(mi, "/sys/fs/resctrl", "mba_MBps"));
  CHECK_FALSE(mount_has_option(mi, "/sys/fs/resctrl", "cdp"));
  CHECK(mount_has_option(mi, "/mnt/my tree", "cdp"));
  CHECK_FALSE(mount_has_option(mi, "/mnt/my tree", "mba_MBps"));
  CHECK_FALSE(mount_has_option(mi, "/mnt/other", "mba_MBps"));  // not resctrl
  CHECK_FALSE(mount_has_option(mi, "/mnt/none", "mba_MBps"));
  CHECK_FALSE(mount_has_option("garbage\n\n - \n", "/", "x"));
}

}  // namespace
}  // namespace resctrlfs::exporter
