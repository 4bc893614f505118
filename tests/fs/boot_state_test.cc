// save_boot_state_json()/restore_boot_state_json(): what survives an
// unmount until reboot (the kernel's global state outside the mount) carried from
// one Filesystem to a fresh one, as from a daemon to the next one mounted on
// the same mount point.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <set>
#include <vector>

#include "tests/fs/harness.h"

namespace resctrlfs::fs::testing {

namespace {

// A simulated machine with a Filesystem that is not mounted yet.
struct Unmounted {
  explicit Unmounted(const std::string& platform) {
    auto b = hw::make_sim_backend(platform);
    if (!b.ok()) throw std::runtime_error("sim backend: " + b.error().message);
    backend = std::move(b.value());
    FilesystemConfig cfg;
    cfg.arch = backend.arch.get();
    cfg.tasks = &tasks;
    fs = make_filesystem(cfg);
  }
  hw::Backend backend;
  FakeTasks tasks;
  std::unique_ptr<Filesystem> fs;
};

nlohmann::json status(Filesystem& fs) { return nlohmann::json::parse(fs.status_json()); }

}  // namespace

TEST_CASE("51: a remount keeps max_threshold_occupancy and the RMID pool", "[bootstate]") {
  std::string saved;
  {
    MountOptions o;
    o.debug = true;
    SimFixture a("intel-2s", o);
    Shell& sh = *a.sh;
    REQUIRE(sh.echo("/info/L3_MON/max_threshold_occupancy", "131072") == 0);
    REQUIRE(sh.mkdir("/g1") == 0);  // RMID 1
    REQUIRE(sh.mkdir("/g2") == 0);  // RMID 2
    REQUIRE(sh.rmdir("/g1") == 0);  // RMID 1 into limbo
    REQUIRE(sh.echo("/schemata", "L3:0=f") == 0);
    // Taken while mounted: g2's RMID counts as released, as by an unmount.
    saved = a.fs->save_boot_state_json();
    a.fs->unmount();
    CHECK(a.fs->save_boot_state_json() == saved);
  }
  Unmounted b("intel-2s");
  {
    auto r = b.fs->restore_boot_state_json(saved);
    INFO(saved);
    INFO((r.ok() ? std::string("ok") : r.error().message));
    REQUIRE(r.ok());
  }
  MountOptions o;
  o.debug = true;
  REQUIRE(b.fs->mount(o).ok());
  Shell sh(*b.fs);
  // Groups gone, schemata back to defaults, the threshold kept.
  CHECK(sh.ls("/").count("g2") == 0);
  CHECK(sh.cat("/schemata") == "    MB:0=100;1=100\n    L3:0=7ff;1=7ff\n");
  CHECK(sh.cat("/info/L3_MON/max_threshold_occupancy") == "131072\n");
  // RMIDs 1 and 2 are still in limbo: the next group gets 3.
  CHECK(status(*b.fs)["rmids"]["limbo"] == 2);
  REQUIRE(sh.mkdir("/g3") == 0);
  CHECK(sh.cat("/g3/mon_hw_id") == "3\n");
  CHECK(b.fs->restore_boot_state_json(saved).error().code == EBUSY);
}

TEST_CASE("boot state: its RMIDs follow every change of the pool and of the groups",
          "[bootstate]") {
  using nlohmann::json;
  SimFixture a("intel-2s");
  Shell& sh = *a.sh;
  // The document is asked for after every command; its RMID part is kept
  // between asks that find the pool and the groups as they were.
  auto rmids = [&] { return json::parse(a.fs->save_boot_state_json())["rmids"]; };
  auto limbo = [](const json& r) {
    std::set<std::vector<uint32_t>> per_domain;
    for (auto& [d, ids] : r["limbo"].items()) per_domain.insert(ids.get<std::vector<uint32_t>>());
    return per_domain;
  };
  using Limbo = std::set<std::vector<uint32_t>>;
  const json r0 = rmids();
  CHECK(r0["limbo"].empty());
  CHECK(r0["free"].front() == 1);
  CHECK(rmids() == r0);
  REQUIRE(sh.mkdir("/g1") == 0);               // RMID 1
  REQUIRE(sh.mkdir("/g1/mon_groups/m") == 0);  // RMID 2
  // Taken while mounted: both RMIDs count as released, into limbo in every
  // domain (intel-2s has two), as an unmount would leave them.
  const json r1 = rmids();
  CHECK(r1["free"].front() == 3);
  CHECK(r1["limbo"].size() == 2);
  CHECK(limbo(r1) == Limbo{{1, 2}});
  CHECK(a.fs->save_boot_state_json() == a.fs->save_boot_state_json());
  // m's RMID is in limbo now for real: the same document.
  REQUIRE(sh.rmdir("/g1/mon_groups/m") == 0);
  CHECK(rmids() == r1);
  // A limbo pass finds RMID 2 clean: it joins the free list's tail.
  a.fs->tick(std::chrono::steady_clock::now());
  const json r2 = rmids();
  CHECK(limbo(r2) == Limbo{{1}});
  CHECK(r2["free"].front() == 3);
  CHECK(r2["free"].back() == 2);
  // A new group takes RMID 3, the head.
  REQUIRE(sh.mkdir("/g2") == 0);
  const json r3 = rmids();
  CHECK(r3["free"].front() == 4);
  CHECK(limbo(r3) == Limbo{{1, 3}});
  // The unmount frees what the document already counted as freed.
  a.fs->unmount();
  CHECK(rmids() == r3);
}

TEST_CASE("boot state: assignment mode, event filters and BMEC on amd-2s", "[bootstate]") {
  std::string saved;
  {
    SimFixture a("amd-2s");
    Shell& sh = *a.sh;
    REQUIRE(sh.echo("/info/L3_MON/mbm_assign_mode", "default") == 0);
    REQUIRE(sh.echo("/info/L3_MON/mbm_total_bytes_config", "0=0x33") == 0);
    REQUIRE(sh.echo("/info/L3_MON/mbm_local_bytes_config", "1=0x1") == 0);
    saved = a.fs->save_boot_state_json();
  }
  Unmounted b("amd-2s");
  REQUIRE(b.fs->restore_boot_state_json(saved).ok());
  REQUIRE(b.fs->mount({}).ok());
  Shell sh(*b.fs);
  CHECK(sh.cat("/info/L3_MON/mbm_assign_mode") == "[default]\nmbm_event\n");
  CHECK(sh.cat("/info/L3_MON/mbm_total_bytes_config") == "0=0x33;1=0x7f\n");
  CHECK(sh.cat("/info/L3_MON/mbm_local_bytes_config") == "0=0x15;1=0x01\n");

  // The other way: mbm_event with auto-assignment off.
  {
    SimFixture a("amd-2s");
    Shell& sa = *a.sh;
    REQUIRE(sa.echo("/info/L3_MON/mbm_assign_on_mkdir", "0") == 0);
    saved = a.fs->save_boot_state_json();
  }
  Unmounted c("amd-2s");
  REQUIRE(c.fs->restore_boot_state_json(saved).ok());
  REQUIRE(c.fs->mount({}).ok());
  Shell sc(*c.fs);
  CHECK(sc.cat("/info/L3_MON/mbm_assign_mode") == "[mbm_event]\ndefault\n");
  CHECK(sc.cat("/info/L3_MON/mbm_assign_on_mkdir") == "0\n");
}

TEST_CASE("boot state: documents that do not fit change nothing", "[bootstate]") {
  Unmounted u("intel-2s");
  const std::string good = u.fs->save_boot_state_json();
  std::vector<int> all;
  for (int r = 1; r < 224; ++r) all.push_back(r);
  auto with = [&](const char* key, nlohmann::json v) {
    nlohmann::json j = nlohmann::json::parse(good);
    j[key] = std::move(v);
    return j.dump();
  };
  auto rmids = [&](nlohmann::json free, nlohmann::json limbo) {
    return with("rmids", {{"free", std::move(free)}, {"limbo", std::move(limbo)}});
  };
  std::vector<int> dup = all;
  dup.push_back(5);
  std::vector<int> missing(all.begin() + 1, all.end());
  struct Case {
    const char* what;
    std::string doc;
  };
  const Case cases[] = {
      {"not JSON", "{"},
      {"version", with("version", 2)},
      {"threshold beyond the L3", with("max_threshold_occupancy", 16777217)},
      {"name width", with("max_name_width", 40)},
      {"RMID twice", rmids(dup, nlohmann::json::object())},
      {"RMID missing", rmids(missing, nlohmann::json::object())},
      {"RMID 0", rmids(std::vector<int>{0}, nlohmann::json::object())},
      {"free and in limbo", rmids(all, {{"0", {7}}})},
      {"unknown domain", rmids(missing, {{"9", {1}}})},
      {"bad type", with("rmids", "x")},
      {"bad domain key", rmids(missing, {{"x", {1}}})},
      // Wrong types and ranges are refused, never thrown.
      {"version of another type", with("version", "clos:")},
      {"threshold of another type", with("max_threshold_occupancy", "x")},
      {"negative threshold", with("max_threshold_occupancy", -1)},
      {"huge threshold", with("max_threshold_occupancy", 1e300)},
      {"width of another type", with("max_name_width", true)},
      {"unknown assignment mode", with("mbm_assign_mode", "sometimes")},
      {"assignment mode of another type", with("mbm_assign_mode", 1)},
      {"on_mkdir of another type", with("mbm_assign_on_mkdir", "yes")},
      {"event filter of another type", with("event_filter", {{"mbm_total_bytes", "x"}})},
      {"free list of another type", rmids("x", nlohmann::json::object())},
      {"free RMID of another type", rmids({"1"}, nlohmann::json::object())},
      {"free RMID out of range", rmids({4294967296}, nlohmann::json::object())},
      {"limbo of another type", rmids(missing, {{"1", 1}})},
      {"deep nesting", "{\"version\": 1, \"x\": " + std::string(100000, '[') + "}"},
      {"truncated", good.substr(0, good.size() / 2)},
      {"binary", std::string("\x00\x01\xff\xfe", 4)},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    auto r = u.fs->restore_boot_state_json(c.doc);
    CHECK_FALSE(r.ok());
    if (!r.ok()) CHECK(r.error().code == EINVAL);
    CHECK(u.fs->save_boot_state_json() == good);
  }
  // A valid one with RMID 1 in limbo of one domain only.
  REQUIRE(u.fs->restore_boot_state_json(rmids(missing, {{"1", {1}}})).ok());
  REQUIRE(u.fs->mount({}).ok());
  CHECK(status(*u.fs)["rmids"]["limbo"] == 1);
}

}  // namespace resctrlfs::fs::testing
