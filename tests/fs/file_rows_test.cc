// Each part defines its file rows next to its handlers (fs/file_rows.h);
// the file table puts them together: every directory gets the rows meant
// for it.
#include <sys/stat.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "tests/fs/harness.h"

namespace resctrlfs::fs::testing {
namespace {

// The regular files of `path`.
std::vector<std::string> regular_files(Filesystem& fs, Shell& sh, const std::string& path) {
  auto ino = sh.resolve(path);
  REQUIRE(ino.ok());
  auto entries = fs.readdir(*ino);
  REQUIRE(entries.ok());
  std::vector<DirEntry> files;
  for (const DirEntry& e : *entries)
    if (S_ISREG(e.attr.mode)) files.push_back(e);
  std::vector<std::string> names;
  for (const DirEntry& e : files) names.push_back(e.name);
  return names;
}

// `names` in the table's order.
void check_dir(SimFixture& f, const std::string& path, const std::vector<std::string>& some) {
  INFO(path);
  const std::vector<std::string> got = regular_files(*f.fs, *f.sh, path);
  for (const std::string& n : some) {
    INFO(n);
    CHECK(std::find(got.begin(), got.end(), n) != got.end());
  }
}

// Which rows each directory gets. (Their creation order is no longer seen
// from outside: node ids are a group's base plus a hash of the path, so
// that a restarted daemon gives every file the number it had.)
TEST_CASE("a directory has the file table's rows for it", "[tree]") {
  SimFixture a("amd-io", MountOptions{.debug = true});
  REQUIRE(a.sh->mkdir("/g") == 0);
  REQUIRE(a.sh->mkdir("/g/mon_groups/m") == 0);
  check_dir(a, "/info", {"last_cmd_status"});
  check_dir(a, "/info/L3", {"num_closids", "bit_usage", "sparse_masks", "io_alloc"});
  check_dir(a, "/info/MB", {"num_closids", "min_bandwidth", "delay_linear"});
  check_dir(a, "/info/L3_MON", {"num_rmids", "mbm_assign_mode", "mbm_assign_on_mkdir"});
  check_dir(a, "/info/L3_MON/event_configs/mbm_total_bytes", {"event_filter"});
  for (const char* dir : {"/", "/g", "/g/mon_groups/m"})
    check_dir(a, dir, {"tasks", "cpus_list", "mbm_L3_assignments", "mon_hw_id"});
  check_dir(a, "/g", {"schemata", "mode", "size", "ctrl_hw_id"});

  SimFixture b("intel-gnr-io", MountOptions{.mba_mbps = true, .debug = true, .iordt = true});
  REQUIRE(b.sh->mkdir("/g") == 0);
  for (const char* dir : {"/", "/g"})
    check_dir(b, dir, {"tasks", "schemata", "mba_MBps_event", "ctrl_hw_id", "channels"});
}

}  // namespace
}  // namespace resctrlfs::fs::testing
