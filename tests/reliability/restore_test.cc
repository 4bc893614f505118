// Tests of restoring the model from the journal over the simulated
// machine: a committed state comes back on a fresh daemon (new machine,
// registers at reset) with the same groups, CLOSIDs/RMIDs, values, CPUs
// and live threads, and the new machine's registers equal the old one's; a
// document that fails half-way leaves the fresh tree and fresh registers.
#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "daemon/journal.h"
#include "tests/fs/harness.h"

namespace resctrlfs::daemon {
namespace {

using fs::testing::Shell;
using fs::testing::SimFixture;

struct TempDir {
  TempDir() {
    char tmpl[] = "/tmp/resctrlfs-restore-test.XXXXXX";
    path = ::mkdtemp(tmpl);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  std::string path;
};

std::vector<std::tuple<unsigned, uint32_t, uint64_t>> regs(const SimFixture& f) {
  std::vector<std::tuple<unsigned, uint32_t, uint64_t>> out;
  for (const hw::RegisterValue& r : f.backend.sim->dump_registers())
    out.emplace_back(r.cpu, r.msr, r.value);
  return out;
}

void build_state(SimFixture& a) {
  Shell& sh = *a.sh;
  for (pid_t t : {100, 101, 102, 103}) a.tasks.add(t);
  REQUIRE(sh.mkdir("/g1") == 0);
  REQUIRE(sh.mkdir("/g2") == 0);
  REQUIRE(sh.rmdir("/g1") == 0);  // g2 keeps CLOSID 2, g3 reuses 1
  REQUIRE(sh.mkdir("/g3") == 0);
  REQUIRE(sh.echo("/g2/schemata", "L3:0=f;1=f0\nMB:0=30;1=50") == 0);
  REQUIRE(sh.echo("/schemata", "L3:0=ff;1=ff") == 0);
  REQUIRE(sh.echo("/g3/schemata", "L3:0=300;1=700") == 0);
  REQUIRE(sh.echo("/g3/mode", "exclusive") == 0);
  REQUIRE(sh.echo("/g2/cpus_list", "1-2,5") == 0);
  REQUIRE(sh.mkdir("/g2/mon_groups/m") == 0);
  REQUIRE(sh.echo("/g2/mon_groups/m/cpus_list", "5") == 0);
  REQUIRE(sh.echo("/g2/tasks", "100") == 0);
  REQUIRE(sh.echo("/g2/tasks", "101") == 0);
  REQUIRE(sh.echo("/g2/mon_groups/m/tasks", "101") == 0);
  REQUIRE(sh.echo("/g3/tasks", "102") == 0);
  REQUIRE(sh.echo("/info/L3_MON/max_threshold_occupancy", "131072") == 0);
}

TEST_CASE("a journaled state comes back on a new machine", "[restore]") {
  TempDir dir;
  SimFixture a("intel-2s", fs::MountOptions{.debug = true});
  build_state(a);
  {
    auto j = StateJournal::open(dir.path);
    REQUIRE(j.ok());
    REQUIRE((*j)->commit_state("intel-2s", *a.fs).ok());
  }
  SimFixture b("intel-2s", fs::MountOptions{.debug = true});
  for (pid_t t : {100, 101, 103}) b.tasks.add(t);  // 102 died meanwhile
  auto j = StateJournal::open_and_restore(dir.path, "intel-2s", *b.fs);
  REQUIRE(j.ok());
  REQUIRE((*j)->outcome() == StateJournal::Outcome::kRestored);
  Shell& sa = *a.sh;
  Shell& sb = *b.sh;
  for (const char* f :
       {"/g2/schemata", "/g3/schemata", "/schemata", "/g3/mode", "/g2/cpus_list", "/cpus_list",
        "/g2/mon_groups/m/cpus_list", "/g2/ctrl_hw_id", "/g3/ctrl_hw_id", "/g2/mon_hw_id",
        "/g3/mon_hw_id", "/g2/mon_groups/m/mon_hw_id", "/info/L3/bit_usage",
        "/info/L3_MON/max_threshold_occupancy", "/g2/tasks", "/g2/mon_groups/m/tasks"}) {
    INFO(f);
    CHECK(sb.cat(f) == sa.cat(f));
  }
  CHECK(sb.cat("/g3/tasks").empty());
  CHECK(sb.cat("/g2/ctrl_hw_id") == "2\n");
  CHECK(regs(b) == regs(a));
  // The new generation records the dropped thread.
  CHECK((*j)->generation() == 2);
  // New groups take free ids, not restored ones.
  REQUIRE(sb.mkdir("/g4") == 0);
  CHECK(sb.cat("/g4/ctrl_hw_id") == "3\n");
}

TEST_CASE("a state that fails half-way leaves a fresh tree and fresh registers", "[restore]") {
  TempDir dir;
  SimFixture a("intel-2s");
  build_state(a);
  // Damage the second group (a CLOSID beyond the pool) behind a valid
  // checksum: the restore fails after the first group was built.
  nlohmann::json doc = nlohmann::json::parse(a.fs->save_state_json());
  auto& groups = doc["groups"];
  REQUIRE(groups.size() >= 3);
  groups[2]["closid"] = 999;
  {
    auto j = StateJournal::open(dir.path);
    REQUIRE(j.ok());
    REQUIRE((*j)->commit(make_journal_body("intel-2s", doc.dump())).ok());
  }
  SimFixture fresh("intel-2s");
  SimFixture b("intel-2s");
  auto j = StateJournal::open_and_restore(dir.path, "intel-2s", *b.fs);
  REQUIRE(j.ok());
  CHECK((*j)->outcome() == StateJournal::Outcome::kRejected);
  CHECK(b.sh->ls("/") == fresh.sh->ls("/"));
  CHECK(b.sh->cat("/schemata") == fresh.sh->cat("/schemata"));
  CHECK(regs(b) == regs(fresh));
  CHECK(std::filesystem::exists(dir.path + "/state.json.rejected"));
}

}  // namespace
}  // namespace resctrlfs::daemon
