// Tests that the directories the daemon keeps files in as root (the state
// directory with its journal and instance lock, the boot-state directory)
// are refused when another user could have put something in them, are
// created private, and that a symlink planted at one of their file names
// never leads a write (or a read) to the file it points at.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "daemon/boot_state.h"
#include "daemon/journal.h"
#include "daemon/startup.h"
#include "tests/catch_skip.h"
#include "tests/temp_files.h"

using namespace resctrlfs::daemon;

namespace {

namespace stdfs = std::filesystem;

constexpr uid_t kNobody = 65534;
constexpr const char* kVictimText = "root:secret:19000:0:99999:7:::\n";

// A temporary directory of this file's tests (tests/temp_files.h).
struct TempDir : resctrlfs::test::TempDir {
  TempDir() : resctrlfs::test::TempDir("statedir-test") {}
};

// A file standing for /etc/shadow, outside the directory under test.
struct Victim {
  TempDir dir;
  std::string path = dir.path + "/shadow";
  Victim() { std::ofstream(path, std::ios::binary) << kVictimText; }
  void check_untouched() const {
    CHECK(resctrlfs::test::read_file(path) == kVictimText);
    CHECK(stdfs::file_size(path) == std::string(kVictimText).size());
  }
};

mode_t mode_of(const std::string& p) {
  struct stat st;
  REQUIRE(::stat(p.c_str(), &st) == 0);
  return st.st_mode & 07777;
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// Every way the daemon opens the directory: the lock, the journal, the
// boot-state writer. Each must refuse and leave the directory as it was.
void check_refused_everywhere(const std::string& dir, const std::string& why) {
  auto lock = InstanceLock::acquire(dir, "/mnt/r");
  REQUIRE_FALSE(lock.ok());
  CHECK(contains(lock.error().message, why));
  CHECK(contains(lock.error().message, "or let resctrlfsd create it"));
  auto journal = StateJournal::open(dir);
  REQUIRE_FALSE(journal.ok());
  CHECK(contains(journal.error().message, why));
  const std::string boot = boot_state_path(dir, "/mnt/r");
  auto w = write_boot_state(boot, "intel-2s", "/mnt/r", "{}");
  REQUIRE_FALSE(w.ok());
  CHECK(contains(w.error().message, why));
  CHECK_FALSE(read_boot_state(boot, "intel-2s", "/mnt/r").ok());
  CHECK(stdfs::is_empty(dir));
}

}  // namespace

TEST_CASE("a state directory owned by another user is refused", "[state-dir]") {
  if (::geteuid() != 0) RESCTRLFS_SKIP("needs root to chown a directory to nobody");
  TempDir dir;
  REQUIRE(::chown(dir.path.c_str(), kNobody, kNobody) == 0);
  check_refused_everywhere(dir.path,
                           "owned by uid 65534, not by root: use a directory only root "
                           "can write (chown root, chmod 0700)");
}

TEST_CASE("a state directory group or others may write to is refused", "[state-dir]") {
  for (const mode_t mode : {0777, 0775, 0720, 0702, 01777}) {
    CAPTURE(mode);
    TempDir dir;
    REQUIRE(::chmod(dir.path.c_str(), mode) == 0);
    char text[8];
    std::snprintf(text, sizeof(text), "%04o", static_cast<unsigned>(mode));
    check_refused_everywhere(dir.path, std::string("mode ") + text + " lets");
  }
  // Read and search by others are fine: only writing lets files in.
  TempDir dir;
  REQUIRE(::chmod(dir.path.c_str(), 0755) == 0);
  CHECK(InstanceLock::acquire(dir.path, "/mnt/r").ok());
}

TEST_CASE("a state directory that is a symlink is refused", "[state-dir]") {
  TempDir real, links;
  const std::string link = links.path + "/state";
  stdfs::create_directory_symlink(real.path, link);
  check_refused_everywhere(link, "symbolic link");
  CHECK(stdfs::is_empty(real.path));
  // A trailing slash must not make it followed.
  auto lock = InstanceLock::acquire(link + "/", "/mnt/r");
  REQUIRE_FALSE(lock.ok());
  CHECK(contains(lock.error().message, "symbolic link"));
}

TEST_CASE("directories the daemon creates are 0700 whatever the umask", "[state-dir]") {
  TempDir top;
  const mode_t old = ::umask(0);
  {
    auto lock = InstanceLock::acquire(top.path + "/a/locks", "/mnt/r");
    REQUIRE(lock.ok());
    CHECK(mode_of(top.path + "/a/locks") == 0700);
    CHECK(mode_of(top.path + "/a") == 0755);  // a parent: never writable by others
    REQUIRE(StateJournal::open(top.path + "/b/journal").ok());
    CHECK(mode_of(top.path + "/b/journal") == 0700);
    const std::string boot = boot_state_path(top.path + "/c/boot", "/mnt/r");
    REQUIRE(write_boot_state(boot, "intel-2s", "/mnt/r", "{}").ok());
    CHECK(mode_of(top.path + "/c/boot") == 0700);
  }
  ::umask(077);
  {
    REQUIRE(StateJournal::open(top.path + "/d").ok());
    CHECK(mode_of(top.path + "/d") == 0700);
  }
  ::umask(old);
}

TEST_CASE("a symlink at the lock file's name is never followed", "[state-dir]") {
  TempDir dir;
  Victim victim;
  stdfs::create_symlink(victim.path, dir.path + "/" + lock_file_name("/mnt/r"));
  auto lock = InstanceLock::acquire(dir.path, "/mnt/r");
  CHECK_FALSE(lock.ok());
  victim.check_untouched();
}

TEST_CASE("a symlink at the journal's log name is never followed", "[state-dir]") {
  TempDir dir;
  Victim victim;
  stdfs::create_symlink(victim.path, dir.path + "/" + kJournalLogFile);
  auto j = StateJournal::open(dir.path);
  if (j.ok()) {
    // The first snapshot truncates (and on tmpfs maps) the log.
    CHECK_FALSE((*j)->commit("one").ok());
  }
  victim.check_untouched();
}

TEST_CASE("a symlink at the snapshot's temporary name is never followed", "[state-dir]") {
  TempDir dir;
  Victim victim;
  auto j = StateJournal::open(dir.path);
  REQUIRE(j.ok());
  // Planted after the open (which removes a stale temporary file).
  stdfs::create_symlink(victim.path, dir.path + "/" + kJournalTmpFile);
  REQUIRE((*j)->commit("one").ok());
  victim.check_untouched();
  CHECK_FALSE(stdfs::is_symlink(dir.path + "/" + kJournalFile));
  auto again = StateJournal::open(dir.path);
  REQUIRE(again.ok());
  auto rec = (*again)->load();
  REQUIRE(rec.ok());
  REQUIRE(rec->has_value());
  CHECK((*rec)->body == "one");
}

TEST_CASE("a symlink at the snapshot's name is not read", "[state-dir]") {
  TempDir dir, elsewhere;
  // A journal someone else wrote, linked in.
  {
    auto j = StateJournal::open(elsewhere.path);
    REQUIRE(j.ok());
    REQUIRE((*j)->commit("planted").ok());
  }
  stdfs::create_symlink(elsewhere.path + "/" + kJournalFile, dir.path + "/" + kJournalFile);
  auto j = StateJournal::open(dir.path);
  REQUIRE(j.ok());
  auto rec = (*j)->load();
  CHECK_FALSE((rec.ok() && rec->has_value() && (*rec)->body == "planted"));
}

TEST_CASE("a symlink at the boot-state temporary name is never followed", "[state-dir]") {
  TempDir dir;
  Victim victim;
  const std::string boot = boot_state_path(dir.path, "/mnt/r");
  stdfs::create_symlink(victim.path, boot + ".tmp");
  auto w = write_boot_state(boot, "intel-2s", "/mnt/r", R"({"max_threshold_occupancy":4})");
  CHECK(w.ok());
  victim.check_untouched();
  CHECK_FALSE(stdfs::is_symlink(boot));
  auto got = read_boot_state(boot, "intel-2s", "/mnt/r");
  REQUIRE(got.ok());
  REQUIRE(got->has_value());
  CHECK(**got == R"({"max_threshold_occupancy":4})");
}

TEST_CASE("a symlink at the boot-state file's name is not read", "[state-dir]") {
  TempDir dir, elsewhere;
  const std::string planted = boot_state_path(elsewhere.path, "/mnt/r");
  REQUIRE(write_boot_state(planted, "intel-2s", "/mnt/r", R"({"max_threshold_occupancy":9})").ok());
  const std::string boot = boot_state_path(dir.path, "/mnt/r");
  stdfs::create_symlink(planted, boot);
  auto got = read_boot_state(boot, "intel-2s", "/mnt/r");
  CHECK_FALSE((got.ok() && got->has_value()));
}
