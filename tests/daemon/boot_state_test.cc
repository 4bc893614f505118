// Tests the boot-state file of resctrlfsd: one file per mount point (the
// name escaping never maps two mount points to one file), atomic
// replacement, and documents of another platform or mount point ignored.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "daemon/boot_state.h"
#include "daemon/options.h"

using resctrlfs::daemon::boot_state_path;
using resctrlfs::daemon::read_boot_state;
using resctrlfs::daemon::write_boot_state;

TEST_CASE("boot state: one file per mount point") {
  CHECK(boot_state_path("/run/x", "/sys/fs/resctrl") == "/run/x/_sys_fs_resctrl.json");
  CHECK(boot_state_path("/run/x", "/mnt/a_b") == "/run/x/_mnt_a%5Fb.json");
  CHECK(boot_state_path("/run/x", "/mnt/a/b") == "/run/x/_mnt_a_b.json");
  CHECK(boot_state_path("/run/x", "/mnt/a b/") == "/run/x/_mnt_a%20b_.json");
  CHECK(boot_state_path("/run/x", "/mnt//a/./b") == boot_state_path("/run/x", "/mnt/a/b"));
  CHECK(boot_state_path("/run/x", "/mnt/%41") != boot_state_path("/run/x", "/mnt/A"));
}

TEST_CASE("boot state: one file per mount namespace, stale ones of a reused inode removed") {
  using resctrlfs::daemon::remove_stale_boot_states;
  CHECK(boot_state_path("/run/x", "/sys/fs/resctrl", "mnt-7-1-20") ==
        "/run/x/mnt-7-1-20_sys_fs_resctrl.json");
  CHECK(boot_state_path("/run/x", "/a", "mnt-7-1-20") !=
        boot_state_path("/run/x", "/a", "mnt-7-2-20"));
  char tmpl[] = "/tmp/resctrlfs-boot-XXXXXX";
  REQUIRE(mkdtemp(tmpl) != nullptr);
  const std::string dir = tmpl;
  const std::string mine = boot_state_path(dir, "/a", "mnt-7-5-50");
  const std::vector<std::string> stale = {boot_state_path(dir, "/a", "mnt-7-1-20"),
                                          boot_state_path(dir, "/a", "mnt-7-3-30")};
  const std::vector<std::string> kept = {
      mine,
      boot_state_path(dir, "/a", "mnt-77-1-20"),   // another inode
      boot_state_path(dir, "/a", "mnt-8-1-20"),    // another namespace
      boot_state_path(dir, "/a_b", "mnt-7-1-20"),  // another mount point
      boot_state_path(dir, "/b", "mnt-7-1-20"),
      boot_state_path(dir, "/x/a", "mnt-7-1-20"),  // ends like /a's
      boot_state_path(dir, "/a", ""),              // not keyed
      dir + "/mnt-7-x-1_a.json"};                  // not ours
  for (const auto& f : stale) std::ofstream(f) << "{}";
  for (const auto& f : kept) std::ofstream(f) << "{}";
  remove_stale_boot_states(dir, "/a", "mnt-7", mine);
  for (const auto& f : stale) CHECK_FALSE(std::filesystem::exists(f));
  for (const auto& f : kept) CHECK(std::filesystem::exists(f));
  std::filesystem::remove_all(dir);
}

TEST_CASE("boot state: written, read back, ignored for another platform or mount point") {
  char tmpl[] = "/tmp/resctrlfs-boot-XXXXXX";
  REQUIRE(mkdtemp(tmpl) != nullptr);
  const std::string dir = std::string(tmpl) + "/boot";
  const std::string path = boot_state_path(dir, "/mnt/r");
  auto none = read_boot_state(path, "intel-2s", "/mnt/r");
  REQUIRE(none.ok());
  CHECK_FALSE(none->has_value());
  REQUIRE(write_boot_state(path, "intel-2s", "/mnt/r", R"({"max_threshold_occupancy":4})").ok());
  auto got = read_boot_state(path, "intel-2s", "/mnt/r");
  REQUIRE(got.ok());
  REQUIRE(got->has_value());
  CHECK(**got == R"({"max_threshold_occupancy":4})");
  CHECK_FALSE(read_boot_state(path, "amd-2s", "/mnt/r")->has_value());
  CHECK_FALSE(read_boot_state(path, "intel-2s", "/mnt/other")->has_value());
  CHECK_FALSE(std::filesystem::exists(path + ".tmp"));
  // The platform and the mount point are quoted as JSON strings.
  const std::string odd = "odd\"name\\\n";
  REQUIRE(write_boot_state(path, odd, "/mnt/r", R"({"rmids":{"free":[1,2]}})").ok());
  got = read_boot_state(path, odd, "/mnt/r");
  REQUIRE(got.ok());
  REQUIRE(got->has_value());
  CHECK(**got == R"({"rmids":{"free":[1,2]}})");
  // fs/'s document is written as it is, but it must be an object.
  for (const char* bad : {"", "[1]", "{", "7"}) {
    auto w = write_boot_state(path, "intel-2s", "/mnt/r", bad);
    REQUIRE_FALSE(w.ok());
    CHECK(w.error().code == EINVAL);
  }
  CHECK(read_boot_state(path, odd, "/mnt/r")->has_value());  // the last good file stays
  { std::ofstream(path) << "{broken"; }
  CHECK(read_boot_state(path, "intel-2s", "/mnt/r").error().code == EINVAL);
  std::filesystem::remove_all(tmpl);
}

// The file is outside input. Wrong types, missing keys, bad
// nesting and garbage are EINVAL with a reason, never an exception.
TEST_CASE("boot state: damaged files are refused with a reason") {
  using resctrlfs::daemon::parse_boot_state;
  const std::string deep(100000, '[');
  const std::string docs[] = {
      "",
      "{",
      std::string("\x00\x01\x02\xff", 4),
      "[]",
      R"({"version": "1", "state": {}})",
      R"({"version": 2, "state": {}})",
      R"({"version": 1})",
      R"({"version": 1, "state": []})",
      R"({"version": 1, "state": {}, "platform": 7, "mountpoint": "/mnt/r"})",
      R"({"version": 1, "state": {}, "platform": "intel-2s", "mountpoint": ["/mnt/r"]})",
      R"({"version": 99999999999999999999, "state": {}})",
      "{\"version\": 1, \"state\": {\"x\": " + deep + "}}",
      "{\"version\": 1, \"state\": {}, \"platform\": \"\xc3\"}",
      R"({"version": 1, "state": {}, "saved_boottime_ms": -5})",
      R"({"version": 1, "state": {}, "saved_boottime_ms": "5"})",
  };
  for (const std::string& doc : docs) {
    INFO(doc.substr(0, 100));
    resctrlfs::Result<std::optional<std::string>> r = std::optional<std::string>();
    REQUIRE_NOTHROW(r = parse_boot_state(doc, "intel-2s", "/mnt/r"));
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == EINVAL);
    CHECK_FALSE(r.error().message.empty());
  }
  auto ok = parse_boot_state(
      R"({"version": 1, "platform": "intel-2s", "mountpoint": "/mnt/r", "state": {"a": 1}})",
      "intel-2s", "/mnt/r");
  REQUIRE(ok.ok());
  CHECK(**ok == R"({"a":1})");
}

// The time the writer stopped running the limbo worker goes with the file.
TEST_CASE("boot state: the save time round-trips, and is -1 when absent") {
  char tmpl[] = "/tmp/resctrlfs-boot-XXXXXX";
  REQUIRE(mkdtemp(tmpl) != nullptr);
  const std::string path = boot_state_path(std::string(tmpl) + "/boot", "/mnt/r");
  REQUIRE(write_boot_state(path, "intel-2s", "/mnt/r", "{}", 123456).ok());
  int64_t saved = 0;
  auto got = read_boot_state(path, "intel-2s", "/mnt/r", &saved);
  REQUIRE(got.ok());
  REQUIRE(got->has_value());
  CHECK(saved == 123456);
  REQUIRE(write_boot_state(path, "intel-2s", "/mnt/r", "{}").ok());
  got = read_boot_state(path, "intel-2s", "/mnt/r", &saved);
  REQUIRE(got.ok());
  CHECK(saved == -1);
  CHECK(resctrlfs::daemon::boottime_ms() > 0);
  std::filesystem::remove_all(tmpl);
}

TEST_CASE("boot state: on /run by default") {
  resctrlfs::daemon::DaemonOptions o;
  CHECK(o.boot_state_dir == "/run/resctrlfs/boot");
}
