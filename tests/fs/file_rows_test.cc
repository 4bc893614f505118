// The file table keeps the order in which a directory gets its files: fs/
// numbers inodes in creation order, so a directory's files, taken by inode,
// come in the order the rows had when they were one list in
// fs/file_table.cc (before each part defined its rows next to its
// handlers: fs/file_rows.h).
#include <sys/stat.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "tests/fs/harness.h"

namespace resctrlfs::fs::testing {
namespace {

// Every row, in the order of the single table.
const std::vector<std::string> kTableOrder = {"last_cmd_status",
                                              "num_closids",
                                              "cbm_mask",
                                              "min_cbm_bits",
                                              "shareable_bits",
                                              "bit_usage",
                                              "sparse_masks",
                                              "io_alloc",
                                              "io_alloc_cbm",
                                              "min_bandwidth",
                                              "bandwidth_gran",
                                              "delay_linear",
                                              "thread_throttle_mode",
                                              "num_rmids",
                                              "mon_features",
                                              "max_threshold_occupancy",
                                              "mbm_assign_mode",
                                              "mbm_total_bytes_config",
                                              "mbm_local_bytes_config",
                                              "num_mbm_cntrs",
                                              "available_mbm_cntrs",
                                              "mbm_assign_on_mkdir",
                                              "event_filter",
                                              "tasks",
                                              "cpus",
                                              "cpus_list",
                                              "schemata",
                                              "mode",
                                              "size",
                                              "mba_MBps_event",
                                              "mbm_L3_assignments",
                                              "ctrl_hw_id",
                                              "mon_hw_id",
                                              "channels"};

// The regular files of directory `path`, by inode number.
std::vector<std::string> files_by_inode(Filesystem& fs, Shell& sh, const std::string& path) {
  auto ino = sh.resolve(path);
  REQUIRE(ino.ok());
  auto entries = fs.readdir(*ino);
  REQUIRE(entries.ok());
  std::vector<DirEntry> files;
  for (const DirEntry& e : *entries)
    if (S_ISREG(e.attr.mode)) files.push_back(e);
  std::sort(files.begin(), files.end(),
            [](const DirEntry& a, const DirEntry& b) { return a.attr.ino < b.attr.ino; });
  std::vector<std::string> names;
  for (const DirEntry& e : files) names.push_back(e.name);
  return names;
}

// `names` in the table's order.
std::vector<std::string> table_order(const std::vector<std::string>& names) {
  std::vector<std::string> out;
  for (const std::string& n : kTableOrder)
    if (std::find(names.begin(), names.end(), n) != names.end()) out.push_back(n);
  return out;
}

void check_dir(SimFixture& f, const std::string& path, const std::vector<std::string>& some) {
  INFO(path);
  const std::vector<std::string> got = files_by_inode(*f.fs, *f.sh, path);
  for (const std::string& n : some) {
    INFO(n);
    CHECK(std::find(got.begin(), got.end(), n) != got.end());
  }
  CHECK(got == table_order(got));
}

TEST_CASE("a directory's files are made in the file table's order", "[tree]") {
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
