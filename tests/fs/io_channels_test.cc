// Intel I/O RDT channels in the tree (ours, -o iordt) over FakeArch: the
// exact tagging calls for mount, moves, rmdir, a MON group's rename and
// unmount; a failed hardware write, after mount and at mount (the mount
// refused, the channels reset); the CLOS and RMID tagging refusals; the
// refusal without channels; the tree without the option.
#include <catch2/catch.hpp>

#include "tests/fs/fake_arch.h"
#include "tests/fs/harness.h"

namespace resctrlfs::fs::testing {

namespace {

using Log = std::vector<std::string>;

// L3 CAT (8 CLOSIDs) and monitoring (16 RMIDs) on two domains, and three
// channels: 0x100 and 0x101 tag both, 0x200 only RMIDs.
hw::PlatformInfo platform() {
  hw::PlatformInfo p = FakeArch::base_platform();
  FakeArch::add_l3_cat(p, 8, 8);
  FakeArch::add_l3_mon(p, 16);
  return p;
}

void add_channels(FakeArch& a) {
  a.io_caps = {true, true};
  a.io_chans = {{0x100, "pcie", true, true, {{"0000:16:00.0", 0, false}}},
                {0x101, "pcie", true, true, {{"0000:16:00.0", 1, false}}},
                {0x200, "cxl.cache", false, true, {{"0000:80:00.0", 0, false}}}};
}

MountOptions iordt() {
  MountOptions o;
  o.iordt = true;
  return o;
}

}  // namespace

TEST_CASE("iordt: mount tags every channel with the default group, then turns tagging on",
          "[iordt]") {
  FakeFixture k(platform(), /*mounted=*/false);
  add_channels(k.arch);
  REQUIRE(k.fs->mount(iordt()).ok());
  CHECK(k.arch.io_log == Log{"tags 0x100 0 0", "tags 0x101 0 0", "tags 0x200 0 0", "tagging 1 1"});
  CHECK(k.sh->cat("/channels") == "0x100\n0x101\n0x200\n");
  CHECK(k.sh->ls("/info/IO") == std::set<std::string>{"0x100", "0x101", "0x200"});
  CHECK(k.sh->cat("/info/IO/0x101") == "0000:16:00.0.VC1\n");
  CHECK(k.sh->cat("/info/IO/0x200") == "0000:80:00.0.VC0\n");
}

TEST_CASE("iordt: moves, rmdir and unmount write exactly the tags they change", "[iordt]") {
  FakeFixture k(platform(), /*mounted=*/false);
  add_channels(k.arch);
  REQUIRE(k.fs->mount(iordt()).ok());
  Shell& sh = *k.sh;
  REQUIRE(sh.mkdir("/g") == 0);
  REQUIRE(sh.mkdir("/g/mon_groups/m") == 0);
  const std::string g_closid = "1", g_rmid = "1", m_rmid = "2";
  k.arch.io_log.clear();
  CHECK(sh.echo("/g/channels", "0x100,0x101") == 0);
  CHECK(sh.echo("/g/mon_groups/m/channels", "0x101") == 0);
  CHECK(k.arch.io_log == Log{"tags 0x100 " + g_closid + " " + g_rmid,
                             "tags 0x101 " + g_closid + " " + g_rmid,
                             "tags 0x101 " + g_closid + " " + m_rmid});
  CHECK(sh.cat("/g/channels") == "0x100\n");
  CHECK(sh.cat("/g/mon_groups/m/channels") == "0x101\n");
  // rmdir of the MON group: its channel to the CTRL_MON group; of that one:
  // all of them to the default group.
  k.arch.io_log.clear();
  CHECK(sh.rmdir("/g/mon_groups/m") == 0);
  CHECK(k.arch.io_log == Log{"tags 0x101 " + g_closid + " " + g_rmid});
  CHECK(sh.cat("/g/channels") == "0x100\n0x101\n");
  k.arch.io_log.clear();
  CHECK(sh.rmdir("/g") == 0);
  CHECK(k.arch.io_log == Log{"tags 0x100 0 0", "tags 0x101 0 0"});
  CHECK(sh.cat("/channels") == "0x100\n0x101\n0x200\n");
  // Unmount resets every channel and turns tagging off.
  REQUIRE(sh.mkdir("/h") == 0);
  CHECK(sh.echo("/h/channels", "0x100") == 0);
  k.arch.io_log.clear();
  k.fs->unmount();
  CHECK(k.arch.io_log == Log{"tags 0x100 0 0", "tags 0x101 0 0", "tags 0x200 0 0", "tagging 0 0"});
}

TEST_CASE("iordt: a MON group renamed under another parent retags its channels", "[iordt]") {
  FakeFixture k(platform(), /*mounted=*/false);
  add_channels(k.arch);
  REQUIRE(k.fs->mount(iordt()).ok());
  Shell& sh = *k.sh;
  REQUIRE(sh.mkdir("/g") == 0);               // CLOSID 1, RMID 1
  REQUIRE(sh.mkdir("/h") == 0);               // CLOSID 2, RMID 2
  REQUIRE(sh.mkdir("/g/mon_groups/m") == 0);  // RMID 3
  CHECK(sh.echo("/g/mon_groups/m/channels", "0x100") == 0);
  k.arch.io_log.clear();
  CHECK(sh.mv("/g/mon_groups/m", "/h/mon_groups/m") == 0);
  CHECK(k.arch.io_log == Log{"tags 0x100 2 3"});
  CHECK(sh.cat("/h/mon_groups/m/channels") == "0x100\n");
}

TEST_CASE("iordt: errors", "[iordt]") {
  FakeFixture k(platform(), /*mounted=*/false);
  add_channels(k.arch);
  REQUIRE(k.fs->mount(iordt()).ok());
  Shell& sh = *k.sh;
  REQUIRE(sh.mkdir("/g") == 0);
  REQUIRE(sh.mkdir("/mon_groups/r") == 0);
  k.arch.io_log.clear();
  CHECK(sh.echo("/g/channels", "0x300") == EINVAL);
  CHECK(sh.lcs() == "Unknown channel 0x300\n");
  CHECK(sh.echo("/g/channels", "nic0") == EINVAL);
  CHECK(sh.lcs() == "Invalid channel nic0\n");
  CHECK(sh.echo("/g/channels", "0x200") == EINVAL);
  CHECK(sh.lcs() == "Channel 0x200 has no CLOS tagging\n");
  CHECK(k.arch.io_log.empty());
  // A MON group of the default group needs no CLOSID.
  CHECK(sh.echo("/mon_groups/r/channels", "0x200") == 0);
  CHECK(sh.lcs() == "ok\n");
  // A failed hardware write: EIO, the channel stays where it was.
  k.arch.fail_io_tags = 1;
  CHECK(sh.echo("/g/channels", "0x100") == EIO);
  CHECK(sh.lcs() == "Hardware write failed\n");
  CHECK(sh.cat("/channels") == "0x100\n0x101\n");
  CHECK(sh.cat("/g/channels") == "");
}

TEST_CASE("iordt: a channel without RMID tagging stays out of groups with an RMID", "[iordt]") {
  FakeFixture k(platform(), /*mounted=*/false);
  add_channels(k.arch);
  // 0x102 tags CLOSIDs only.
  k.arch.io_chans.insert(k.arch.io_chans.begin() + 2,
                         {0x102, "pcie", true, false, {{"0000:30:00.0", 0, false}}});
  REQUIRE(k.fs->mount(iordt()).ok());
  Shell& sh = *k.sh;
  REQUIRE(sh.mkdir("/mon_groups/r") == 0);  // CLOSID 0, an RMID of its own
  REQUIRE(sh.mkdir("/g") == 0);
  k.arch.io_log.clear();
  CHECK(sh.echo("/mon_groups/r/channels", "0x102") == EINVAL);
  CHECK(sh.lcs() == "Channel 0x102 has no RMID tagging\n");
  CHECK(sh.echo("/g/channels", "0x102") == EINVAL);
  CHECK(sh.lcs() == "Channel 0x102 has no RMID tagging\n");
  CHECK(k.arch.io_log.empty());
  CHECK(sh.cat("/channels") == "0x100\n0x101\n0x102\n0x200\n");
  CHECK(sh.cat("/mon_groups/r/channels") == "");
  // The same refusal for a channel that can carry an RMID on a machine
  // that does not apply device RMIDs.
  FakeFixture n(platform(), /*mounted=*/false);
  add_channels(n.arch);
  n.arch.io_caps = {true, false};
  REQUIRE(n.fs->mount(iordt()).ok());
  REQUIRE(n.sh->mkdir("/mon_groups/r") == 0);
  CHECK(n.sh->echo("/mon_groups/r/channels", "0x100") == EINVAL);
  CHECK(n.sh->lcs() == "Channel 0x100 has no RMID tagging\n");
}

TEST_CASE("iordt: a failed hardware write at mount refuses the mount and resets the channels",
          "[iordt]") {
  const Log reset = {"tags 0x100 0 0", "tags 0x101 0 0", "tags 0x200 0 0", "tagging 0 0"};
  SECTION("turning tagging on fails") {
    FakeFixture k(platform(), /*mounted=*/false);
    add_channels(k.arch);
    k.arch.fail_io_tagging = 1;
    Result<void> r = k.fs->mount(iordt());
    REQUIRE(!r.ok());
    CHECK(r.error().code == EIO);
    CHECK(r.error().message == "iordt: turning channel tagging on failed: Hardware write failed");
    // The tags written, then the unmount's reset.
    Log want = {"tags 0x100 0 0", "tags 0x101 0 0", "tags 0x200 0 0"};
    want.insert(want.end(), reset.begin(), reset.end());
    CHECK(k.arch.io_log == want);
    CHECK(k.sh->ls("/").empty());
    // Nothing stayed mounted: the next mount works.
    k.arch.io_log.clear();
    REQUIRE(k.fs->mount(iordt()).ok());
    CHECK(k.arch.io_log.back() == "tagging 1 1");
    CHECK(k.sh->cat("/channels") == "0x100\n0x101\n0x200\n");
  }
  SECTION("a channel's tags cannot be written") {
    FakeFixture k(platform(), /*mounted=*/false);
    add_channels(k.arch);
    k.arch.fail_io_tags = 2;  // 0x100 at mount, then 0x100 again at the reset
    Result<void> r = k.fs->mount(iordt());
    REQUIRE(!r.ok());
    CHECK(r.error().code == EIO);
    CHECK(r.error().message ==
          "iordt: writing the default group's tags to channel 0x100 failed: Hardware write failed");
    CHECK(k.arch.io_log == Log{"tags 0x101 0 0", "tags 0x200 0 0", "tagging 0 0"});
    CHECK(k.sh->ls("/").empty());
    REQUIRE(k.fs->mount(iordt()).ok());
  }
}

TEST_CASE("iordt: refused without channels, and without the option the tree is unchanged",
          "[iordt]") {
  FakeFixture none(platform(), /*mounted=*/false);
  Result<void> r = none.fs->mount(iordt());
  REQUIRE(!r.ok());
  CHECK(r.error().code == ENODEV);
  CHECK(r.error().message == "iordt: this machine has no I/O RDT channels");
  // The refusal left nothing mounted: a plain mount works.
  CHECK(none.fs->mount({}).ok());

  FakeFixture plain(platform(), /*mounted=*/false);
  add_channels(plain.arch);
  REQUIRE(plain.fs->mount({}).ok());
  CHECK(plain.sh->ls("/info").count("IO") == 0);
  CHECK(plain.sh->ls("/").count("channels") == 0);
  CHECK(plain.arch.io_log.empty());
  plain.fs->unmount();
  CHECK(plain.arch.io_log.empty());
}

}  // namespace resctrlfs::fs::testing
