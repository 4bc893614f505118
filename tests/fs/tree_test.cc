// The node table: stable inodes, lookup counts and forget, removed nodes
// that stay resolvable until forgotten, directory sets chosen by the file
// table flags, and invalidations for entries fs/ removes by itself.
#include <catch2/catch.hpp>

#include "tests/fs/harness.h"

namespace resctrlfs::fs::testing {

TEST_CASE("tree: inodes are stable and counted", "[tree]") {
  SimFixture f("intel-2s");
  auto a = f.fs->lookup(kRootIno, "info");
  auto b = f.fs->lookup(kRootIno, "info");
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK(a->ino == b->ino);
  CHECK(f.fs->lookup(kRootIno, "nope").error().code == ENOENT);
  CHECK(f.fs->lookup(kRootIno, std::string(256, 'x')).error().code == ENAMETOOLONG);
  auto t = f.fs->lookup(kRootIno, "tasks");
  REQUIRE(t.ok());
  CHECK(f.fs->lookup(t->ino, "x").error().code == ENOTDIR);
  // Live nodes survive forget.
  f.fs->forget(a->ino, 2);
  CHECK(f.fs->getattr(a->ino).ok());
  auto d = f.fs->readdir(kRootIno);
  REQUIRE(d.ok());
  for (const DirEntry& e : *d) {
    CHECK(e.name != ".");
    CHECK(e.name != "..");
  }
}

TEST_CASE("tree: removed nodes live until their last forget", "[tree]") {
  SimFixture f("intel-2s");
  auto dir = f.fs->mkdir(kRootIno, "p0", 0755, root_caller());  // one reference
  REQUIRE(dir.ok());
  auto tasks = f.fs->lookup(dir->ino, "tasks");
  auto tasks2 = f.fs->lookup(dir->ino, "tasks");
  REQUIRE(tasks.ok());
  REQUIRE(f.fs->rmdir(kRootIno, "p0").ok());
  CHECK(f.fs->lookup(kRootIno, "p0").error().code == ENOENT);
  CHECK(f.fs->getattr(dir->ino).ok());
  CHECK(f.fs->open(tasks->ino, O_RDONLY, root_caller()).error().code == ENODEV);
  f.fs->forget(tasks->ino, 1);
  CHECK(f.fs->getattr(tasks->ino).ok());
  f.fs->forget(tasks->ino, 1);
  CHECK(f.fs->getattr(tasks->ino).error().code == ENOENT);
  f.fs->forget(dir->ino, 1);
  CHECK(f.fs->getattr(dir->ino).error().code == ENOENT);
  // A new group gets a new inode.
  auto again = f.fs->mkdir(kRootIno, "p0", 0755, root_caller());
  REQUIRE(again.ok());
  CHECK(again->ino != dir->ino);
}

TEST_CASE("tree: file sets follow the flags table", "[tree]") {
  MountOptions o;
  o.debug = true;
  SimFixture f("intel-2s", o);
  Shell& sh = *f.sh;
  REQUIRE(sh.mkdir("/p0") == 0);
  REQUIRE(sh.mkdir("/p0/mon_groups/m") == 0);
  CHECK(sh.ls("/p0") == std::set<std::string>{"cpus", "cpus_list", "ctrl_hw_id", "mode", "mon_data",
                                              "mon_groups", "mon_hw_id", "schemata", "size",
                                              "tasks"});
  CHECK(sh.ls("/p0/mon_groups/m") ==
        std::set<std::string>{"cpus", "cpus_list", "mon_data", "mon_hw_id", "tasks"});
  CHECK(sh.ls("/info/L3") == std::set<std::string>{"bit_usage", "cbm_mask", "min_cbm_bits",
                                                   "num_closids", "shareable_bits",
                                                   "sparse_masks"});
  CHECK(sh.ls("/info/MB") == std::set<std::string>{"bandwidth_gran", "delay_linear",
                                                   "min_bandwidth", "num_closids",
                                                   "thread_throttle_mode"});
  CHECK(sh.ls("/info/L3_MON") == std::set<std::string>{"max_threshold_occupancy", "mbm_assign_mode",
                                                       "mon_features", "num_rmids"});
  CHECK((sh.stat("/info/L3_MON/max_threshold_occupancy").mode & 0777) == 0644);
  CHECK((sh.stat("/p0/mon_data/mon_L3_01/mbm_total_bytes").mode & 0777) == 0444);
  CHECK((sh.stat("/info").mode & 0777) == 0755);
}

TEST_CASE("tree: info/CB has thread_throttle_mode, with or without MB", "[tree][cba]") {
  // CB (ours, -o cba) is throttled per logical processor: its info
  // directory has MB's files, thread_throttle_mode included, also when the
  // machine shows no MB (rdt=!mba), where the kernel's rule (MB's mode
  // decides) would leave it out.
  MountOptions o;
  o.cba = true;
  const std::set<std::string> mb_files = {"bandwidth_gran", "delay_linear", "min_bandwidth",
                                          "num_closids", "thread_throttle_mode"};
  SimFixture both("intel-cba", o);
  CHECK(both.sh->ls("/info/MB") == mb_files);
  CHECK(both.sh->ls("/info/CB") == mb_files);
  CHECK(both.sh->cat("/info/CB/thread_throttle_mode") == "per-thread\n");
  SimFixture cb_only("intel-cba", o, "!mba");
  CHECK(cb_only.sh->ls("/info").count("MB") == 0);
  CHECK(cb_only.sh->ls("/info/CB") == mb_files);
  CHECK(cb_only.sh->cat("/info/CB/thread_throttle_mode") == "per-thread\n");
  // Without the option the tree is the kernel's: no MB, no CB, no file.
  SimFixture neither("intel-cba", {}, "!mba");
  CHECK(neither.sh->ls("/info").count("CB") == 0);
  CHECK(neither.sh->ls("/info").count("MB") == 0);
}

TEST_CASE("tree: rmdir of a CTRL_MON group invalidates its MON groups", "[tree]") {
  SimFixture f("intel-2s");
  Shell& sh = *f.sh;
  REQUIRE(sh.mkdir("/p0") == 0);
  REQUIRE(sh.mkdir("/p0/mon_groups/m1") == 0);
  auto mg = sh.resolve("/p0/mon_groups");
  REQUIRE(mg.ok());
  f.inval.entries.clear();
  REQUIRE(sh.rmdir("/p0") == 0);
  REQUIRE(f.inval.entries.size() == 1);
  CHECK(f.inval.entries[0] == std::make_pair(*mg, std::string("m1")));
  // The MON group's RMID went to limbo with the parent's.
  CHECK(f.fs->status_json().find("\"limbo\":2") != std::string::npos);
}

TEST_CASE("tree: setattr and ownership", "[tree]") {
  SimFixture f("intel-2s");
  Shell& sh = *f.sh;
  REQUIRE(sh.mkdir("/p0") == 0);
  auto ino = sh.resolve("/p0/tasks");
  REQUIRE(ino.ok());
  uint32_t mode = 0600;
  uid_t uid = 42;
  auto a = f.fs->setattr(*ino, &mode, &uid, nullptr);
  REQUIRE(a.ok());
  CHECK(a->mode == (S_IFREG | 0600));
  CHECK(a->uid == 42);
  // No read bit at all: EACCES even for root.
  mode = 0200;
  REQUIRE(f.fs->setattr(*ino, &mode, nullptr, nullptr).ok());
  CHECK(sh.cat("/p0/tasks") == "ERRNO 13");
  CHECK(sh.echo("/p0/tasks", "") == 0);
}

}  // namespace resctrlfs::fs::testing
