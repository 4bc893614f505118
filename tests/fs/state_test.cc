// save_state_json()/restore_state_json(): a restored model on a fresh
// machine shows the same tree, values, CPUs and memberships, and programs
// the hardware accordingly; bad documents are refused.
#include <catch2/catch.hpp>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "tests/fs/harness.h"

namespace resctrlfs::fs::testing {

// A CTRL_MON group's MON groups are a list whose members know their place
// in it (so an rmdir does not search the siblings): a move to another
// parent and back, rmdirs in the middle and of the parent keep that place
// right, and the saved document lists them in the order they joined.
TEST_CASE("state: MON groups keep their order through moves and rmdirs", "[state]") {
  SimFixture a("intel-2s");
  Shell& sa = *a.sh;
  REQUIRE(sa.mkdir("/p0") == 0);
  REQUIRE(sa.mkdir("/p1") == 0);
  for (const char* m : {"a", "b", "c", "d"})
    REQUIRE(sa.mkdir(std::string("/p0/mon_groups/") + m) == 0);
  REQUIRE(sa.mv("/p0/mon_groups/b", "/p1/mon_groups/b") == 0);
  REQUIRE(sa.rmdir("/p0/mon_groups/c") == 0);
  REQUIRE(sa.mkdir("/p0/mon_groups/e") == 0);
  REQUIRE(sa.mkdir("/p1/mon_groups/f") == 0);
  REQUIRE(sa.mv("/p1/mon_groups/b", "/p0/mon_groups/b2") == 0);
  auto order = [](const std::string& doc, std::vector<std::string> names) {
    size_t at = 0;
    for (const std::string& n : names) {
      const size_t found = doc.find("\"name\":\"" + n + "\"", at);
      if (found == std::string::npos) return false;
      at = found;
    }
    return true;
  };
  const std::string saved = a.fs->save_state_json();
  CHECK(order(saved, {"p0", "a", "d", "e", "b2", "p1", "f"}));
  // The restored model holds the same order, and its list members know
  // their places too.
  SimFixture b("intel-2s");
  REQUIRE(b.fs->restore_state_json(saved).ok());
  CHECK(b.fs->save_state_json() == saved);
  for (Shell* sh : {&sa, b.sh.get()}) {
    REQUIRE(sh->rmdir("/p0/mon_groups/d") == 0);
    REQUIRE(sh->rmdir("/p0/mon_groups/b2") == 0);
    REQUIRE(sh->mkdir("/p0/mon_groups/g") == 0);
  }
  const std::string after = a.fs->save_state_json();
  CHECK(order(after, {"p0", "a", "e", "g", "p1", "f"}));
  CHECK(after.find("\"name\":\"d\"") == std::string::npos);
  // (b's new MON group may get another RMID: the restored pool does not
  // hold a's limbo.)
  CHECK(order(b.fs->save_state_json(), {"p0", "a", "e", "g", "p1", "f"}));
  // The parent's rmdir takes its MON groups with it.
  REQUIRE(sa.rmdir("/p0") == 0);
  CHECK(sa.ls("/p1/mon_groups") == std::set<std::string>{"f"});
  CHECK(a.fs->save_state_json().find("\"name\":\"e\"") == std::string::npos);
  REQUIRE(sa.mkdir("/p0") == 0);
  REQUIRE(sa.mkdir("/p0/mon_groups/a") == 0);
  CHECK(order(a.fs->save_state_json(), {"p1", "f", "p0", "a"}));
}

TEST_CASE("state: save and restore round trip", "[state]") {
  SimFixture a("intel-2s");
  Shell& sa = *a.sh;
  a.tasks.add(10);
  a.tasks.add(11);
  REQUIRE(sa.mkdir("/p0", 0750) == 0);
  REQUIRE(sa.mkdir("/p0/mon_groups/m") == 0);
  REQUIRE(sa.mkdir("/mon_groups/r") == 0);
  CHECK(sa.echo("/schemata", "L3:0=7f0;1=7f0") == 0);
  CHECK(sa.echo("/p0/schemata", "L3:0=f;1=3\nMB:1=50") == 0);
  CHECK(sa.echo("/p0/mode", "exclusive") == 0);
  REQUIRE(sa.mkdir("/p1") == 0);
  CHECK(sa.echo("/p0/cpus_list", "1-3") == 0);
  CHECK(sa.echo("/p0/mon_groups/m/cpus_list", "2") == 0);
  CHECK(sa.echo("/p0/tasks", "10") == 0);
  CHECK(sa.echo("/p0/mon_groups/m/tasks", "10") == 0);
  CHECK(sa.echo("/mon_groups/r/tasks", "11") == 0);
  CHECK(sa.echo("/info/L3_MON/max_threshold_occupancy", "131072") == 0);
  const std::string saved = a.fs->save_state_json();

  SimFixture b("intel-2s");
  Shell& sb = *b.sh;
  b.tasks.add(10);
  b.tasks.add(11);
  REQUIRE(b.fs->restore_state_json(saved).ok());
  for (const char* f :
       {"/schemata", "/p0/schemata", "/p1/schemata", "/p0/mode", "/p0/cpus_list", "/cpus_list",
        "/p0/mon_groups/m/cpus_list", "/p0/tasks", "/p0/mon_groups/m/tasks", "/mon_groups/r/tasks",
        "/tasks", "/info/L3/bit_usage", "/info/L3_MON/max_threshold_occupancy"}) {
    INFO(f);
    CHECK(sb.cat(f) == sa.cat(f));
  }
  CHECK((sb.stat("/p0").mode & 07777) == 0750);
  CHECK(b.fs->save_state_json() == saved);
  // The restored pools continue where the saved ones were.
  REQUIRE(sb.mkdir("/p2") == 0);
  CHECK(sb.cat("/p2/schemata") == "    MB:0=100;1=100\n    L3:0=7f0;1=7fc\n");
  // Hardware: CPU 2 runs with p0's CLOSID and m's RMID.
  bool seen = false;
  for (const hw::RegisterValue& r : b.backend.sim->dump_registers()) {
    if (r.msr == 0xc8f && r.cpu == 2) {
      seen = true;
      CHECK((r.value >> 32) == 1);
    }
  }
  CHECK(seen);
}

TEST_CASE("state: bad documents are refused", "[state]") {
  SimFixture f("intel-2s");
  CHECK(f.fs->restore_state_json("not json").error().code == EINVAL);
  CHECK(f.fs->restore_state_json(R"({"version": 2})").error().code == EINVAL);
  CHECK(f.fs->restore_state_json(
                R"({"version": 1, "groups": [{"name": "x", "closid": 99, "rmid": 1}]})")
            .error()
            .code == EINVAL);
  // Domain keys that are not numbers (std::stoi threw here, and the
  // exception took the daemon down).
  for (const char* key : {";", "", "1x", "-1", "99999999999"}) {
    INFO("domain key \"" << key << "\"");
    SimFixture g("intel-2s");
    const std::string doc = std::string(R"({"version": 1, "groups": [{"name": "", "closid": 0,)") +
                            R"("rmid": 0, "schemata": {"L3": {")" + key + R"(": 255}}}]})";
    Result<void> r = g.fs->restore_state_json(doc);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == EINVAL);
    CHECK(r.error().message.find("bad domain key") != std::string::npos);
  }
  REQUIRE(f.sh->mkdir("/p0") == 0);
  CHECK(f.fs->restore_state_json(R"({"version": 1})").error().code == EINVAL);  // not fresh
}

// json::value() once threw on a key of another type before the try, and
// the exception aborted the daemon (fuzz_fs_files found it). Every value of
// the document is outside input: a wrong type, a missing key, an
// out-of-range number or deep nesting is an EINVAL naming where, never an
// exception, and the tree stays usable.
TEST_CASE("state: documents with wrong types, ranges or nesting are refused", "[state]") {
  std::string deep(100000, '[');
  const std::string group = R"("groups": [{"name": "", "closid": 0, "rmid": 0}, )";
  const std::string docs[] = {
      "\x0c{\"version\":\"clos:\"}",  // the fuzzer's input
      R"({"version":"clos:"})",
      R"({"version": 1.5})",
      R"({"version": 1, "settings": []})",
      R"({"version": 1, "settings": {"max_threshold_occupancy": "x"}})",
      R"({"version": 1, "settings": {"max_threshold_occupancy": -1}})",
      R"({"version": 1, "settings": {"max_threshold_occupancy": 1e300}})",
      R"({"version": 1, "settings": {"mbm_assign_mode": 7}})",
      R"({"version": 1, "settings": {"event_filter": {"mbm_total_bytes": "all"}}})",
      R"({"version": 1, "groups": {}})",
      R"({"version": 1, "groups": [7]})",
      R"({"version": 1, "groups": [{"name": 7}]})",
      R"({"version": 1, "groups": [{"name": "g"}]})",  // no closid
      R"({"version": 1, "groups": [{"name": "g", "closid": "1"}]})",
      R"({"version": 1, "groups": [{"name": "g", "closid": -1}]})",
      R"({"version": 1, "groups": [{"name": "g", "closid": 4294967296}]})",
      R"({"version": 1, "groups": [{"name": "g", "closid": 1, "rmid": 99999999999999999999}]})",
      R"({"version": 1, "groups": [{"name": "g", "closid": 1, "rmid": 1, "cpus": 3}]})",
      R"({"version": 1, "groups": [{"name": "g", "closid": 1, "rmid": 1, "dir_mode": 65536}]})",
      R"({"version": 1, "groups": [{"name": "g", "closid": 1, "rmid": 1, "uid": -5}]})",
      R"({"version": 1, "groups": [{"name": "", "closid": 0, "schemata": []}]})",
      R"({"version": 1, "groups": [{"name": "", "closid": 0, "schemata": {"L3": {"0": "f"}}}]})",
      R"({"version": 1, "groups": [{"name": "", "closid": 0, "schemata": {"L3": {"0": -1}}}]})",
      R"({"version": 1, "groups": [{"name": "", "closid": 0, "assigned": [[0]]}]})",
      R"({"version": 1, "groups": [{"name": "", "closid": 0, "assigned": [["0", "x"]]}]})",
      R"({"version": 1, "groups": [{"name": "", "closid": 0, "mon_groups": [{"name": "m"}]}]})",
      R"({"version": 1, "groups": [{"name": "", "closid": 0, "mon_groups": {"name": "m"}}]})",
      R"({"version": 1, "io_alloc": []})",
      R"({"version": 1, "io_alloc": {"L3": {"0": true}}})",
      R"({"version": 1, "threads": [[1, 2]]})",
      R"({"version": 1, "threads": [["1", 0, 0]]})",
      R"({"version": 1, "threads": [[-1, 0, 0]]})",
      R"({"version": 1, "threads": [[1, 0, 18446744073709551615]]})",
      R"({"version": 1, "threads": {}})",
      "{\"version\": 1, " + group + "{\"name\": \"g\", \"closid\": 1, \"x\": " + deep + "}]}",
      deep,
      "{\"version\": 1, \"groups\": [{\"name\": \"\xff\", \"closid\": 1}]}",  // not UTF-8
      R"({"version": 1, "groups": [{"name": "g", "closid": 1, "rmid": 1})",   // truncated
  };
  for (const std::string& doc : docs) {
    INFO(doc.substr(0, 200));
    SimFixture f("intel-2s");
    Result<void> r = Ok();
    REQUIRE_NOTHROW(r = f.fs->restore_state_json(doc));
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == EINVAL);
    CHECK(r.error().message.rfind("state: ", 0) == 0);
  }
  // The message names the value.
  SimFixture f("intel-2s");
  Result<void> r = f.fs->restore_state_json(R"({"version": 1, "groups": [{"name": "", "closid": 0},
      {"name": "g", "closid": "1"}]})");
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message ==
        "state: $.groups[1].closid: must be an integer in 0..4294967295, not a string");
}

// A restore is all or nothing: a document that fails in its last step (the
// threads, after settings, groups, controls and CPUs were applied) leaves
// the fresh model as it was, in the tree, the saved state and the
// registers, and a good document can be restored after it.
TEST_CASE("state: a restore failing in its last step leaves the fresh model intact", "[state]") {
  SimFixture a("intel-2s");
  a.tasks.add(10);
  REQUIRE(a.sh->mkdir("/p0", 0750) == 0);
  REQUIRE(a.sh->mkdir("/p0/mon_groups/m") == 0);
  CHECK(a.sh->echo("/p0/schemata", "L3:0=f;1=3\nMB:1=50") == 0);
  CHECK(a.sh->echo("/p0/cpus_list", "1-3") == 0);
  CHECK(a.sh->echo("/p0/tasks", "10") == 0);
  CHECK(a.sh->echo("/info/L3_MON/max_threshold_occupancy", "131072") == 0);
  const std::string good = a.fs->save_state_json();
  REQUIRE(good.back() == '}');
  // The same document with a thread entry that is not [tid, closid, rmid].
  const std::string bad = good.substr(0, good.size() - 1) + R"(,"threads":[[10, 1]]})";

  SimFixture b("intel-2s");
  Shell& sb = *b.sh;
  b.tasks.add(10);
  const std::string fresh = b.fs->save_state_json();
  const std::vector<hw::RegisterValue> regs = b.backend.sim->dump_registers();
  const std::string files[] = {"/schemata",
                               "/cpus_list",
                               "/tasks",
                               "/info/L3/bit_usage",
                               "/info/L3_MON/max_threshold_occupancy",
                               "/info/last_cmd_status"};
  std::map<std::string, std::string> before;
  for (const std::string& f : files) before[f] = sb.cat(f);
  const auto root_entries = sb.ls("/");

  Result<void> r = b.fs->restore_state_json(bad);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == EINVAL);
  CHECK(r.error().message.find("threads") != std::string::npos);
  CHECK(sb.ls("/") == root_entries);
  CHECK(sb.ls("/").count("p0") == 0);
  for (const std::string& f : files) {
    INFO(f);
    CHECK(sb.cat(f) == before[f]);
  }
  CHECK(b.fs->save_state_json() == fresh);
  const std::vector<hw::RegisterValue> after = b.backend.sim->dump_registers();
  REQUIRE(after.size() == regs.size());
  for (size_t i = 0; i < regs.size(); ++i) {
    INFO("cpu " << regs[i].cpu << " msr 0x" << std::hex << regs[i].msr);
    CHECK(after[i].msr == regs[i].msr);
    CHECK(after[i].value == regs[i].value);
  }
  // Still fresh: the good document restores, and the pools are whole.
  REQUIRE(b.fs->restore_state_json(good).ok());
  CHECK(sb.cat("/p0/schemata") == a.sh->cat("/p0/schemata"));
  CHECK(sb.cat("/p0/tasks") == "10\n");
  CHECK(b.fs->save_state_json() == good);
}

}  // namespace resctrlfs::fs::testing
