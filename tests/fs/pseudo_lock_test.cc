// Cache pseudo-locking at the model level ("Cache Pseudo-Locking" in
// Documentation/filesystems/resctrl.rst: schemata, size and mode of a
// locksetup and a locked group, rmdir, bit_usage 'P'), on the intel-bdx
// simulated platform: intel-2s (11-bit L3 in two domains of 4 CPUs, 16 MiB,
// 224 RMIDs) with the Broadwell server model that offers pseudo-locking,
// and where an MB line matters the transcript's model platform with that
// model (model_platform(79)).
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "tests/fs/fake_arch.h"
#include "tests/fs/harness.h"

namespace resctrlfs::fs::testing {

namespace {

nlohmann::json status(Filesystem& fs) { return nlohmann::json::parse(fs.status_json()); }

// Root shrunk off bits 0-1 of domain 0 so that p0 can take them.
void make_room(Shell& sh) { REQUIRE(sh.echo("/schemata", "L3:0=7fc") == 0); }

}  // namespace

TEST_CASE("pseudo-locksetup is offered by family/model only", "[pseudolock]") {
  struct Case {
    const char* platform;
    const char* lcs;
  };
  const Case cases[] = {
      {"intel-bdx", "ok\n"},
      {"intel-2s", "Pseudo-locking not supported\n"},
      {"intel-l2", "Pseudo-locking not supported\n"},
      {"amd-2s", "Pseudo-locking not supported\n"},
  };
  for (const Case& c : cases) {
    INFO(c.platform);
    SimFixture f(c.platform);
    REQUIRE(f.sh->mkdir("/p0") == 0);
    CHECK(f.sh->echo("/p0/mode", "pseudo-locksetup") ==
          (std::string(c.lcs) == "ok\n" ? 0 : EINVAL));
    CHECK(f.sh->lcs() == c.lcs);
  }
}

TEST_CASE("pseudo-locksetup refusals, in the kernel's order", "[pseudolock]") {
  struct Case {
    const char* what;
    bool cdp;
    const char* group;
    void (*prepare)(SimFixture&);
    const char* lcs;
  };
  const Case cases[] = {
      {"default group", false, "", [](SimFixture&) {}, "Cannot pseudo-lock default group\n"},
      {"default group before CDP", true, "", [](SimFixture&) {},
       "Cannot pseudo-lock default group\n"},
      {"CDP", true, "/p0", [](SimFixture&) {}, "CDP enabled\n"},
      {"MON group", false, "/p0",
       [](SimFixture& f) { REQUIRE(f.sh->mkdir("/p0/mon_groups/m") == 0); },
       "Monitoring in progress\n"},
      {"MON group before tasks", false, "/p0",
       [](SimFixture& f) {
         REQUIRE(f.sh->mkdir("/p0/mon_groups/m") == 0);
         REQUIRE(f.sh->echo("/p0/tasks", "10") == 0);
       },
       "Monitoring in progress\n"},
      {"tasks", false, "/p0",
       [](SimFixture& f) {
         REQUIRE(f.sh->echo("/p0/tasks", "10") == 0);
         REQUIRE(f.sh->echo("/p0/cpus_list", "1") == 0);
       },
       "Tasks assigned to resource group\n"},
      {"CPUs", false, "/p0", [](SimFixture& f) { REQUIRE(f.sh->echo("/p0/cpus_list", "1") == 0); },
       "CPUs assigned to resource group\n"},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    MountOptions o;
    o.cdp = c.cdp;
    SimFixture f("intel-bdx", o);
    f.tasks.add(10);
    REQUIRE(f.sh->mkdir("/p0") == 0);
    c.prepare(f);
    CHECK(f.sh->echo(std::string(c.group) + "/mode", "pseudo-locksetup") == EINVAL);
    CHECK(f.sh->lcs() == c.lcs);
    CHECK(f.sh->cat(std::string(c.group) + "/mode") == "shareable\n");
  }
}

TEST_CASE("mode writes: table of transitions", "[pseudolock]") {
  // From each mode, each write: errno and LCS afterwards.
  struct Case {
    const char* from;
    const char* write;
    int err;
    const char* lcs;
    const char* after;
  };
  const Case cases[] = {
      {"shareable", "pseudo-locked", EINVAL, "Unknown or unsupported mode\n", "shareable\n"},
      {"shareable", "pseudo-locksetup", 0, "ok\n", "pseudo-locksetup\n"},
      {"exclusive", "pseudo-locksetup", 0, "ok\n", "pseudo-locksetup\n"},
      {"locksetup", "pseudo-locksetup", 0, "ok\n", "pseudo-locksetup\n"},
      {"locksetup", "pseudo-locked", EINVAL, "Unknown or unsupported mode\n", "pseudo-locksetup\n"},
      {"locksetup", "shareable", 0, "ok\n", "shareable\n"},
      {"locksetup", "exclusive", 0, "ok\n", "exclusive\n"},
      {"locked", "pseudo-locked", 0, "ok\n", "pseudo-locked\n"},
      {"locked", "shareable", EINVAL, "Cannot change pseudo-locked group\n", "pseudo-locked\n"},
      {"locked", "exclusive", EINVAL, "Cannot change pseudo-locked group\n", "pseudo-locked\n"},
      {"locked", "pseudo-locksetup", EINVAL, "Cannot change pseudo-locked group\n",
       "pseudo-locked\n"},
      {"locked", "bogus", EINVAL, "Cannot change pseudo-locked group\n", "pseudo-locked\n"},
  };
  for (const Case& c : cases) {
    INFO(c.from << " <- " << c.write);
    SimFixture f("intel-bdx");
    Shell& sh = *f.sh;
    REQUIRE(sh.echo("/schemata", "L3:0=7fc;1=7fc") == 0);
    REQUIRE(sh.mkdir("/p0") == 0);
    REQUIRE(sh.echo("/p0/schemata", "L3:0=3;1=3") == 0);
    const std::string from = c.from;
    if (from == "exclusive") REQUIRE(sh.echo("/p0/mode", "exclusive") == 0);
    if (from == "locksetup" || from == "locked")
      REQUIRE(sh.echo("/p0/mode", "pseudo-locksetup") == 0);
    if (from == "locked") REQUIRE(sh.echo("/p0/schemata", "L3:0=3") == 0);
    CHECK(sh.echo("/p0/mode", c.write) == c.err);
    CHECK(sh.lcs() == c.lcs);
    CHECK(sh.cat("/p0/mode") == c.after);
  }
}

// The kernel's handling of an MB line in a pseudo-locksetup group needs a
// platform with both MBA and pseudo-locking; no product has both (intel-bdx,
// Broadwell-EP, has no MBA): the model platform with Broadwell-EP's model.
TEST_CASE("pseudo-locksetup: closed files, uninitialized schemata, RMID released", "[pseudolock]") {
  SimFixture f(model_platform(79));
  Shell& sh = *f.sh;
  REQUIRE(sh.mkdir("/p0", 0750) == 0);
  const unsigned limbo_before = status(*f.fs)["rmids"]["limbo"];
  REQUIRE(sh.echo("/p0/mode", "pseudo-locksetup") == 0);
  CHECK(status(*f.fs)["rmids"]["limbo"] == limbo_before + 1);
  // 49: mode 0000 files, EACCES even for root, read or write.
  for (const char* file : {"/p0/tasks", "/p0/cpus", "/p0/cpus_list"}) {
    INFO(file);
    CHECK(sh.stat(file).mode == (S_IFREG | 0));
    CHECK(sh.cat(file) == "ERRNO 13");
    CHECK(sh.echo(file, "0") == EACCES);
  }
  CHECK(sh.stat("/p0/mon_groups").mode == S_IFDIR);
  CHECK(sh.mkdir("/p0/mon_groups/m") == EINVAL);
  CHECK(sh.lcs() == "Pseudo-locking in progress\n");
  CHECK(sh.cat("/p0/schemata") == "MB:uninitialized\nL3:uninitialized\n");
  CHECK(sh.cat("/p0/size") == "    MB:0=0;1=0\n    L3:0=0;1=0\n");
  CHECK(sh.cat("/p0/mode") == "pseudo-locksetup\n");
  // A locksetup group's CLOSID counts for nobody.
  CHECK(sh.cat("/info/L3/bit_usage") == "0=SSSSSSSSSSS;1=SSSSSSSSSSS\n");
  REQUIRE(sh.mkdir("/p1") == 0);
  CHECK(sh.cat("/p1/schemata") == "    MB:0=100;1=100\n    L3:0=7ff;1=7ff\n");
  // Back to shareable: the files and mon_groups open again, a new RMID.
  CHECK(sh.echo("/p0/mode", "shareable") == 0);
  CHECK(sh.stat("/p0/tasks").mode == (S_IFREG | 0644));
  CHECK(sh.stat("/p0/cpus_list").mode == (S_IFREG | 0644));
  CHECK(sh.stat("/p0/mon_groups").mode == (S_IFDIR | 0750));
  CHECK(sh.cat("/p0/tasks").empty());
  CHECK(sh.mkdir("/p0/mon_groups/m") == 0);
}

TEST_CASE("pseudo-locksetup schemata writes and locking", "[pseudolock]") {
  SimFixture f(model_platform(79));  // MBA and pseudo-locking (see above)
  Shell& sh = *f.sh;
  REQUIRE(sh.mkdir("/p0") == 0);
  REQUIRE(sh.echo("/p0/mode", "pseudo-locksetup") == 0);
  const unsigned free_closids = status(*f.fs)["closids"]["free"];

  struct Case {
    const char* write;
    int err;
    const char* lcs;
  };
  // Refused writes leave the group in pseudo-locksetup, usable.
  const Case refused[] = {
      {"MB:0=50", EINVAL, "Cannot pseudo-lock MBA resource\n"},
      {"MB:0=50\nL3:0=3", EINVAL, "Cannot pseudo-lock MBA resource\n"},
      {"L3:0=3\nMB:0=50", EINVAL, "Overlaps with other group\n"},
      {"L3:0=3", EINVAL, "Overlaps with other group\n"},
      {"L3:0=0", EINVAL, "Mask out of range\n"},
      {"L3:0=5", EINVAL, "The mask 5 has non-consecutive 1-bits\n"},
      {"L3:0=3;0=3", EINVAL, "Overlaps with other group\n"},
  };
  for (const Case& c : refused) {
    INFO(c.write);
    CHECK(sh.echo("/p0/schemata", c.write) == c.err);
    CHECK(sh.lcs() == c.lcs);
    CHECK(sh.cat("/p0/mode") == "pseudo-locksetup\n");
  }
  make_room(sh);
  // 3 ways of a 16 MiB 11-way cache: 4575603 bytes, more than kmalloc gives.
  REQUIRE(sh.echo("/schemata", "L3:0=7f8") == 0);
  CHECK(sh.echo("/p0/schemata", "L3:0=7") == E2BIG);
  CHECK(sh.lcs() == "Requested region exceeds maximum size\n");
  CHECK(sh.cat("/p0/mode") == "pseudo-locksetup\n");
  CHECK(sh.cat("/info/L3/bit_usage") == "0=SSSSSSSS000;1=SSSSSSSSSSS\n");

  // A valid write locks: one region, the first domain of the line only.
  CHECK(sh.echo("/p0/schemata", "L3:0=3;1=1") == 0);
  CHECK(sh.lcs() == "ok\n");
  CHECK(sh.cat("/p0/mode") == "pseudo-locked\n");
  CHECK(sh.cat("/p0/schemata") == "L3:0=3\n");
  CHECK(sh.cat("/p0/size") == "    L3:0=3050402\n");
  CHECK(sh.cat("/p0/cpus") == "0f\n");
  CHECK(sh.cat("/p0/cpus_list") == "0-3\n");
  CHECK(sh.stat("/p0/cpus").mode == (S_IFREG | 0444));
  CHECK(sh.stat("/p0/cpus_list").mode == (S_IFREG | 0444));
  CHECK(sh.cat("/p0/tasks") == "ERRNO 13");
  CHECK(sh.echo("/p0/cpus_list", "1") == EACCES);
  // The CLOSID went back to the pool; the hardware holds the region.
  CHECK(status(*f.fs)["closids"]["free"] == free_closids + 1);
  CHECK(f.backend.arch->pseudo_locked_cbm(hw::ResourceId::L3, 0) == 0x3);
  CHECK(sh.cat("/info/L3/bit_usage") == "0=SSSSSSSS0PP;1=SSSSSSSSSSS\n");

  // Locked: no more schemata writes; other masks may not overlap it.
  CHECK(sh.echo("/p0/schemata", "L3:0=3") == EINVAL);
  CHECK(sh.lcs() == "Resource group is pseudo-locked\n");
  CHECK(sh.echo("/schemata", "L3:0=7ff") == EINVAL);
  CHECK(sh.lcs() == "CBM overlaps with pseudo-locked region\n");
  CHECK(sh.echo("/schemata", "L3:1=7ff;0=6") == EINVAL);
  CHECK(sh.lcs() == "CBM overlaps with pseudo-locked region\n");
  CHECK(sh.echo("/schemata", "L3:0=2") == EINVAL);
  CHECK(sh.lcs() == "CBM overlaps with pseudo-locked region\n");
  // New groups avoid the region (and reuse the CLOSID).
  REQUIRE(sh.mkdir("/p1") == 0);
  CHECK(sh.cat("/p1/schemata") == "    MB:0=100;1=100\n    L3:0=7fc;1=7ff\n");
  CHECK(sh.cat("/info/L3/bit_usage") == "0=SSSSSSSSSPP;1=SSSSSSSSSSS\n");
  CHECK(sh.cat("/p0/schemata") == "L3:0=3\n");
  CHECK(status(*f.fs)["closids"]["free"] == free_closids);
  CHECK(sh.echo("/p1/mode", "exclusive") == EINVAL);
  CHECK(sh.lcs() == "Schemata overlaps\n");

  // One region per cache hierarchy.
  REQUIRE(sh.mkdir("/p2") == 0);
  REQUIRE(sh.echo("/p2/mode", "pseudo-locksetup") == 0);
  CHECK(sh.echo("/p2/schemata", "L3:0=4") == EINVAL);
  CHECK(sh.lcs() == "Pseudo-locked region in hierarchy\n");
  CHECK(sh.echo("/p2/schemata", "L3:1=1") == EINVAL);
  CHECK(sh.lcs() == "Overlaps with other group\n");
  REQUIRE(sh.echo("/schemata", "L3:1=7f0") == 0);
  REQUIRE(sh.echo("/p1/schemata", "L3:1=7f0") == 0);
  // Nothing of a refused write stays behind.
  CHECK(sh.echo("/p2/schemata", "L3:1=3\nL3:0=4") == EINVAL);
  CHECK(sh.lcs() == "Pseudo-locked region in hierarchy\n");
  CHECK(sh.echo("/p2/schemata", "L3:1=3") == 0);
  CHECK(sh.cat("/p2/mode") == "pseudo-locked\n");
  CHECK(sh.cat("/p2/cpus_list") == "4-7\n");
  CHECK(sh.cat("/info/L3/bit_usage") == "0=SSSSSSSSSPP;1=SSSSSSS00PP\n");

  // rmdir releases the region and nothing else moves.
  CHECK(sh.rmdir("/p0") == 0);
  CHECK(f.backend.arch->pseudo_locked_cbm(hw::ResourceId::L3, 0) == 0);
  CHECK(sh.cat("/info/L3/bit_usage") == "0=SSSSSSSSS00;1=SSSSSSS00PP\n");
  CHECK(sh.echo("/schemata", "L3:0=7ff") == 0);
  CHECK(status(*f.fs)["closids"]["free"] == free_closids);
  // Unmount destroys the rest; a remount starts clean.
  f.fs->unmount();
  CHECK(f.backend.arch->pseudo_locked_cbm(hw::ResourceId::L3, 1) == 0);
  REQUIRE(f.fs->mount({}).ok());
  CHECK(sh.cat("/info/L3/bit_usage") == "0=SSSSSSSSSSS;1=SSSSSSSSSSS\n");
  CHECK(sh.echo("/schemata", "L3:1=7ff") == 0);
}

TEST_CASE("rmdir of a pseudo-locksetup group frees its CLOSID", "[pseudolock]") {
  SimFixture f("intel-bdx");
  Shell& sh = *f.sh;
  const unsigned free_closids = status(*f.fs)["closids"]["free"];
  REQUIRE(sh.mkdir("/p0") == 0);
  REQUIRE(sh.echo("/p0/mode", "pseudo-locksetup") == 0);
  const unsigned limbo = status(*f.fs)["rmids"]["limbo"];
  CHECK(sh.rmdir("/p0") == 0);
  CHECK(status(*f.fs)["closids"]["free"] == free_closids);
  // Its RMID was released on entry, not a second time now.
  CHECK(status(*f.fs)["rmids"]["limbo"] == limbo);
  // Unmount of a locksetup group does not release it twice either.
  REQUIRE(sh.mkdir("/p1") == 0);
  REQUIRE(sh.echo("/p1/mode", "pseudo-locksetup") == 0);
  const unsigned limbo2 = status(*f.fs)["rmids"]["limbo"];
  f.fs->unmount();
  CHECK(status(*f.fs)["rmids"]["limbo"] == limbo2);
}

TEST_CASE("a locking failure in hw/ leaves the group in pseudo-locksetup", "[pseudolock]") {
  hw::PlatformInfo p = FakeArch::base_platform(4);
  FakeArch::add_l3_cat(p, 8, 4);
  p.pseudo_lock_capable = true;
  FakeFixture k(p);
  FakeArch& arch = k.arch;
  Shell& sh = *k.sh;
  REQUIRE(sh.echo("/schemata", "L3:0=fc") == 0);
  REQUIRE(sh.mkdir("/p0") == 0);
  REQUIRE(sh.echo("/p0/mode", "pseudo-locksetup") == 0);
  arch.fail_pseudo_lock = EIO;
  CHECK(sh.echo("/p0/schemata", "L3:0=3") == EIO);
  CHECK(sh.lcs() == "Locking thread returned error -5\n");
  CHECK(sh.cat("/p0/mode") == "pseudo-locksetup\n");
  CHECK(sh.cat("/p0/schemata") == "L3:uninitialized\n");
  arch.fail_pseudo_lock = 0;
  CHECK(sh.echo("/p0/schemata", "L3:0=3") == 0);
  CHECK(sh.cat("/p0/schemata") == "L3:0=3\n");
  CHECK(arch.locked.size() == 1);
  // The locked cache domain goes away: its files fail to read.
  auto& doms = arch.mutable_info().resources[0].ctrl_domains;
  doms.erase(doms.begin());
  for (const char* file : {"/p0/schemata", "/p0/size", "/p0/cpus", "/p0/cpus_list"}) {
    INFO(file);
    CHECK(sh.cat(file) == "ERRNO 19");
    CHECK(sh.lcs() == "Cache domain offline\n");
  }
  CHECK(sh.rmdir("/p0") == 0);
}

TEST_CASE("leaving pseudo-locksetup needs an RMID", "[pseudolock]") {
  hw::PlatformInfo p = FakeArch::base_platform(4);
  FakeArch::add_l3_cat(p, 8, 4);
  FakeArch::add_l3_mon(p, 2);
  p.pseudo_lock_capable = true;
  FakeFixture k(p);
  Shell& sh = *k.sh;
  REQUIRE(sh.mkdir("/p0") == 0);  // the only RMID besides 0
  REQUIRE(sh.echo("/p0/mode", "pseudo-locksetup") == 0);
  // The RMID is in limbo now: nobody can have it yet.
  CHECK(sh.mkdir("/p1") == EBUSY);
  CHECK(sh.lcs() == "Out of RMIDs\n");
  CHECK(sh.echo("/p0/mode", "shareable") == EBUSY);
  CHECK(sh.lcs() == "Out of RMIDs\n");
  CHECK(sh.cat("/p0/mode") == "pseudo-locksetup\n");
  CHECK(sh.cat("/p0/tasks") == "ERRNO 13");
}

TEST_CASE("state: pseudo-locksetup and pseudo-locked groups survive a restart", "[pseudolock]") {
  SimFixture a("intel-bdx");
  Shell& sa = *a.sh;
  make_room(sa);
  REQUIRE(sa.mkdir("/p0") == 0);
  REQUIRE(sa.echo("/p0/mode", "pseudo-locksetup") == 0);
  REQUIRE(sa.echo("/p0/schemata", "L3:0=3") == 0);
  REQUIRE(sa.mkdir("/p1") == 0);  // takes p0's old CLOSID
  REQUIRE(sa.echo("/p1/schemata", "L3:0=3fc") == 0);
  REQUIRE(sa.mkdir("/p2") == 0);
  REQUIRE(sa.echo("/p2/mode", "pseudo-locksetup") == 0);
  const std::string saved = a.fs->save_state_json();

  SimFixture b("intel-bdx");
  Shell& sb = *b.sh;
  REQUIRE(b.fs->restore_state_json(saved).ok());
  for (const char* file :
       {"/schemata", "/p0/mode", "/p0/schemata", "/p0/size", "/p0/cpus_list", "/p1/schemata",
        "/p2/mode", "/p2/schemata", "/p2/size", "/info/L3/bit_usage"}) {
    INFO(file);
    CHECK(sb.cat(file) == sa.cat(file));
  }
  CHECK(sb.cat("/p0/mode") == "pseudo-locked\n");
  CHECK(sb.cat("/p0/tasks") == "ERRNO 13");
  CHECK(sb.stat("/p0/cpus").mode == (S_IFREG | 0444));
  CHECK(sb.cat("/p2/tasks") == "ERRNO 13");
  CHECK(b.backend.arch->pseudo_locked_cbm(hw::ResourceId::L3, 0) == 0x3);
  CHECK(sb.echo("/schemata", "L3:0=7ff") == EINVAL);
  CHECK(sb.lcs() == "CBM overlaps with pseudo-locked region\n");
  CHECK(b.fs->save_state_json() == saved);
  // A platform without pseudo-locking refuses such a document.
  SimFixture c("intel-2s");
  CHECK(!c.fs->restore_state_json(saved).ok());
}

}  // namespace resctrlfs::fs::testing

namespace resctrlfs::fs::testing {

TEST_CASE("a locked region is lost with its cache domain", "[pseudolock]") {
  SimFixture f("intel-bdx");
  Shell& sh = *f.sh;
  REQUIRE(sh.echo("/schemata", "L3:1=7fc") == 0);
  REQUIRE(sh.mkdir("/p0") == 0);
  REQUIRE(sh.echo("/p0/mode", "pseudo-locksetup") == 0);
  REQUIRE(sh.echo("/p0/schemata", "L3:1=3") == 0);
  for (unsigned cpu = 4; cpu < 8; ++cpu) {
    REQUIRE(f.fs->cpu_offline(cpu).ok());
    REQUIRE(f.backend.sim->set_cpu_online(cpu, false).ok());
  }
  CHECK(f.backend.arch->pseudo_locked_cbm(hw::ResourceId::L3, 1) == 0);
  CHECK(sh.cat("/p0/schemata") == "ERRNO 19");
  CHECK(sh.lcs() == "Cache domain offline\n");
  for (unsigned cpu = 4; cpu < 8; ++cpu) {
    REQUIRE(f.backend.sim->set_cpu_online(cpu, true).ok());
    REQUIRE(f.fs->cpu_online(cpu).ok());
  }
  // Back with default masks and no region; the group stays as it was.
  CHECK(sh.cat("/p0/size") == "ERRNO 19");
  CHECK(sh.cat("/p0/mode") == "pseudo-locked\n");
  CHECK(sh.cat("/info/L3/bit_usage") == "0=SSSSSSSSSSS;1=SSSSSSSSSSS\n");
  const std::string saved = f.fs->save_state_json();
  CHECK(sh.rmdir("/p0") == 0);
  SimFixture b("intel-bdx");
  REQUIRE(b.fs->restore_state_json(saved).ok());
  CHECK(b.sh->cat("/p0/cpus_list") == "ERRNO 19");
}

}  // namespace resctrlfs::fs::testing
