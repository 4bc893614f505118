// Journals written by an earlier daemon restore unchanged. The fixture
// tests/reliability/fixtures/journal-amd-2s/ (state.json, the snapshot, and
// state.log, the deltas after it) was written by resctrlfsd of commit
// 198ca1a, before the settings and mount-option tables, killed after the
// commands of its make.sh. It carries the persistent settings
// (max_threshold_occupancy, mbm_assign_mode, mbm_assign_on_mkdir, the
// event filters), the mount options, groups with a MON group, schemata,
// CPUs and an exclusive group. Do not regenerate it to make a change pass:
// a daemon upgraded over an old journal must restore it.
#include <catch2/catch.hpp>
#include <filesystem>
#include <string>

#include "daemon/journal.h"
#include "tests/fs/harness.h"
#include "tests/temp_files.h"

namespace resctrlfs::daemon {
namespace {

using fs::testing::Shell;
using fs::testing::SimFixture;

constexpr const char* kPlatform = "amd-2s";
const fs::MountOptions kOptions{.debug = true};

struct TempDir : test::TempDir {
  TempDir() : test::TempDir("journal-fixture-test") {}
};

std::string fixture_dir() {
  return std::string(RESCTRLFS_SOURCE_DIR) + "/tests/reliability/fixtures/journal-amd-2s";
}

// make.sh's commands, on a live model.
void build_state(SimFixture& a) {
  Shell& sh = *a.sh;
  REQUIRE(sh.echo("/info/L3_MON/max_threshold_occupancy", "131072") == 0);
  REQUIRE(sh.echo("/info/L3_MON/mbm_assign_on_mkdir", "0") == 0);
  REQUIRE(sh.echo("/info/L3_MON/event_configs/mbm_local_bytes/event_filter",
                  "local_reads,local_non_temporal_writes") == 0);
  REQUIRE(sh.mkdir("/g1") == 0);
  REQUIRE(sh.mkdir("/g2") == 0);
  REQUIRE(sh.echo("/schemata", "L3:0=fff;1=fff") == 0);
  REQUIRE(sh.echo("/g1/schemata", "L3:0=ff;1=f00") == 0);
  REQUIRE(sh.echo("/g2/schemata", "L3:0=f;1=f") == 0);
  REQUIRE(sh.echo("/g2/cpus_list", "1-2") == 0);
  REQUIRE(sh.mkdir("/g2/mon_groups/m") == 0);
  REQUIRE(sh.mkdir("/g3") == 0);
  REQUIRE(sh.echo("/g3/schemata", "L3:0=f000;1=f000") == 0);
  REQUIRE(sh.echo("/g3/mode", "exclusive") == 0);
}

const char* const kFiles[] = {"/schemata",
                              "/g1/schemata",
                              "/g2/schemata",
                              "/g3/schemata",
                              "/g3/mode",
                              "/g2/cpus_list",
                              "/cpus_list",
                              "/g2/mon_hw_id",
                              "/g2/mon_groups/m/mon_hw_id",
                              "/g3/ctrl_hw_id",
                              "/info/L3/bit_usage",
                              "/info/L3_MON/max_threshold_occupancy",
                              "/info/L3_MON/mbm_assign_mode",
                              "/info/L3_MON/mbm_assign_on_mkdir",
                              "/info/L3_MON/event_configs/mbm_local_bytes/event_filter",
                              "/info/L3_MON/event_configs/mbm_total_bytes/event_filter",
                              "/mbm_L3_assignments",
                              "/g1/mbm_L3_assignments"};

TEST_CASE("a journal written before the settings table restores unchanged", "[restore]") {
  // The journal is opened in a copy: a restore commits a new generation.
  TempDir dir;
  for (const char* f : {kJournalFile, kJournalLogFile})
    std::filesystem::copy_file(fixture_dir() + "/" + f, dir.path + "/" + f);
  SimFixture live(kPlatform, kOptions);
  build_state(live);
  SimFixture b(kPlatform, kOptions);
  auto j = StateJournal::open_and_restore(dir.path, kPlatform, *b.fs);
  REQUIRE(j.ok());
  REQUIRE((*j)->outcome() == StateJournal::Outcome::kRestored);
  for (const char* f : kFiles) {
    INFO(f);
    CHECK(b.sh->cat(f) == live.sh->cat(f));
  }
  // The whole model, and the document the journal now writes for it.
  CHECK(b.fs->save_state_json() == live.fs->save_state_json());
}

}  // namespace
}  // namespace resctrlfs::daemon
