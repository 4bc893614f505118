// TreeReader: held descriptors, rescans for new and removed groups, and the
// layout it derives from the default group.
#include <dirent.h>
#include <sys/resource.h>

#include <catch2/catch.hpp>

#include "exporter/tree.h"
#include "tests/exporter/tree_fixture.h"

namespace resctrlfs::exporter {
namespace {

using testing::TempTree;

size_t open_fds() {
  size_t n = 0;
  DIR* d = ::opendir("/proc/self/fd");
  while (::readdir(d)) ++n;
  ::closedir(d);
  return n;
}

const Group* find_group(const Snapshot& s, const std::string& name, const std::string& mon = "") {
  for (const Group& g : s.groups) {
    if (g.name == name && g.mon_group == mon) return &g;
  }
  return nullptr;
}

TEST_CASE("files are opened once and read again through the held descriptors", "[tree]") {
  TempTree t;
  t.intel_2s({"g1"});
  TreeReader r(t.root());
  Snapshot s = r.read();
  REQUIRE(s.ok);
  const auto held = r.held_files();
  CHECK(std::count(held.begin(), held.end(), "g1/mon_data/mon_L3_01/mbm_local_bytes") == 1);
  CHECK(std::count(held.begin(), held.end(), "schemata") == 1);
  CHECK(std::count(held.begin(), held.end(), "info/L3/cbm_mask") == 1);
  // Never read: files whose read resets last_cmd_status, and unneeded ones.
  CHECK(std::count(held.begin(), held.end(), "info/last_cmd_status") == 0);
  CHECK(std::count(held.begin(), held.end(), "tasks") == 0);
  const size_t fds = open_fds();
  t.mon("g1/", 1, 0, 0, 4242);
  s = r.read();
  CHECK(open_fds() == fds);  // nothing opened again
  const Group* g = find_group(s, "g1");
  REQUIRE(g);
  bool seen = false;
  for (const MonRead& m : g->mon) {
    if (m.domain == "mon_L3_01" && m.event == "mbm_local_bytes") seen = m.u == 4242;
  }
  CHECK(seen);
  // Order: the default group, then each CTRL_MON group followed by its MON groups.
  REQUIRE(s.groups.size() == 2);
  CHECK(s.groups[0].name.empty());
  CHECK(s.groups[0].mode == "shareable");
  REQUIRE(s.groups[0].schemata.size() == 2);
  CHECK(s.groups[0].schemata[1].name == "L3");
}

TEST_CASE("new and removed groups are found on every pass", "[tree]") {
  TempTree t;
  t.intel_2s({"g1"});
  TreeReader r(t.root());
  (void)r.read();
  const size_t fds = open_fds();
  t.group("g2", "    MB:0=100;1=100\n    L3:0=1;1=1\n");
  t.mkdir("g2/mon_groups/m");
  t.mon("g2/mon_groups/m/", 0, 1, 2, 3);
  t.mon("g2/mon_groups/m/", 1, 1, 2, 3);
  Snapshot s = r.read();
  CHECK(find_group(s, "g2"));
  CHECK(find_group(s, "g2", "m"));
  CHECK(open_fds() > fds);
  t.remove("g2");
  s = r.read();
  CHECK_FALSE(find_group(s, "g2"));
  CHECK(open_fds() == fds);  // the removed group's descriptors are closed
  const auto held = r.held_files();
  CHECK(std::none_of(held.begin(), held.end(),
                     [](const std::string& p) { return p.rfind("g2/", 0) == 0; }));
}

TEST_CASE("a group re-created under the same name is read from its new files", "[tree]") {
  TempTree t;
  t.intel_2s({"g1"});
  t.mon("g1/", 0, 111, 0, 0);
  TreeReader r(t.root());
  (void)r.read();
  t.remove("g1");
  t.group("g1", "    MB:0=100;1=100\n    L3:0=1;1=1\n");
  t.mon("g1/", 0, 222, 0, 0);
  Snapshot s = r.read();
  const Group* g = find_group(s, "g1");
  REQUIRE(g);
  REQUIRE(!g->schemata.empty());
  CHECK(g->schemata[1].domains[0].second == "1");
  CHECK(g->mon[0].event == "llc_occupancy");
  CHECK(g->mon[0].u == 222);
}

TEST_CASE("domains come from the default group's mon_data on every pass", "[tree]") {
  TempTree t;
  t.intel_2s({"g1"});
  TreeReader r(t.root());
  Snapshot s = r.read();
  CHECK(find_group(s, "g1")->mon.size() == 6);
  // Domain 1 goes offline: its directories vanish from every group.
  t.remove("mon_data/mon_L3_01");
  t.remove("g1/mon_data/mon_L3_01");
  s = r.read();
  CHECK(find_group(s, "g1")->mon.size() == 3);
  CHECK(s.omitted.empty());
}

TEST_CASE("a monitor-only or control-only tree", "[tree]") {
  TempTree empty;  // an unmounted mount point
  Snapshot s = TreeReader(empty.root()).read();
  CHECK_FALSE(s.ok);
  CHECK(s.error.find("not a resctrl tree") != std::string::npos);

  TempTree t;
  t.write("info/L3_MON/num_rmids", "64\n");
  t.write("info/L3_MON/mon_features", "llc_occupancy\n");
  t.write("schemata", "");
  t.write("mode", "shareable\n");
  t.write("mon_data/mon_L3_00/llc_occupancy", "65536\n");
  t.mkdir("mon_groups/m1");
  t.write("mon_groups/m1/mon_data/mon_L3_00/llc_occupancy", "0\n");
  TreeReader r(t.root());
  s = r.read();
  REQUIRE(s.ok);
  CHECK(s.ctrl.empty());
  CHECK(s.groups.size() == 2);
  CHECK(s.groups[0].schemata.empty());
  CHECK(find_group(s, "", "m1")->mon.at(0).u == 0);

  TempTree c;
  c.write("info/L3/num_closids", "4\n");
  c.write("info/L3/cbm_mask", "ff\n");
  c.write("schemata", "L3:0=ff\n");
  c.write("mode", "shareable\n");
  TreeReader rc(c.root());
  s = rc.read();
  REQUIRE(s.groups.size() == 1);
  CHECK(s.groups[0].mon.empty());
}

TEST_CASE("check_resctrl_root: a missing path, a plain directory, a copy of a tree", "[tree]") {
  TempTree t;
  Result<void> r = check_resctrl_root(t.root() + "/nope");
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == ENOENT);
  CHECK(r.error().message.find("--root " + t.root() +
                               "/nope: No such file or directory: "
                               "point --root at a resctrl mount") == 0);
  r = check_resctrl_root(t.root());
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message.find("is not a resctrl tree (no info/last_cmd_status)") !=
        std::string::npos);
  // Every file a tree has, on a filesystem that is not resctrl's.
  t.intel_2s();
  r = check_resctrl_root(t.root());
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message.find("a filesystem of type 0x") != std::string::npos);
  t.write("file", "");
  r = check_resctrl_root(t.root() + "/file");
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message.find("is not a directory") != std::string::npos);
}

TEST_CASE("a tree that is not there, or goes away", "[tree]") {
  TreeReader missing("/nonexistent/resctrl");
  Snapshot s = missing.read();
  CHECK_FALSE(s.ok);
  CHECK(s.error.find("/nonexistent/resctrl") != std::string::npos);
  auto t = std::make_unique<TempTree>();
  t->intel_2s();
  TreeReader r(t->root());
  CHECK(r.read().ok);
  const std::string root = t->root();
  t.reset();
  s = r.read();
  CHECK_FALSE(s.ok);
  CHECK(r.held_files().empty());
}

// Lowers the soft RLIMIT_NOFILE for its lifetime.
class FdLimit {
 public:
  explicit FdLimit(rlim_t soft) {
    REQUIRE(::getrlimit(RLIMIT_NOFILE, &saved_) == 0);
    rlimit l = saved_;
    l.rlim_cur = soft;
    REQUIRE(::setrlimit(RLIMIT_NOFILE, &l) == 0);
  }
  ~FdLimit() { ::setrlimit(RLIMIT_NOFILE, &saved_); }

 private:
  rlimit saved_{};
};

TEST_CASE("a tree with more files than descriptors is read whole, within the fd limit", "[tree]") {
  TempTree t;
  t.intel_2s();
  constexpr int kMonGroups = 1000;
  for (int i = 0; i < kMonGroups; ++i) {
    const std::string p = "mon_groups/m" + std::to_string(i) + "/";
    t.mon(p, 0, 1, 2, 3);
    t.mon(p, 1, 1, 2, 3);
  }
  constexpr rlim_t kLimit = 200;
  FdLimit limit(kLimit);
  const size_t before = open_fds();
  REQUIRE(before < kLimit / 4);
  TreeReader r(t.root());
  for (int pass = 0; pass < 2; ++pass) {
    Snapshot s = r.read();
    REQUIRE(s.ok);
    // Every MON group is there with all six values; nothing failed.
    size_t mon_groups = 0, values = 0;
    for (const Group& g : s.groups) {
      if (g.ctrl()) continue;
      ++mon_groups;
      for (const MonRead& m : g.mon) values += m.kind == ReadKind::kValue && m.u > 0;
    }
    CHECK(mon_groups == kMonGroups);
    CHECK(values == kMonGroups * 6);
    CHECK(s.omitted.count(ReadKind::kReadFailed) == 0);
    CHECK(s.omitted.empty());
    // The held descriptors leave at least half of the limit to the rest.
    const size_t now = open_fds();
    CHECK(now < kLimit);
    CHECK(now - before <= kLimit / 2);
  }
}

TEST_CASE("a file that cannot be read is counted and logged, rate-limited", "[tree]") {
  TempTree t;
  t.intel_2s();
  for (int i = 0; i < 20; ++i) t.mon("mon_groups/m" + std::to_string(i) + "/", 0);
  std::vector<std::string> lines;
  ReaderOptions opts;
  opts.log = [&](const std::string& l) { lines.push_back(l); };
  TreeReader r(t.root(), opts);
  // Domain 1's files are missing from every MON group: 20 x 3 reads fail.
  Snapshot s = r.read();
  REQUIRE(s.ok);
  CHECK(s.omitted[ReadKind::kReadFailed] == 60);
  CHECK(s.read_errors == 60);
  REQUIRE(lines.size() == 6);  // five lines, then one saying how many more
  CHECK(lines[0] == "cannot read " + t.root() +
                        "/mon_groups/m0/mon_data/mon_L3_01/llc_occupancy: No such file or "
                        "directory (errno 2)");
  CHECK(lines[5] == "55 more failed reads were not logged one by one");
  s = r.read();
  CHECK(s.omitted[ReadKind::kReadFailed] == 60);
  CHECK(lines.size() == 6);  // within the minute: counted, not logged
}

}  // namespace
}  // namespace resctrlfs::exporter
