// Tests the start-up helpers: lock file names, the per-mount-point instance
// lock, the MSR backend's preconditions and mount point preparation.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "daemon/startup.h"

using namespace resctrlfs::daemon;

namespace {

std::string temp_dir() {
  char tmpl[] = "/tmp/resctrlfsd-test-XXXXXX";
  REQUIRE(mkdtemp(tmpl) != nullptr);
  return tmpl;
}

}  // namespace

TEST_CASE("lock file names") {
  CHECK(lock_file_name("/sys/fs/resctrl") == "sys-fs-resctrl.lock");
  CHECK(lock_file_name("/mnt/x/") == "mnt-x.lock");
  CHECK(lock_file_name("/") == "-.lock");
  CHECK(lock_file_name("/tmp/a b") == "tmp-a%20b.lock");
  // Distinct paths must not share a lock.
  CHECK(lock_file_name("/a-b") != lock_file_name("/a/b"));
}

TEST_CASE("lock file names keyed by mount namespace") {
  CHECK(lock_file_name("/sys/fs/resctrl", "mnt-4026531841") ==
        "mnt-4026531841.sys-fs-resctrl.lock");
  CHECK(lock_file_name("/sys/fs/resctrl", "mnt-1") != lock_file_name("/sys/fs/resctrl", "mnt-2"));
  CHECK(lock_file_name("/x", "") == "x.lock");
}

namespace {

// A fake /proc: `self` links to the namespace `self_ns`; each process has
// ns/mnt -> mnt:[ns] and a stat line with `start` in field 22.
struct FakeProc {
  std::string root = temp_dir();
  void add(const std::string& pid, uint64_t ns, uint64_t start, const std::string& comm = "sh") {
    const std::string d = root + "/" + pid;
    std::filesystem::create_directories(d + "/ns");
    std::filesystem::create_symlink("mnt:[" + std::to_string(ns) + "]", d + "/ns/mnt");
    std::string stat = pid + " (" + comm + ") S 1 1 1 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 " +
                       std::to_string(start) + " 1 1 18446744073709551615 0 0 0\n";
    std::ofstream(d + "/stat") << stat;
  }
  ~FakeProc() { std::filesystem::remove_all(root); }
};

}  // namespace

TEST_CASE("mount namespace: inode of self, oldest process of the namespace") {
  FakeProc p;
  p.add("self", 7, 500);
  p.add("1", 5, 10);               // another namespace, older
  p.add("40", 7, 300);             // ours
  p.add("41", 7, 300);             // same start: the smaller pid wins
  p.add("90", 7, 200, "a) b (c");  // the oldest; a name with ") " in it
  p.add("91", 7, 900);
  std::ofstream(p.root + "/cpuinfo") << "x";
  auto ns = current_mount_namespace(p.root);
  REQUIRE(ns.ok());
  CHECK(ns->inode == 7);
  CHECK(ns->oldest_pid == 90);
  CHECK(ns->oldest_start == 200);
  CHECK(ns->key() == "mnt-7");
  CHECK(ns->identity() == "mnt-7-90-200");
  std::filesystem::remove_all(p.root + "/90");
  CHECK(current_mount_namespace(p.root)->identity() == "mnt-7-40-300");
}

TEST_CASE("mount namespace: no namespace link is an error, not a guess") {
  FakeProc p;
  p.add("1", 5, 10);
  auto ns = current_mount_namespace(p.root);
  REQUIRE_FALSE(ns.ok());
  CHECK(ns.error().message.find("self/ns/mnt") != std::string::npos);
}

TEST_CASE("this process's mount namespace is found") {
  auto ns = current_mount_namespace();
  REQUIRE(ns.ok());
  struct stat st;
  REQUIRE(stat("/proc/self/ns/mnt", &st) == 0);
  CHECK(ns->inode == st.st_ino);
  CHECK(ns->oldest_pid > 0);
}

TEST_CASE("locks of two mount namespaces on one mount point are independent") {
  const std::string dir = temp_dir();
  auto a = InstanceLock::acquire(dir, "/sys/fs/resctrl", "mnt-1");
  auto b = InstanceLock::acquire(dir, "/sys/fs/resctrl", "mnt-2");
  CHECK(a.ok());
  CHECK(b.ok());
  auto again = InstanceLock::acquire(dir, "/sys/fs/resctrl", "mnt-1");
  CHECK_FALSE(again.ok());
  std::filesystem::remove_all(dir);
}

TEST_CASE("a lock whose holder has no mount is waited for until it is released") {
  const std::string dir = temp_dir();
  const std::string mnt = dir + "/mnt";  // nothing is mounted there
  std::filesystem::create_directory(mnt);
  const std::string path = dir + "/" + lock_file_name(mnt, "mnt-9");
  int ready[2], go[2];
  REQUIRE(pipe(ready) == 0);
  REQUIRE(pipe(go) == 0);
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    // The "exiting daemon": holds the lock until told to go. Only system
    // calls here: another thread of this process may have held a lock of
    // the allocator at the fork.
    close(ready[0]);
    close(go[1]);
    const int fd = open(path.c_str(), O_RDWR | O_CREAT, 0644);
    const char c = fd >= 0 && flock(fd, LOCK_EX) == 0 ? 'y' : 'n';
    (void)!write(ready[1], &c, 1);
    char byte;
    (void)!read(go[0], &byte, 1);  // EOF once the parent closes its end
    const timespec pause{0, 200 * 1000 * 1000};
    nanosleep(&pause, nullptr);
    _exit(0);
  }
  close(ready[1]);
  close(go[0]);
  char c = 0;
  const bool got = read(ready[0], &c, 1) == 1;
  close(ready[0]);
  if (!got || c != 'y') {
    close(go[1]);
    waitpid(child, nullptr, 0);
    FAIL("the child could not take the lock");
  }
  // Without waiting it is refused at once; with a wait it succeeds once the
  // holder exits.
  auto now = InstanceLock::acquire(dir, mnt, "mnt-9");
  REQUIRE_FALSE(now.ok());
  CHECK(now.error().message.find("did not exit") != std::string::npos);
  close(go[1]);
  auto waited = InstanceLock::acquire(dir, mnt, "mnt-9", std::chrono::seconds(60));
  CHECK(waited.ok());
  int status = 0;
  waitpid(child, &status, 0);
  std::filesystem::remove_all(dir);
}

TEST_CASE("a held lock file is removed when its holder lets go") {
  const std::string dir = temp_dir();
  {
    auto held = InstanceLock::acquire(dir, "/mnt/r", "mnt-3");
    REQUIRE(held.ok());
    CHECK(std::filesystem::exists(held->path()));
  }
  CHECK(std::filesystem::is_empty(dir));
  std::filesystem::remove_all(dir);
}

TEST_CASE("a second instance for the same mount point is refused, another one is fine") {
  const std::string dir = temp_dir();
  auto first = InstanceLock::acquire(dir + "/locks", "/mnt/r");
  REQUIRE(first.ok());
  auto second = InstanceLock::acquire(dir + "/locks", "/mnt/r");
  REQUIRE_FALSE(second.ok());
  CHECK(second.error().code == EBUSY);
  CHECK(second.error().message.find("pid " + std::to_string(getpid())) != std::string::npos);
  auto other = InstanceLock::acquire(dir + "/locks", "/mnt/other");
  CHECK(other.ok());
  {
    InstanceLock moved = std::move(first).value();  // released at scope end
  }
  CHECK(InstanceLock::acquire(dir + "/locks", "/mnt/r").ok());
  std::filesystem::remove_all(dir);
}

TEST_CASE("resctrl already mounted at a path") {
  const std::string mounts =
      "proc /proc proc rw 0 0\n"
      "resctrl /sys/fs/resctrl resctrl rw,relatime 0 0\n"
      "resctrl /mnt/r fuse.resctrl rw,nosuid,nodev 0 0\n"
      "other /mnt/o fuse.other rw 0 0\n";
  CHECK(resctrl_mounted_at(mounts, "/sys/fs/resctrl"));
  CHECK(resctrl_mounted_at(mounts, "/mnt/r"));
  CHECK_FALSE(resctrl_mounted_at(mounts, "/mnt/o"));
  CHECK_FALSE(resctrl_mounted_at(mounts, "/mnt"));
  CHECK_FALSE(resctrl_mounted_at("", "/mnt/r"));
}

TEST_CASE("mount point preparation") {
  const std::string dir = temp_dir();
  auto ok = prepare_mountpoint(dir + "/./");
  REQUIRE(ok.ok());
  CHECK(*ok == dir);
  auto missing = prepare_mountpoint(dir + "/missing");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().code == ENOENT);
  const std::string file = dir + "/file";
  FILE* f = fopen(file.c_str(), "w");
  REQUIRE(f != nullptr);
  fclose(f);
  auto notdir = prepare_mountpoint(file);
  REQUIRE_FALSE(notdir.ok());
  CHECK(notdir.error().code == ENOTDIR);
  std::filesystem::remove_all(dir);
}
