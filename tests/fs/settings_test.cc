// The settings table (fs/settings.cc): the journal's state document and the
// boot state check a setting with the same code, so a value one refuses the
// other refuses too (the journal restore used to take an unknown
// mbm_assign_mode as "default" and skip a threshold beyond the L3, where the
// boot state refused both).
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/fs/harness.h"

namespace resctrlfs::fs::testing {
namespace {

TEST_CASE("settings: the journal and the boot state refuse the same values", "[state]") {
  struct Case {
    const char* what;
    nlohmann::json settings;
  };
  const Case cases[] = {
      {"unknown assignment mode", {{"mbm_assign_mode", "sometimes"}}},
      {"threshold beyond the L3", {{"max_threshold_occupancy", 1U << 30}}},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    SimFixture journal("amd-2s");
    const std::string before = journal.fs->save_state_json();
    nlohmann::json doc = {{"version", 1}, {"settings", c.settings}};
    auto r = journal.fs->restore_state_json(doc.dump());
    CHECK_FALSE(r.ok());
    if (!r.ok()) CHECK(r.error().code == EINVAL);
    CHECK(journal.fs->save_state_json() == before);

    SimFixture boot("amd-2s");
    boot.fs->unmount();
    nlohmann::json bdoc = c.settings;
    bdoc["version"] = 1;
    auto b = boot.fs->restore_boot_state_json(bdoc.dump());
    CHECK_FALSE(b.ok());
    if (!b.ok()) CHECK(b.error().code == EINVAL);
  }
}

}  // namespace
}  // namespace resctrlfs::fs::testing
