// Monitoring ids that depend on the CLOSID (hw::PlatformInfo::
// rmid_depends_on_closid, the kernel's CONFIG_RESCTRL_RMID_DEPENDS_ON_CLOSID,
// which x86 never sets): the RMID pool holds indexes (closid, rmid) through
// the architecture's encode/decode, a MON group's RMID is one of its
// parent's CLOSID, a new CTRL_MON group gets the cleanest free CLOSID, and
// every counter read carries the group's CLOSID.
#include <catch2/catch.hpp>
#include <chrono>

#include "fs/pools.h"
#include "tests/fs/fake_arch.h"
#include "tests/fs/harness.h"

namespace resctrlfs::fs::testing {

TEST_CASE("rmid pool: indexes that depend on the CLOSID", "[pools][rmid_closid]") {
  // 3 CLOSIDs x 2 RMIDs: index = closid * 2 + rmid; (0, 0) is reserved.
  RmidPool p;
  p.init(6, {0}, true, 0, [](uint32_t idx) { return idx / 2; });
  CHECK(p.depends_on_closid());
  CHECK(*p.alloc(1) == 2);
  CHECK(*p.alloc(1) == 3);
  // CLOSID 1 has no index left, though CLOSID 2's are free.
  auto r = p.alloc(1);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == ENOSPC);
  CHECK(*p.alloc(0) == 1);
  p.free(2);
  p.free(3);
  CHECK(p.dirty_count(1) == 2);
  CHECK(p.dirty_count(2) == 0);
  // The cleanest free CLOSID: 2 (none in limbo) before 1 (two).
  ClosidPool c;
  c.init(3);
  CHECK(*c.alloc_cleanest([&](uint32_t id) { return p.dirty_count(id); }) == 2);
  CHECK(*c.alloc_cleanest([&](uint32_t id) { return p.dirty_count(id); }) == 1);
  CHECK_FALSE(c.alloc_cleanest([&](uint32_t id) { return p.dirty_count(id); }).ok());
  p.check_limbo(0, [](int, uint32_t) { return false; });
  CHECK(p.dirty_count(1) == 0);
  CHECK(*p.alloc(1) == 2);
}

TEST_CASE("mkdir: RMIDs are allocated per CLOSID when the architecture says so",
          "[mon][rmid_closid]") {
  hw::PlatformInfo p = FakeArch::base_platform();
  FakeArch::add_l3_cat(p, 8, 4);
  FakeArch::add_l3_mon(p, 8);  // 4 CLOSIDs x 2 RMIDs
  p.rmid_depends_on_closid = true;
  FakeArch arch(p);
  arch.rmids_per_closid = 2;
  FakeTasks tasks;
  FilesystemConfig cfg{&arch, &tasks, nullptr, 0, 0};
  auto fs = make_filesystem(cfg);
  MountOptions o;
  o.debug = true;
  REQUIRE(fs->mount(o).ok());
  Shell sh(*fs);

  REQUIRE(sh.mkdir("/p0") == 0);
  CHECK(sh.cat("/p0/ctrl_hw_id") == "1\n");
  CHECK(sh.cat("/p0/mon_hw_id") == "0\n");  // index 2: (1, 0)
  REQUIRE(sh.mkdir("/p0/mon_groups/m") == 0);
  CHECK(sh.cat("/p0/mon_groups/m/mon_hw_id") == "1\n");  // index 3: (1, 1)
  // CLOSID 1 has no RMID left; other CLOSIDs' do not count.
  CHECK(sh.mkdir("/p0/mon_groups/n") == ENOSPC);
  CHECK(sh.lcs() == "Out of RMIDs\n");
  // The default group's MON groups take CLOSID 0's other RMID.
  REQUIRE(sh.mkdir("/mon_groups/r") == 0);
  CHECK(sh.cat("/mon_groups/r/mon_hw_id") == "1\n");
  CHECK(sh.mkdir("/mon_groups/s") == ENOSPC);

  // A read names the group's CLOSID with its RMID.
  arch.reads.clear();
  (void)sh.cat("/p0/mon_groups/m/mon_data/mon_L3_00/llc_occupancy");
  REQUIRE(arch.reads.size() == 1);
  CHECK(arch.reads[0] ==
        std::make_tuple(hw::ResourceId::L3, 0, 1U, 1U, hw::EventId::LLC_OCCUPANCY));

  // p0's two indexes go into limbo (occupancy above the threshold) ...
  arch.values[{0, 0, hw::EventId::LLC_OCCUPANCY}] = {hw::ReadError::kNone, 1 << 20};
  arch.values[{0, 1, hw::EventId::LLC_OCCUPANCY}] = {hw::ReadError::kNone, 1 << 20};
  REQUIRE(sh.rmdir("/p0") == 0);
  // ... so the next group gets CLOSID 2, the cleanest, not the lowest free.
  REQUIRE(sh.mkdir("/p1") == 0);
  CHECK(sh.cat("/p1/ctrl_hw_id") == "2\n");
  CHECK(sh.cat("/p1/mon_hw_id") == "0\n");

  // The limbo pass reads each index as its (CLOSID, RMID).
  arch.reads.clear();
  fs->tick(std::chrono::steady_clock::now());
  bool saw_closid1 = false;
  for (const auto& rd : arch.reads)
    saw_closid1 =
        saw_closid1 || (std::get<2>(rd) == 1U && std::get<4>(rd) == hw::EventId::LLC_OCCUPANCY);
  CHECK(saw_closid1);
  // Once clean, CLOSID 1 is the lowest free and has no dirty RMID.
  arch.values.clear();
  fs->tick(std::chrono::steady_clock::now() + std::chrono::seconds(2));
  REQUIRE(sh.mkdir("/p2") == 0);
  CHECK(sh.cat("/p2/ctrl_hw_id") == "1\n");
  REQUIRE(sh.mkdir("/p2/mon_groups/m") == 0);
  CHECK(sh.cat("/p2/mon_groups/m/mon_hw_id") == "1\n");
}

TEST_CASE("rename: a MON group moved to another parent takes an RMID of the new CLOSID",
          "[mon][rmid_closid]") {
  hw::PlatformInfo p = FakeArch::base_platform();
  FakeArch::add_l3_cat(p, 8, 4);
  FakeArch::add_l3_mon(p, 8);  // 4 CLOSIDs x 2 RMIDs
  p.rmid_depends_on_closid = true;
  FakeArch arch(p);
  arch.rmids_per_closid = 2;
  FakeTasks tasks;
  FilesystemConfig cfg{&arch, &tasks, nullptr, 0, 0};
  auto fs = make_filesystem(cfg);
  MountOptions o;
  o.debug = true;
  REQUIRE(fs->mount(o).ok());
  Shell sh(*fs);
  REQUIRE(sh.mkdir("/g") == 0);  // CLOSID 1
  REQUIRE(sh.mkdir("/h") == 0);  // CLOSID 2
  REQUIRE(sh.mkdir("/g/mon_groups/m") == 0);
  REQUIRE(sh.mkdir("/h/mon_groups/n") == 0);
  // h's RMIDs are both held: the move is refused and nothing moves.
  CHECK(sh.mv("/g/mon_groups/m", "/h/mon_groups/m") == ENOSPC);
  CHECK(sh.lcs() == "Out of RMIDs\n");
  CHECK(sh.ls("/g/mon_groups") == std::set<std::string>{"m"});
  REQUIRE(sh.rmdir("/h/mon_groups/n") == 0);
  fs->tick(std::chrono::steady_clock::now() + std::chrono::seconds(2));  // out of limbo
  // Now h's RMID 1 is free: the group keeps its RMID under CLOSID 2, and
  // reads name the new CLOSID.
  REQUIRE(sh.mv("/g/mon_groups/m", "/h/mon_groups/m") == 0);
  CHECK(sh.cat("/h/mon_groups/m/mon_hw_id") == "1\n");
  arch.reads.clear();
  (void)sh.cat("/h/mon_groups/m/mon_data/mon_L3_00/llc_occupancy");
  REQUIRE(arch.reads.size() == 1);
  CHECK(std::get<2>(arch.reads[0]) == 2U);
  CHECK(sh.mkdir("/h/mon_groups/x") == ENOSPC);
  // g's RMID 1 was freed (limbo, then the free list).
  fs->tick(std::chrono::steady_clock::now() + std::chrono::seconds(4));
  REQUIRE(sh.mkdir("/g/mon_groups/y") == 0);
  CHECK(sh.cat("/g/mon_groups/y/mon_hw_id") == "1\n");
}

}  // namespace resctrlfs::fs::testing
