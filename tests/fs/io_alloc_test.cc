// io_alloc (AMD SDCIAE): the info files, their reads and writes, when
// last_cmd_status is reset, bit_usage, and io_alloc on a resource or while
// disabled, on the amd-io simulated platform (amd-2s
// plus SDCIAE: L3 16-bit sparse masks, 16 CLOSIDs, MB and SMBA with 16
// CLOSIDs, two L3 domains 0 and 1, 8 CPUs) unless stated.
#include <sys/stat.h>

#include <catch2/catch.hpp>

#include "tests/fs/fake_arch.h"
#include "tests/fs/harness.h"

namespace resctrlfs::fs::testing {

namespace {

constexpr const char* kRootSchemata =
    "  SMBA:0=2048;1=2048\n    MB:0=2048;1=2048\n    L3:0=ffff;1=ffff\n";

// A FakeArch platform: L3 (io_alloc capable, 8-bit masks, min 1 bit) and L2
// CAT, and optionally MB with fewer CLOSIDs than L3.
hw::PlatformInfo io_platform(unsigned mb_closids = 0) {
  hw::PlatformInfo p = FakeArch::base_platform();
  FakeArch::add_l3_cat(p, 8, 16);
  p.resources[0].cache.io_alloc_capable = true;
  hw::Resource& l2 = p.resources[1];
  l2.alloc_capable = true;
  l2.num_closid = 16;
  l2.cache.cbm_len = 4;
  l2.cache.min_cbm_bits = 1;
  l2.cache.cache_size_bytes = 1 << 18;
  l2.ctrl_domains = FakeArch::two_domains(p.nr_cpus);
  if (mb_closids != 0) {
    hw::Resource& mb = p.resources[2];
    mb.alloc_capable = true;
    mb.num_closid = mb_closids;
    mb.membw = {10, 10, 100, true, true, hw::ThrottleMode::MAX};
    mb.ctrl_domains = FakeArch::two_domains(p.nr_cpus);
  }
  return p;
}

}  // namespace

TEST_CASE("io_alloc: files exist in every cache info dir when L3 is capable", "[io_alloc]") {
  SimFixture f("amd-io");
  Shell& sh = *f.sh;
  CHECK(sh.ls("/info/L3").count("io_alloc") == 1);
  CHECK(sh.ls("/info/L3").count("io_alloc_cbm") == 1);
  CHECK((sh.stat("/info/L3/io_alloc").mode & 07777) == 0644);
  CHECK((sh.stat("/info/L3/io_alloc_cbm").mode & 07777) == 0644);
  CHECK(sh.ls("/info/MB").count("io_alloc") == 0);
  CHECK(sh.ls("/info/SMBA").count("io_alloc_cbm") == 0);
  SimFixture plain("amd-2s");
  CHECK(plain.sh->ls("/info/L3").count("io_alloc") == 0);
  CHECK(plain.sh->ls("/info/L3").count("io_alloc_cbm") == 0);

  MountOptions o;
  o.cdp = true;
  SimFixture c("amd-io", o);
  for (const char* d : {"/info/L3CODE", "/info/L3DATA"}) {
    INFO(d);
    CHECK(c.sh->ls(d).count("io_alloc") == 1);
    CHECK(c.sh->ls(d).count("io_alloc_cbm") == 1);
  }
  // L2 of a platform where only L3 is capable.
  FakeFixture k(io_platform());
  CHECK(k.sh->ls("/info/L2").count("io_alloc") == 1);
  CHECK(k.sh->ls("/info/L2").count("io_alloc_cbm") == 1);
}

TEST_CASE("io_alloc: disabled by default, io_alloc_cbm refuses while disabled", "[io_alloc]") {
  SimFixture f("amd-io");
  Shell& sh = *f.sh;
  CHECK(sh.cat("/info/L3/io_alloc") == "disabled\n");
  // io_alloc_cbm while io_alloc is disabled.
  CHECK(sh.cat("/info/L3/io_alloc_cbm") == "ERRNO " + std::to_string(EINVAL));
  CHECK(sh.lcs() == "io_alloc is not enabled on L3\n");
  CHECK(sh.echo("/info/L3/io_alloc_cbm", "0=f") == EINVAL);
  CHECK(sh.lcs() == "io_alloc is not enabled on L3\n");
  // A read of io_alloc leaves LCS alone.
  CHECK(sh.cat("/info/L3/io_alloc") == "disabled\n");
  CHECK(sh.lcs() == "io_alloc is not enabled on L3\n");
  // Disabling what is disabled succeeds and resets LCS.
  CHECK(sh.echo("/info/L3/io_alloc", "0") == 0);
  CHECK(sh.lcs() == "ok\n");
}

TEST_CASE("io_alloc: not supported on L2 when only L3 is capable (case 54)", "[io_alloc]") {
  FakeFixture k(io_platform());
  Shell& sh = *k.sh;
  CHECK(sh.cat("/info/L2/io_alloc") == "not supported\n");
  CHECK(sh.cat("/info/L3/io_alloc") == "disabled\n");
  CHECK(sh.echo("/info/L2/io_alloc", "1") == ENODEV);
  CHECK(sh.lcs() == "io_alloc is not supported on L2\n");
  CHECK(sh.cat("/info/L2/io_alloc_cbm") == "ERRNO " + std::to_string(ENODEV));
  CHECK(sh.lcs() == "io_alloc is not supported on L2\n");
  CHECK(sh.echo("/info/L2/io_alloc_cbm", "0=1") == ENODEV);
  CHECK(sh.lcs() == "io_alloc is not supported on L2\n");
  CHECK_FALSE(k.arch.io_alloc_enabled(hw::ResourceId::L2));
}

TEST_CASE("io_alloc: bad input is refused before LCS is touched", "[io_alloc]") {
  SimFixture f("amd-io");
  Shell& sh = *f.sh;
  REQUIRE(sh.echo("/schemata", "L3:9=1") == EINVAL);
  REQUIRE(sh.echo("/schemata", "L3:0=10000") == EINVAL);
  const std::string before = sh.lcs();
  REQUIRE(before == "Mask out of range\n");
  // Not a boolean.
  CHECK(sh.echo("/info/L3/io_alloc", "maybe") == EINVAL);
  CHECK(sh.echo("/info/L3/io_alloc", "") == EINVAL);
  CHECK(sh.lcs() == before);
  // io_alloc_cbm: empty or without a trailing newline.
  CHECK(sh.write("/info/L3/io_alloc_cbm", "0=f") == EINVAL);
  CHECK(sh.write("/info/L3/io_alloc_cbm", "") == EINVAL);
  CHECK(sh.lcs() == before);
  // kstrtobool forms, no newline needed.
  CHECK(sh.write("/info/L3/io_alloc", "on") == 0);
  CHECK(sh.cat("/info/L3/io_alloc") == "enabled\n");
  CHECK(sh.write("/info/L3/io_alloc", "N") == 0);
  CHECK(sh.cat("/info/L3/io_alloc") == "disabled\n");
}

TEST_CASE("io_alloc: enable reserves the highest CLOSID and initialises its mask", "[io_alloc]") {
  SimFixture f("amd-io");
  Shell& sh = *f.sh;
  REQUIRE(sh.echo("/schemata", "L3:0=ff00;1=fff0") == 0);
  REQUIRE(sh.mkdir("/x") == 0);
  REQUIRE(sh.echo("/x/schemata", "L3:0=f;1=f") == 0);
  REQUIRE(sh.echo("/x/mode", "exclusive") == 0);
  CHECK(sh.echo("/info/L3/io_alloc", "1") == 0);
  CHECK(sh.lcs() == "ok\n");
  CHECK(sh.cat("/info/L3/io_alloc") == "enabled\n");
  CHECK(f.backend.arch->io_alloc_enabled(hw::ResourceId::L3));
  // Like a new group: shareable bits of others plus unused bits, never the
  // exclusive group's.
  CHECK(sh.cat("/info/L3/io_alloc_cbm") == "0=fff0;1=fff0\n");
  CHECK(f.backend.arch->get_ctrl(hw::ResourceId::L3, hw::ConfType::NONE, 0, 15) == 0xfff0);
  // Enabling again is a no-op.
  CHECK(sh.echo("/info/L3/io_alloc", "y") == 0);
  // num_closids is not reduced.
  CHECK(sh.cat("/info/L3/num_closids") == "16\n");
  // mkdir cannot get CLOSID 15 now: x has 1, so 2..14 are left (13 groups).
  for (int i = 2; i <= 14; ++i) REQUIRE(sh.mkdir("/g" + std::to_string(i)) == 0);
  CHECK(sh.mkdir("/g15") == ENOSPC);
  CHECK(sh.lcs() == "Out of CLOSIDs\n");
  // Disabling returns it to the pool.
  CHECK(sh.echo("/info/L3/io_alloc", "0") == 0);
  CHECK(sh.cat("/info/L3/io_alloc") == "disabled\n");
  CHECK_FALSE(f.backend.arch->io_alloc_enabled(hw::ResourceId::L3));
  CHECK(sh.mkdir("/g15") == 0);
}

TEST_CASE("io_alloc: enabling fails when a group owns the CLOSID (case 53)", "[io_alloc]") {
  SimFixture f("amd-io");
  Shell& sh = *f.sh;
  for (int i = 1; i <= 15; ++i) REQUIRE(sh.mkdir("/g" + std::to_string(i)) == 0);
  CHECK(sh.echo("/info/L3/io_alloc", "1") == ENOSPC);
  CHECK(sh.lcs() == "CLOSID (ctrl_hw_id) 15 for io_alloc is used by g15 group\n");
  CHECK(sh.cat("/info/L3/io_alloc") == "disabled\n");
  CHECK_FALSE(f.backend.arch->io_alloc_enabled(hw::ResourceId::L3));
  // Freeing it makes enabling possible; then the CLOSID is not free.
  REQUIRE(sh.rmdir("/g15") == 0);
  CHECK(sh.echo("/info/L3/io_alloc", "1") == 0);
  CHECK(sh.mkdir("/g15") == ENOSPC);
  CHECK(sh.lcs() == "Out of CLOSIDs\n");
}

TEST_CASE("io_alloc: the CLOSID must be below the usable CLOSID count", "[io_alloc]") {
  FakeFixture k(io_platform(8));  // MB has 8 CLOSIDs, L3 16: CLOSID 15 is unusable
  Shell& sh = *k.sh;
  CHECK(sh.echo("/info/L3/io_alloc", "1") == EINVAL);
  CHECK(sh.lcs() == "io_alloc CLOSID (ctrl_hw_id) 15 is not available\n");
  CHECK(sh.cat("/info/L3/io_alloc") == "disabled\n");
  CHECK_FALSE(k.arch.io_alloc_enabled(hw::ResourceId::L3));
  // Disabling never needs the CLOSID.
  CHECK(sh.echo("/info/L3/io_alloc", "0") == 0);
}

TEST_CASE("io_alloc: no space for the mask, hardware failure", "[io_alloc]") {
  FakeFixture k(io_platform());
  Shell& sh = *k.sh;
  // Every L3 bit belongs to an exclusive group.
  REQUIRE(sh.echo("/schemata", "L3:0=f;1=f\nL2:0=3;1=3") == 0);
  REQUIRE(sh.mkdir("/x") == 0);
  REQUIRE(sh.echo("/x/schemata", "L3:0=f0;1=f0\nL2:0=c;1=c") == 0);
  REQUIRE(sh.echo("/x/mode", "exclusive") == 0);
  REQUIRE(sh.echo("/mode", "exclusive") == 0);
  CHECK(sh.echo("/info/L3/io_alloc", "1") == ENOSPC);
  CHECK(sh.lcs() == "No space on L3:0\nFailed to initialize io_alloc allocations\n");
  CHECK(sh.cat("/info/L3/io_alloc") == "disabled\n");
  // The CLOSID went back to the pool.
  REQUIRE(sh.echo("/mode", "shareable") == 0);
  for (int i = 2; i <= 15; ++i) REQUIRE(sh.mkdir("/g" + std::to_string(i)) == 0);
  for (int i = 2; i <= 15; ++i) REQUIRE(sh.rmdir("/g" + std::to_string(i)) == 0);
  // The hardware refuses the enable bit: nothing stays reserved.
  k.arch.fail_io_alloc = true;
  CHECK(sh.echo("/info/L3/io_alloc", "1") == EIO);
  CHECK(sh.cat("/info/L3/io_alloc") == "disabled\n");
  k.arch.fail_io_alloc = false;
  for (int i = 2; i <= 15; ++i) REQUIRE(sh.mkdir("/g" + std::to_string(i)) == 0);
}

TEST_CASE("io_alloc_cbm: syntax, validation and messages", "[io_alloc]") {
  SimFixture f("amd-io");
  Shell& sh = *f.sh;
  REQUIRE(sh.echo("/info/L3/io_alloc", "1") == 0);
  CHECK(sh.cat("/info/L3/io_alloc_cbm") == "0=ffff;1=ffff\n");
  CHECK(sh.echo("/info/L3/io_alloc_cbm", "0=ff") == 0);
  CHECK(sh.cat("/info/L3/io_alloc_cbm") == "0=ff;1=ffff\n");
  CHECK(sh.lcs() == "ok\n");
  CHECK(sh.echo("/info/L3/io_alloc_cbm", "1=0xF0;0=3") == 0);
  CHECK(sh.cat("/info/L3/io_alloc_cbm") == "0=3;1=f0\n");
  // `*`: every domain.
  CHECK(sh.echo("/info/L3/io_alloc_cbm", "*=f00") == 0);
  CHECK(sh.cat("/info/L3/io_alloc_cbm") == "0=f00;1=f00\n");
  // Unknown domain (v7.1 message); nothing applied.
  CHECK(sh.echo("/info/L3/io_alloc_cbm", "0=1;2=f") == EINVAL);
  CHECK(sh.lcs() == "Invalid domain 2\n");
  CHECK(sh.cat("/info/L3/io_alloc_cbm") == "0=f00;1=f00\n");
  CHECK(sh.echo("/info/L3/io_alloc_cbm", "0=10000") == EINVAL);
  CHECK(sh.lcs() == "Mask out of range\n");
  CHECK(sh.echo("/info/L3/io_alloc_cbm", "0=xyz") == EINVAL);
  CHECK(sh.lcs() == "Non-hex character in the mask xyz\n");
  CHECK(sh.echo("/info/L3/io_alloc_cbm", "0=f;0=f") == EINVAL);
  CHECK(sh.lcs() == "Duplicate domain 0\n");
  CHECK(sh.echo("/info/L3/io_alloc_cbm", "L3:0=f") == EINVAL);
  CHECK(sh.lcs() == "Missing '=' or non-numeric domain\n");
  CHECK(sh.cat("/info/L3/io_alloc_cbm") == "0=f00;1=f00\n");
  // AMD accepts sparse and empty masks, as in schemata.
  CHECK(sh.echo("/info/L3/io_alloc_cbm", "0=5050;1=0") == 0);
  CHECK(sh.cat("/info/L3/io_alloc_cbm") == "0=5050;1=0\n");
  // A successful read resets LCS.
  CHECK(sh.echo("/info/L3/io_alloc_cbm", "0=zz") == EINVAL);
  CHECK(sh.cat("/info/L3/io_alloc_cbm") == "0=5050;1=0\n");
  CHECK(sh.lcs() == "ok\n");
  // Hardware: the L3 mask of CLOSID 15 in each domain.
  CHECK(f.backend.arch->get_ctrl(hw::ResourceId::L3, hw::ConfType::NONE, 0, 15) == 0x5050);
  CHECK(f.backend.arch->get_ctrl(hw::ResourceId::L3, hw::ConfType::NONE, 1, 15) == 0);
}

TEST_CASE("io_alloc: bit_usage, exclusive checks and new groups' defaults", "[io_alloc]") {
  SimFixture f("amd-io");
  Shell& sh = *f.sh;
  REQUIRE(sh.echo("/schemata", "L3:0=ff00;1=ff00") == 0);
  REQUIRE(sh.echo("/info/L3/io_alloc", "1") == 0);
  // Initialised like a new group: root's shareable ff00 plus the unused 00ff.
  CHECK(sh.cat("/info/L3/io_alloc_cbm") == "0=ffff;1=ffff\n");
  REQUIRE(sh.echo("/info/L3/io_alloc_cbm", "0=ff;1=3f0") == 0);
  // io_alloc bits are hardware-shared: H alone, X with a shareable group.
  CHECK(sh.cat("/info/L3/bit_usage") == "0=SSSSSSSSHHHHHHHH;1=SSSSSSXXHHHH0000\n");
  // A new group does not get bits only io_alloc uses.
  REQUIRE(sh.mkdir("/p") == 0);
  CHECK(sh.cat("/p/schemata") ==
        "  SMBA:0=2048;1=2048\n    MB:0=2048;1=2048\n    L3:0=ff00;1=ff0f\n");
  // io_alloc counts as another group for exclusive mode.
  REQUIRE(sh.echo("/schemata", "L3:0=f000;1=f000") == 0);
  REQUIRE(sh.echo("/p/schemata", "L3:0=80;1=8") == 0);
  CHECK(sh.echo("/p/mode", "exclusive") == EINVAL);
  CHECK(sh.lcs() == "Schemata overlaps\n");
  REQUIRE(sh.echo("/p/schemata", "L3:0=100;1=1") == 0);
  REQUIRE(sh.echo("/p/mode", "exclusive") == 0);
  CHECK(sh.echo("/p/schemata", "L3:0=180") == EINVAL);
  CHECK(sh.lcs() == "Overlaps with other group\n");
  // ... and io_alloc_cbm may not take an exclusive group's bits.
  CHECK(sh.echo("/info/L3/io_alloc_cbm", "0=1ff") == EINVAL);
  CHECK(sh.lcs() == "Overlaps with exclusive group\n");
  CHECK(sh.cat("/info/L3/bit_usage") == "0=SSSS000EHHHHHHHH;1=SSSS00HHHHHH000E\n");
  // Disabled, its bits no longer count.
  REQUIRE(sh.echo("/info/L3/io_alloc", "0") == 0);
  CHECK(sh.cat("/info/L3/bit_usage") == "0=SSSS000E00000000;1=SSSS00000000000E\n");
  CHECK(sh.cat("/schemata") ==
        "  SMBA:0=2048;1=2048\n    MB:0=2048;1=2048\n    L3:0=f000;1=f000\n");
}

TEST_CASE("io_alloc with CDP: CODE and DATA kept identical", "[io_alloc]") {
  MountOptions o;
  o.cdp = true;
  SimFixture f("amd-io", o);
  Shell& sh = *f.sh;
  CHECK(sh.cat("/info/L3DATA/io_alloc") == "disabled\n");
  CHECK(sh.cat("/info/L3CODE/io_alloc_cbm") == "ERRNO " + std::to_string(EINVAL));
  CHECK(sh.lcs() == "io_alloc is not enabled on L3CODE\n");
  REQUIRE(sh.echo("/schemata", "L3DATA:0=ff00;1=ff00\nL3CODE:0=f0;1=f0") == 0);
  REQUIRE(sh.mkdir("/x") == 0);
  REQUIRE(sh.echo("/x/schemata", "L3DATA:0=f;1=f\nL3CODE:0=f;1=f") == 0);
  REQUIRE(sh.echo("/x/mode", "exclusive") == 0);
  REQUIRE(sh.echo("/info/L3CODE/io_alloc", "1") == 0);
  CHECK(sh.cat("/info/L3DATA/io_alloc") == "enabled\n");
  CHECK(sh.cat("/info/L3CODE/num_closids") == "8\n");
  // Computed for CODE (the file written), copied to DATA.
  CHECK(sh.cat("/info/L3CODE/io_alloc_cbm") == "0=fff0;1=fff0\n");
  CHECK(sh.cat("/info/L3DATA/io_alloc_cbm") == "0=fff0;1=fff0\n");
  CHECK(f.backend.arch->get_ctrl(hw::ResourceId::L3, hw::ConfType::DATA, 0, 7) == 0xfff0);
  CHECK(f.backend.arch->get_ctrl(hw::ResourceId::L3, hw::ConfType::CODE, 0, 7) == 0xfff0);
  CHECK(sh.echo("/info/L3DATA/io_alloc_cbm", "1=f") == EINVAL);  // x's (exclusive) CODE/DATA
  CHECK(sh.lcs() == "Overlaps with exclusive group\n");
  CHECK(sh.echo("/info/L3DATA/io_alloc_cbm", "1=f00") == 0);
  CHECK(sh.cat("/info/L3CODE/io_alloc_cbm") == "0=fff0;1=f00\n");
  CHECK(sh.cat("/info/L3DATA/io_alloc_cbm") == "0=fff0;1=f00\n");
  CHECK(f.backend.arch->get_ctrl(hw::ResourceId::L3, hw::ConfType::CODE, 1, 7) == 0xf00);
  // CLOSID 7 is io_alloc's, x has 1: five more groups fit.
  for (int i = 2; i <= 6; ++i) REQUIRE(sh.mkdir("/g" + std::to_string(i)) == 0);
  CHECK(sh.mkdir("/g7") == ENOSPC);
  CHECK(sh.lcs() == "Out of CLOSIDs\n");
  REQUIRE(sh.echo("/info/L3DATA/io_alloc", "0") == 0);
  CHECK(sh.cat("/info/L3CODE/io_alloc") == "disabled\n");
  CHECK(sh.mkdir("/g7") == 0);
}

TEST_CASE("io_alloc: CDP, a group holding CLOSID 7 blocks enabling", "[io_alloc]") {
  MountOptions o;
  o.cdp = true;
  SimFixture f("amd-io", o);
  Shell& sh = *f.sh;
  for (int i = 1; i <= 7; ++i) REQUIRE(sh.mkdir("/g" + std::to_string(i)) == 0);
  CHECK(sh.echo("/info/L3DATA/io_alloc", "1") == ENOSPC);
  CHECK(sh.lcs() == "CLOSID (ctrl_hw_id) 7 for io_alloc is used by g7 group\n");
}

TEST_CASE("io_alloc: unmount resets it", "[io_alloc]") {
  SimFixture f("amd-io");
  Shell& sh = *f.sh;
  REQUIRE(sh.echo("/info/L3/io_alloc", "1") == 0);
  REQUIRE(sh.echo("/info/L3/io_alloc_cbm", "*=3") == 0);
  f.fs->unmount();
  CHECK_FALSE(f.backend.arch->io_alloc_enabled(hw::ResourceId::L3));
  REQUIRE(f.fs->mount({}).ok());
  CHECK(sh.cat("/info/L3/io_alloc") == "disabled\n");
  for (int i = 1; i <= 15; ++i) REQUIRE(sh.mkdir("/g" + std::to_string(i)) == 0);
  CHECK(sh.cat("/g15/schemata") == kRootSchemata);
}

TEST_CASE("io_alloc: a mount starts with it disabled even if the hardware had it on",
          "[io_alloc]") {
  auto b = hw::make_sim_backend("amd-io");
  REQUIRE(b.ok());
  REQUIRE(b->arch->set_io_alloc_enabled(hw::ResourceId::L3, true).ok());
  FakeTasks tasks;
  FilesystemConfig cfg{b->arch.get(), &tasks, nullptr, 0, 0};
  auto fs = make_filesystem(cfg);
  REQUIRE(fs->mount({}).ok());
  CHECK_FALSE(b->arch->io_alloc_enabled(hw::ResourceId::L3));
  Shell sh(*fs);
  CHECK(sh.cat("/info/L3/io_alloc") == "disabled\n");
}

TEST_CASE("io_alloc: state save/restore keeps it enabled with its masks", "[io_alloc][state]") {
  SimFixture a("amd-io");
  Shell& sa = *a.sh;
  REQUIRE(sa.mkdir("/p0") == 0);
  REQUIRE(sa.echo("/info/L3/io_alloc", "1") == 0);
  REQUIRE(sa.echo("/info/L3/io_alloc_cbm", "0=f;1=f0") == 0);
  const std::string saved = a.fs->save_state_json();

  SimFixture b("amd-io");
  Shell& sb = *b.sh;
  REQUIRE(b.fs->restore_state_json(saved).ok());
  CHECK(sb.cat("/info/L3/io_alloc") == "enabled\n");
  CHECK(sb.cat("/info/L3/io_alloc_cbm") == "0=f;1=f0\n");
  CHECK(sb.cat("/info/L3/bit_usage") == sa.cat("/info/L3/bit_usage"));
  CHECK(b.backend.arch->io_alloc_enabled(hw::ResourceId::L3));
  CHECK(b.fs->save_state_json() == saved);
  // The CLOSID is still reserved: p0 has 1, so 2..14.
  for (int i = 2; i <= 14; ++i) REQUIRE(sb.mkdir("/g" + std::to_string(i)) == 0);
  CHECK(sb.mkdir("/g15") == ENOSPC);

  // Disabled state round-trips as disabled.
  SimFixture c("amd-io");
  SimFixture d("amd-io");
  REQUIRE(d.fs->restore_state_json(c.fs->save_state_json()).ok());
  CHECK(d.sh->cat("/info/L3/io_alloc") == "disabled\n");
  // A document whose io_alloc CLOSID is taken by a group is refused.
  SimFixture e("amd-io");
  for (int i = 1; i <= 15; ++i) REQUIRE(e.sh->mkdir("/g" + std::to_string(i)) == 0);
  std::string doc = e.fs->save_state_json();
  doc.insert(doc.rfind('}'), R"(,"io_alloc":{"L3":{"0":1,"1":1}})");
  SimFixture g("amd-io");
  CHECK(g.fs->restore_state_json(doc).error().code == EINVAL);
}

}  // namespace resctrlfs::fs::testing
