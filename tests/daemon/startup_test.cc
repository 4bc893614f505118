// Tests the start-up helpers: lock file names, the per-mount-point instance
// lock, the MSR backend's preconditions and mount point preparation.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
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

TEST_CASE("MSR backend preconditions") {
  const std::string rdt_cpu =
      "processor\t: 0\nvendor_id\t: GenuineIntel\nflags\t\t: fpu vme cat_l3 cdp_l3 rdt_a mba\n";
  const std::string amd_cpu = "processor\t: 0\nflags\t\t: fpu cqm cqm_llc cqm_occup_llc\n";
  const std::string plain_cpu = "processor\t: 0\nflags\t\t: fpu vme avx512f\n";
  const std::string no_resctrl = "proc /proc proc rw 0 0\nsysfs /sys sysfs rw 0 0\n";
  const std::string our_mount = "resctrl /sys/fs/resctrl fuse.resctrl rw 0 0\n";
  const std::string kernel_resctrl = "resctrl /sys/fs/resctrl resctrl rw,relatime 0 0\n";

  CHECK(check_msr_preconditions(no_resctrl, rdt_cpu).ok());
  CHECK(check_msr_preconditions(no_resctrl, amd_cpu).ok());
  CHECK(check_msr_preconditions(our_mount, rdt_cpu).ok());

  auto none = check_msr_preconditions(no_resctrl, plain_cpu);
  REQUIRE_FALSE(none.ok());
  CHECK(none.error().code == ENODEV);
  CHECK(none.error().message.find("no RDT/PQoS") != std::string::npos);

  auto kernel = check_msr_preconditions(kernel_resctrl, rdt_cpu);
  REQUIRE_FALSE(kernel.ok());
  CHECK(kernel.error().code == EBUSY);
  CHECK(kernel.error().message.find("/sys/fs/resctrl") != std::string::npos);
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
