// Tests of restoring the model from the journal over the simulated
// machine: a committed state comes back on a fresh daemon (new machine,
// registers at reset) with the same groups, CLOSIDs/RMIDs, values, CPUs
// and live threads, and the new machine's registers equal the old one's; a
// document that fails half-way leaves the fresh tree and fresh registers.
// The append-only log: the deltas fs/ reports, replayed onto the snapshot,
// give the live document after every kind of command; a command appends
// the same few bytes whatever the size of the model; compaction, and a
// crash between its steps, lose nothing.
#include <sys/stat.h>
#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "daemon/journal.h"
#include "fs/state_replay.h"
#include "tests/fs/harness.h"
#include "tests/temp_files.h"

namespace resctrlfs::daemon {
namespace {

using fs::testing::Shell;
using fs::testing::SimFixture;

// A temporary directory of this file's tests (tests/temp_files.h).
struct TempDir : test::TempDir {
  TempDir() : test::TempDir("restore-test") {}
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

// The document with groups and MON groups in name order: a replay appends
// a re-made or moved group where fs/ may keep it elsewhere, and the order
// means nothing to restore_state_json().
nlohmann::json canonical(const std::string& text) {
  nlohmann::json j = nlohmann::json::parse(text);
  auto by_name = [](const nlohmann::json& a, const nlohmann::json& b) {
    return a["name"].get<std::string>() < b["name"].get<std::string>();
  };
  for (auto& g : j["groups"]) {
    if (g.contains("mon_groups"))
      std::sort(g["mon_groups"].begin(), g["mon_groups"].end(), by_name);
  }
  std::sort(j["groups"].begin(), j["groups"].end(), by_name);
  return j;
}

Result<fs::Ino> ino_of(SimFixture& f, const std::string& path) { return f.sh->resolve(path); }

TEST_CASE("deltas replayed onto the snapshot equal the live state after every command",
          "[restore]") {
  SimFixture a("intel-2s", fs::MountOptions{.debug = true});
  for (pid_t t = 100; t < 110; ++t) a.tasks.add(t);
  Shell& sh = *a.sh;
  auto replay = std::make_unique<fs::StateReplay>();
  REQUIRE(replay->start(a.fs->take_state_snapshot_json()).ok());
  int snapshots = 0, deltas = 0;
  auto check = [&](const std::string& what) {
    INFO(what);
    std::optional<std::string> d = a.fs->take_state_delta_json();
    if (!d) {
      ++snapshots;
      replay = std::make_unique<fs::StateReplay>();
      REQUIRE(replay->start(a.fs->take_state_snapshot_json()).ok());
    } else if (!d->empty()) {
      ++deltas;
      Result<void> r = replay->apply(*d);
      INFO(*d);
      REQUIRE(r.ok());
    }
    CHECK(canonical(replay->finish()) == canonical(a.fs->save_state_json()));
  };
  REQUIRE(sh.mkdir("/g1") == 0);
  check("mkdir g1");
  REQUIRE(sh.mkdir("/g2") == 0);
  check("mkdir g2");
  REQUIRE(sh.echo("/g1/schemata", "L3:0=f;1=f0\nMB:0=30;1=50") == 0);
  check("schemata");
  REQUIRE(sh.echo("/schemata", "L3:0=ff;1=ff") == 0);
  check("root schemata");
  REQUIRE(sh.echo("/g2/mode", "exclusive") != -1);
  check("mode");
  REQUIRE(sh.mkdir("/g1/mon_groups/m1") == 0);
  check("mkdir MON");
  REQUIRE(sh.mkdir("/mon_groups/r1") == 0);
  check("mkdir MON under the root");
  REQUIRE(sh.echo("/g1/tasks", "100") == 0);
  REQUIRE(sh.echo("/g1/tasks", "101") == 0);
  check("tasks");
  REQUIRE(sh.echo("/g1/mon_groups/m1/tasks", "101") == 0);
  REQUIRE(sh.echo("/mon_groups/r1/tasks", "102") == 0);
  check("MON tasks");
  REQUIRE(sh.echo("/g2/tasks", "103,104,bad") != 0);  // 103 and 104 moved before the error
  check("failed tasks write");
  a.tasks.add(200);
  a.fs->on_fork(101, 200);
  check("fork");
  a.fs->on_exit(100);
  a.tasks.remove(100);
  check("exit");
  a.tasks.remove(103);
  (void)sh.cat("/g2/tasks");  // forgets the thread that died without an event
  check("dead thread forgotten by a read");
  REQUIRE(sh.rmdir("/g1/mon_groups/m1") == 0);
  check("rmdir MON");
  REQUIRE(sh.mkdir("/g1/mon_groups/m1") == 0);
  REQUIRE(sh.mkdir("/g1/mon_groups/m2") == 0);
  check("mkdir MON again");
  REQUIRE(sh.mv("/g1/mon_groups/m1", "/g2/mon_groups/m9") == 0);
  check("rename MON to another parent");
  REQUIRE(sh.mv("/g2/mon_groups/m9", "/g2/mon_groups/m8") == 0);
  check("rename MON in place");
  Result<fs::Ino> dir = ino_of(a, "/g2");
  REQUIRE(dir.ok());
  const uint32_t mode = 0750;
  const uid_t uid = 1234;
  REQUIRE(a.fs->setattr(*dir, &mode, &uid, nullptr).ok());
  check("chmod/chown of a group");
  // Several commands in one delta (as when a commit failed): made and
  // removed; removed and made again with the same name.
  REQUIRE(sh.mkdir("/g3") == 0);
  REQUIRE(sh.rmdir("/g3") == 0);
  REQUIRE(sh.rmdir("/g1") == 0);
  REQUIRE(sh.mkdir("/g1") == 0);
  REQUIRE(sh.mkdir("/g1/mon_groups/m2") == 0);
  REQUIRE(sh.echo("/g1/schemata", "L3:0=3;1=3") == 0);
  check("remove and make again in one delta");
  CHECK(snapshots == 0);
  // cpus writes are deltas of every group whose CPUs they changed.
  REQUIRE(sh.echo("/g2/cpus_list", "1-2") == 0);
  check("cpus");
  REQUIRE(sh.echo("/g1/cpus_list", "3-5") == 0);
  REQUIRE(sh.mkdir("/g1/mon_groups/m3") == 0);
  REQUIRE(sh.echo("/g1/mon_groups/m2/cpus_list", "3-4") == 0);
  check("cpus of a MON group");
  REQUIRE(sh.echo("/g1/mon_groups/m3/cpus_list", "4") == 0);
  check("cpus taken from a sibling MON group");
  REQUIRE(sh.echo("/g2/cpus_list", "1-3") == 0);
  check("cpus taken from another CTRL_MON group and its MON group");
  REQUIRE(sh.echo("/g1/cpus_list", "4") == 0);
  check("cpus given back to the default group, MON groups cleared");
  REQUIRE(sh.echo("/cpus_list", "0-7") == 0);
  check("the default group takes every CPU back");
  REQUIRE(sh.echo("/g2/cpus_list", "1-2") == 0);
  check("cpus again");
  CHECK(snapshots == 0);
  // Changes that are not deltas: info settings.
  REQUIRE(sh.echo("/info/L3_MON/max_threshold_occupancy", "131072") == 0);
  check("info setting");
  REQUIRE(sh.echo("/g2/tasks", "104") == 0);
  check("tasks after a snapshot");
  REQUIRE(a.fs->cpu_offline(2).ok());  // hotplug: CPUs of groups change
  REQUIRE(a.backend.sim->set_cpu_online(2, false).ok());
  check("CPU offline");
  REQUIRE(a.backend.sim->set_cpu_online(2, true).ok());
  REQUIRE(a.fs->cpu_online(2).ok());
  check("CPU online");
  REQUIRE(sh.echo("/g1/schemata", "L3:0=7;1=7") == 0);
  check("schemata after hotplug");
  // The root takes back the CPUs of a removed group, and only then
  // changes.
  REQUIRE(sh.mkdir("/g4") == 0);
  REQUIRE(sh.rmdir("/g4") == 0);
  check("rmdir of a group without CPUs");
  REQUIRE(sh.rmdir("/g2") == 0);
  check("rmdir of a group with CPUs");
  CHECK(snapshots == 3);
  CHECK(deltas >= 15);
  // And the replayed document restores to the same tree and registers.
  SimFixture b("intel-2s", fs::MountOptions{.debug = true});
  // (Held in a variable: a range over value() of the temporary Result
  // would read freed memory.)
  const std::vector<pid_t> live = a.tasks.all_threads().value();
  for (pid_t t : live) b.tasks.add(t);
  REQUIRE(b.fs->restore_state_json(replay->finish()).ok());
  CHECK(canonical(b.fs->save_state_json()) == canonical(a.fs->save_state_json()));
  CHECK(regs(b) == regs(a));
}

uint64_t file_size(const std::string& p) {
  std::error_code ec;
  uint64_t n = std::filesystem::file_size(p, ec);
  return ec ? 0 : n;
}

// Bytes of records in a log file (a mapped log, on tmpfs, is zeros after
// its last record).
uint64_t log_used(const std::string& p) {
  const std::string data = test::read_file(p);
  const size_t last = data.find_last_not_of('\0');
  return last == std::string::npos ? 0 : last + 1;
}

TEST_CASE("a command appends the same few bytes whatever the size of the model", "[restore]") {
  std::map<int, std::vector<uint64_t>> appended;  // model size -> bytes per command
  std::map<int, uint64_t> snapshot_bytes;
  for (int n : {0, 200}) {
    TempDir dir;
    SimFixture a("intel-2s");
    Shell& sh = *a.sh;
    REQUIRE(sh.mkdir("/g") == 0);
    for (int i = 0; i < n; ++i) {
      REQUIRE(sh.mkdir("/mon_groups/m" + std::to_string(i)) == 0);
      a.tasks.add(1000 + i);
      REQUIRE(sh.echo("/mon_groups/m" + std::to_string(i) + "/tasks", std::to_string(1000 + i)) ==
              0);
    }
    a.tasks.add(100);
    auto j = StateJournal::open(dir.path);
    REQUIRE(j.ok());
    REQUIRE((*j)->commit_state("intel-2s", *a.fs).ok());  // the first commit is a snapshot
    snapshot_bytes[n] = file_size(dir.path + "/" + kJournalFile);
    const std::string log = dir.path + "/" + kJournalLogFile;
    REQUIRE((*j)->log_bytes() == 0);
    auto step = [&](int rc) {
      REQUIRE(rc == 0);
      const uint64_t before = (*j)->log_bytes();
      REQUIRE((*j)->commit_state("intel-2s", *a.fs).ok());
      appended[n].push_back((*j)->log_bytes() - before);
    };
    step(sh.echo("/g/schemata", "L3:0=f;1=f"));
    step(sh.echo("/schemata", "L3:0=7ff;1=3ff"));
    step(sh.echo("/g/tasks", "100"));
    step(sh.mkdir("/g/mon_groups/x"));
    step(sh.rmdir("/g/mon_groups/x"));
    CHECK((*j)->snapshots() == 1);
  }
  INFO("snapshot bytes: " << snapshot_bytes[0] << " and " << snapshot_bytes[200]);
  CHECK(snapshot_bytes[200] > 20 * snapshot_bytes[0] / 2);
  // Identical commands, records of the same size (give or take the digits
  // of an RMID, a node base and the next one): nothing of the model's size.
  REQUIRE(appended[0].size() == appended[200].size());
  for (size_t i = 0; i < appended[0].size(); ++i) {
    CHECK(appended[200][i] <= appended[0][i] + 8);
    CHECK(appended[0][i] <= appended[200][i] + 8);
  }
  for (uint64_t b : appended[200]) {
    CHECK(b > 0);
    CHECK(b < 400);
  }
  CHECK(appended[200][2] < 120);  // one thread moved
}

// State of a fixture built through a journal that commits after every
// command; returns the log's bytes before the last compaction.
TEST_CASE("compaction folds the log into a snapshot, a crash between its steps loses nothing",
          "[restore]") {
  TempDir dir;
  SimFixture a("intel-2s", fs::MountOptions{.debug = true});
  auto j = StateJournal::open(dir.path);
  REQUIRE(j.ok());
  StateJournal& jr = **j;
  auto run = [&](int rc) {
    INFO(a.sh->cat("/info/last_cmd_status"));
    REQUIRE(rc == 0);
    REQUIRE(jr.commit_state("intel-2s", *a.fs).ok());
  };
  for (pid_t t : {100, 101, 102}) a.tasks.add(t);
  REQUIRE(jr.commit_state("intel-2s", *a.fs).ok());
  const uint64_t gen0 = jr.generation();
  run(a.sh->mkdir("/g1"));
  run(a.sh->echo("/g1/schemata", "L3:0=f;1=f0"));
  run(a.sh->mkdir("/g1/mon_groups/m"));
  run(a.sh->echo("/g1/tasks", "100,101"));
  run(a.sh->echo("/g1/mon_groups/m/tasks", "101"));
  const std::string log_path = dir.path + "/" + kJournalLogFile;
  const std::string snap_path = dir.path + "/" + kJournalFile;
  CHECK(jr.generation() == gen0 + 5);
  CHECK(jr.snapshots() == 1);
  const std::string log = test::read_file(log_path);
  const std::string old_snapshot = test::read_file(snap_path);
  REQUIRE(!log.empty());

  auto restored_equals_a = [&](const char* what) {
    INFO(what);
    SimFixture b("intel-2s", fs::MountOptions{.debug = true});
    for (pid_t t : {100, 101, 102}) b.tasks.add(t);
    auto jb = StateJournal::open_and_restore(dir.path, "intel-2s", *b.fs);
    REQUIRE(jb.ok());
    CHECK((*jb)->outcome() == StateJournal::Outcome::kRestored);
    CHECK(canonical(b.fs->save_state_json()) == canonical(a.fs->save_state_json()));
    CHECK(regs(b) == regs(a));
    // Restoring compacts at once.
    CHECK(log_used(log_path) == 0);
    CHECK((*jb)->generation() > jr.generation());
  };

  SECTION("the snapshot and the log") { restored_equals_a("snapshot + log"); }
  SECTION("a crash while the new snapshot was written") {
    test::write_file(dir.path + "/" + kJournalTmpFile, "{\"format\":\"resctrlfs-state\",\"gen");
    restored_equals_a("temporary file left");
  }
  SECTION("compaction") {
    REQUIRE(jr.compact("intel-2s", *a.fs).ok());
    CHECK(jr.snapshots() == 2);
    CHECK(log_used(log_path) == 0);
    CHECK(jr.generation() == gen0 + 6);
    REQUIRE(jr.compact("intel-2s", *a.fs).ok());  // nothing new: nothing written
    CHECK(jr.snapshots() == 2);
    SECTION("then a clean restore") { restored_equals_a("compacted"); }
    SECTION("a crash between the snapshot's rename and the log's truncation") {
      test::write_file(log_path, log);
      restored_equals_a("stale records left in the log");
    }
    SECTION("more records after the compaction") {
      run(a.sh->echo("/g1/tasks", "102"));
      CHECK(log_used(log_path) > 0);
      restored_equals_a("records after a compaction");
    }
  }
  SECTION("a log that does not follow its snapshot is refused") {
    // The old log behind a snapshot two generations later than it expects.
    REQUIRE(jr.compact("intel-2s", *a.fs).ok());
    run(a.sh->echo("/g1/tasks", "102"));
    const std::string newer = test::read_file(log_path);
    test::write_file(snap_path, old_snapshot);
    test::write_file(log_path, newer);
    SimFixture b("intel-2s", fs::MountOptions{.debug = true});
    auto jb = StateJournal::open_and_restore(dir.path, "intel-2s", *b.fs);
    REQUIRE(jb.ok());
    CHECK((*jb)->outcome() == StateJournal::Outcome::kRejected);
    CHECK((*jb)->rejected_reason().find("first record") != std::string::npos);
    CHECK(std::filesystem::exists(log_path + kJournalRejectedSuffix));
  }
}

TEST_CASE("the log is compacted past its size limit", "[restore]") {
  TempDir dir;
  SimFixture a("intel-2s");
  auto j = StateJournal::open(dir.path);
  REQUIRE(j.ok());
  (*j)->set_fsync(false);
  REQUIRE(a.sh->mkdir("/g") == 0);
  a.tasks.add(100);
  const std::string log_path = dir.path + "/" + kJournalLogFile;
  uint64_t largest = 0;
  for (int i = 0; i < 30000 && (*j)->snapshots() < 3; ++i) {
    REQUIRE(a.sh->echo(i % 2 == 0 ? "/g/tasks" : "/tasks", "100") == 0);
    REQUIRE((*j)->commit_state("intel-2s", *a.fs).ok());
    largest = std::max(largest, (*j)->log_bytes());
  }
  CHECK((*j)->snapshots() == 3);
  CHECK(largest >= kMaxLogBytes);
  CHECK(largest < kMaxLogBytes + 200);
}

// Every path of the tree and its inode number, through lookup and readdir
// as the kernel walks it.
std::map<std::string, fs::Ino> inode_map(fs::Filesystem& f) {
  std::map<std::string, fs::Ino> out;
  std::vector<std::pair<std::string, fs::Ino>> todo = {{"", fs::kRootIno}};
  out["/"] = fs::kRootIno;
  while (!todo.empty()) {
    auto [path, ino] = todo.back();
    todo.pop_back();
    auto entries = f.readdir(ino);
    REQUIRE(entries.ok());
    for (const fs::DirEntry& e : *entries) {
      auto a = f.lookup(ino, e.name);
      REQUIRE(a.ok());
      CHECK(a->ino == e.attr.ino);
      const std::string p = path + "/" + e.name;
      out[p] = a->ino;
      if (S_ISDIR(a->mode)) todo.emplace_back(p, a->ino);
    }
  }
  return out;
}

// A daemon that takes a mount over (daemon/takeover.h) restores the
// journal and must give every file the node id the kernel already holds:
// groups made and removed in another order than the restore makes them,
// a MON group renamed to another parent, a group made again under an old
// name (new numbers: the kernel may still hold the old ones), through the
// snapshot and through log records replayed onto it.
TEST_CASE("node ids are the same after a restore of the same state", "[restore][takeover]") {
  for (const bool compact : {false, true}) {
    INFO("compacted " << compact);
    TempDir dir;
    SimFixture a("intel-2s", fs::MountOptions{.debug = true});
    for (pid_t t : {100, 101, 102}) a.tasks.add(t);
    Shell& sh = *a.sh;
    auto j = StateJournal::open(dir.path);
    REQUIRE(j.ok());
    auto step = [&](int rc) {
      REQUIRE(rc == 0);
      REQUIRE((*j)->commit_state("intel-2s", *a.fs).ok());
    };
    step(sh.mkdir("/a"));
    step(sh.mkdir("/b"));
    step(sh.mkdir("/c"));
    step(sh.mkdir("/b/mon_groups/m1"));
    step(sh.mkdir("/b/mon_groups/m2"));
    step(sh.mkdir("/mon_groups/r"));
    if (compact) REQUIRE((*j)->compact("intel-2s", *a.fs).ok());
    const fs::Ino old_a = *sh.resolve("/a/schemata");
    step(sh.rmdir("/a"));
    step(sh.rmdir("/b/mon_groups/m1"));
    step(sh.mkdir("/a"));  // the old name, new numbers
    step(sh.mv("/b/mon_groups/m2", "/c/mon_groups/m2"));
    step(sh.mkdir("/d"));
    step(sh.rmdir("/c"));
    step(sh.mkdir("/c"));
    step(sh.echo("/b/tasks", "101"));
    step(sh.echo("/info/L3_MON/max_threshold_occupancy", "131072"));
    CHECK(*sh.resolve("/a/schemata") != old_a);
    const std::map<std::string, fs::Ino> before = inode_map(*a.fs);
    REQUIRE(before.size() > 100);
    (*j).reset();

    SimFixture b("intel-2s", fs::MountOptions{.debug = true});
    for (pid_t t : {100, 101, 102}) b.tasks.add(t);
    auto jb = StateJournal::open_and_restore(dir.path, "intel-2s", *b.fs);
    REQUIRE(jb.ok());
    REQUIRE((*jb)->outcome() == StateJournal::Outcome::kRestored);
    const std::map<std::string, fs::Ino> after = inode_map(*b.fs);
    CHECK(after == before);
    // The next group's numbers are new to both: no number the kernel may
    // still hold for a removed group is given again.
    REQUIRE(a.sh->mkdir("/e") == 0);
    REQUIRE(b.sh->mkdir("/e") == 0);
    CHECK(*a.sh->resolve("/e/schemata") == *b.sh->resolve("/e/schemata"));
    CHECK(*b.sh->resolve("/e/schemata") != old_a);
    std::set<fs::Ino> seen;
    for (const auto& [p, ino] : after) CHECK(seen.insert(ino).second);
  }
}

}  // namespace
}  // namespace resctrlfs::daemon
