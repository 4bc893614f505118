// The kernel's tricky edge cases (errno and last_cmd_status) at the model level, on the intel-2s
// simulated platform (L3 11-bit CDP-capable, MBA 10/10 with 8 CLOSIDs, two
// L3 domains, 8 CPUs, 224 RMIDs) unless stated.
#include <sys/stat.h>

#include <catch2/catch.hpp>

#include "tests/fs/harness.h"

namespace resctrlfs::fs::testing {

TEST_CASE("schemata edge cases 1-17", "[ctrl]") {
  SimFixture f("intel-2s");
  Shell& sh = *f.sh;
  REQUIRE(sh.mkdir("/p0") == 0);
  // 1: no newline -> EINVAL, LCS untouched.
  CHECK(sh.echo("/p0/mode", "bogus") == EINVAL);
  CHECK(sh.write("/p0/schemata", "L3:0=3") == EINVAL);
  CHECK(sh.lcs() == "Unknown or unsupported mode\n");
  // 2: blank last line.
  CHECK(sh.write("/p0/schemata", "L3:0=3\n\n") == EINVAL);
  CHECK(sh.lcs() == "Missing ':'\n");
  CHECK(sh.cat("/p0/schemata") == "    MB:0=100;1=100\n    L3:0=7ff;1=7ff\n");
  // 3: trailing ';'.
  CHECK(sh.echo("/p0/schemata", "L3:0=3;") == 0);
  // 4: ids are not trimmed, names and values are.
  CHECK(sh.echo("/p0/schemata", "L3: 0=3") == EINVAL);
  CHECK(sh.lcs() == "Missing '=' or non-numeric domain\n");
  CHECK(sh.echo("/p0/schemata", " L3 :0= 3 ") == 0);
  // 5: unknown domain: EINVAL, LCS ok.
  CHECK(sh.echo("/p0/schemata", "L3:7=3") == EINVAL);
  CHECK(sh.lcs() == "ok\n");
  // 6: hex forms.
  CHECK(sh.echo("/p0/schemata", "L3:0=0x3") == 0);
  CHECK(sh.cat("/p0/schemata") == "    MB:0=100;1=100\n    L3:0=3;1=7ff\n");
  CHECK(sh.echo("/p0/schemata", "L3:0=FF") == 0);
  CHECK(sh.cat("/p0/schemata") == "    MB:0=100;1=100\n    L3:0=ff;1=7ff\n");
  // 7-10.
  CHECK(sh.echo("/p0/schemata", "L3:0=0") == EINVAL);
  CHECK(sh.lcs() == "Mask out of range\n");
  CHECK(sh.echo("/p0/schemata", "L3:0=f7") == EINVAL);
  CHECK(sh.lcs() == "The mask f7 has non-consecutive 1-bits\n");
  CHECK(sh.echo("/p0/schemata", "L3:0=1000") == EINVAL);
  CHECK(sh.lcs() == "Mask out of range\n");
  CHECK(sh.echo("/p0/schemata", "l3:0=3") == EINVAL);
  CHECK(sh.lcs() == "Unknown or unsupported resource name 'l3'\n");
  // 11-12: nothing applied.
  CHECK(sh.echo("/p0/schemata", "L3:0=3;0=7") == EINVAL);
  CHECK(sh.lcs() == "Duplicate domain 0\n");
  CHECK(sh.write("/p0/schemata", "L3:0=3\nMB:0=5\n") == EINVAL);
  CHECK(sh.lcs() == "MB value 5 out of range [10,100]\n");
  CHECK(sh.cat("/p0/schemata") == "    MB:0=100;1=100\n    L3:0=ff;1=7ff\n");
  // 13-14.
  CHECK(sh.echo("/p0/schemata", "MB:0=15") == 0);
  CHECK(sh.cat("/p0/schemata") == "    MB:0=20;1=100\n    L3:0=ff;1=7ff\n");
  CHECK(sh.echo("/p0/schemata", "MB:0=9") == EINVAL);
  CHECK(sh.lcs() == "MB value 9 out of range [10,100]\n");
  CHECK(sh.echo("/p0/schemata", "MB:0=0x32") == EINVAL);
  CHECK(sh.lcs() == "Invalid MB value 0x32\n");
  // 56 (tip): a read of a group file resets LCS.
  CHECK(sh.echo("/p0/schemata", "bad") == EINVAL);
  CHECK(sh.cat("/p0/schemata").size() > 0);
  CHECK(sh.lcs() == "ok\n");
}

TEST_CASE("cdp mount: L3DATA before L3CODE, L3 unknown, halved CLOSIDs", "[ctrl]") {
  MountOptions o;
  o.cdp = true;
  SimFixture f(model_platform(), o);  // 16 L3 CLOSIDs
  Shell& sh = *f.sh;
  CHECK(sh.ls("/info") ==
        std::set<std::string>{"L3CODE", "L3DATA", "L3_MON", "MB", "last_cmd_status"});
  CHECK(sh.cat("/schemata") == "    MB:0=100;1=100\nL3DATA:0=7ff;1=7ff\nL3CODE:0=7ff;1=7ff\n");
  CHECK(sh.cat("/info/L3CODE/num_closids") == "8\n");
  CHECK(sh.echo("/schemata", "L3:0=3") == EINVAL);
  CHECK(sh.lcs() == "Unknown or unsupported resource name 'L3'\n");
  REQUIRE(sh.mkdir("/p0") == 0);
  // 47 with cdp.
  CHECK(sh.echo("/p0/mode", "pseudo-locksetup") == EINVAL);
  CHECK(sh.lcs() == "CDP enabled\n");
  // CODE and DATA are separate values; exclusivity checks both halves.
  CHECK(sh.echo("/p0/schemata", "L3CODE:0=3;1=3") == 0);
  CHECK(sh.echo("/p0/schemata", "L3DATA:0=c;1=c") == 0);
  CHECK(sh.echo("/schemata", "L3CODE:0=7f0;1=7f0") == 0);
  CHECK(sh.echo("/schemata", "L3DATA:0=7f0;1=7f0") == 0);
  CHECK(sh.echo("/p0/mode", "exclusive") == 0);
  CHECK(sh.echo("/schemata", "L3CODE:0=7f8") == EINVAL);
  CHECK(sh.lcs() == "Overlaps with exclusive group\n");
}

TEST_CASE("mba_MBps: MBps targets, stored even when a later line fails (17)", "[ctrl]") {
  MountOptions o;
  o.mba_mbps = true;
  SimFixture f("intel-2s", o);
  Shell& sh = *f.sh;
  CHECK(sh.cat("/schemata") == "    MB:0=4294967295;1=4294967295\n    L3:0=7ff;1=7ff\n");
  CHECK(sh.cat("/mba_MBps_event") == "mbm_local_bytes\n");
  CHECK(sh.echo("/schemata", "MB:0=0") == 0);
  CHECK(sh.write("/schemata", "MB:0=500\nL3:0=zz\n") == EINVAL);
  CHECK(sh.lcs() == "Non-hex character in the mask zz\n");
  CHECK(sh.cat("/schemata") == "    MB:0=500;1=4294967295\n    L3:0=7ff;1=7ff\n");
  CHECK(sh.echo("/mba_MBps_event", "mbm_total_bytes") == 0);
  CHECK(sh.cat("/mba_MBps_event") == "mbm_total_bytes\n");
  CHECK(sh.echo("/mba_MBps_event", "llc_occupancy") == EINVAL);
  CHECK(sh.lcs() == "Unsupported event id 'llc_occupancy'\n");
  REQUIRE(sh.mkdir("/p0") == 0);
  CHECK(sh.cat("/p0/schemata") == "    MB:0=4294967295;1=4294967295\n    L3:0=7ff;1=7ff\n");
}

TEST_CASE("modes and overlaps 18-20, 47-48", "[ctrl]") {
  SimFixture f("intel-2s");
  Shell& sh = *f.sh;
  REQUIRE(sh.mkdir("/p0") == 0);
  CHECK(sh.echo("/p0/mode", "exclusive") == EINVAL);
  CHECK(sh.lcs() == "Schemata overlaps\n");
  CHECK(sh.rmdir("/p0") == 0);
  // 19: the root alone may become exclusive; then nothing is left.
  CHECK(sh.echo("/mode", "exclusive") == 0);
  CHECK(sh.cat("/mode") == "exclusive\n");
  CHECK(sh.cat("/info/L3/bit_usage") == "0=EEEEEEEEEEE;1=EEEEEEEEEEE\n");
  CHECK(sh.mkdir("/p1") == ENOSPC);
  CHECK(sh.lcs() == "No space on L3:0\n");
  CHECK(sh.ls("/").count("p1") == 0);
  CHECK(sh.echo("/mode", "shareable") == 0);
  // 20.
  REQUIRE(sh.mkdir("/p0") == 0);
  REQUIRE(sh.mkdir("/p1") == 0);
  CHECK(sh.echo("/schemata", "L3:0=7f0;1=7f0") == 0);
  CHECK(sh.echo("/p1/schemata", "L3:0=7f0;1=7f0") == 0);
  CHECK(sh.echo("/p0/schemata", "L3:0=f;1=f") == 0);
  CHECK(sh.echo("/p0/mode", "exclusive") == 0);
  CHECK(sh.echo("/p1/schemata", "L3:0=18") == EINVAL);
  CHECK(sh.lcs() == "Overlaps with exclusive group\n");
  CHECK(sh.echo("/p0/schemata", "L3:0=1f") == EINVAL);
  CHECK(sh.lcs() == "Overlaps with other group\n");
  // New groups avoid exclusive bits (a new group's default schemata).
  REQUIRE(sh.mkdir("/p2") == 0);
  CHECK(sh.cat("/p2/schemata") == "    MB:0=100;1=100\n    L3:0=7f0;1=7f0\n");
  // 47, 48.
  CHECK(sh.echo("/p1/mode", "pseudo-locksetup") == EINVAL);
  CHECK(sh.lcs() == "Pseudo-locking not supported\n");
  CHECK(sh.echo("/mode", "pseudo-locksetup") == EINVAL);
  CHECK(sh.lcs() == "Cannot pseudo-lock default group\n");
  CHECK(sh.echo("/p1/mode", "pseudo-locked") == EINVAL);
  CHECK(sh.lcs() == "Unknown or unsupported mode\n");
  CHECK(sh.echo("/p1/mode", "shareable") == 0);
  CHECK(sh.write("/p1/mode", "exclusive") == EINVAL);
  CHECK(sh.lcs() == "mode: Invalid input\n");
  CHECK(sh.echo("/p1/mode", "Shareable") == EINVAL);
  CHECK(sh.lcs() == "Unknown or unsupported mode\n");
}

TEST_CASE("tasks edge cases 21-26", "[tasks]") {
  SimFixture f("intel-2s");
  Shell& sh = *f.sh;
  for (pid_t t : {1, 8, 16, 100, 101, 102}) f.tasks.add(t, 1000, 1000);
  REQUIRE(sh.mkdir("/p0") == 0);
  REQUIRE(sh.mkdir("/p1") == 0);
  CHECK(sh.echo("/p0/tasks", "1 2") == EINVAL);
  CHECK(sh.lcs() == "Task list parsing error pid 1 2\n");
  CHECK(sh.echo("/p0/tasks", "100,101") == 0);
  CHECK(sh.echo("/p0/tasks", " 102 , 1 ,") == 0);
  CHECK(sh.cat("/p0/tasks") == "1\n100\n101\n102\n");
  // 22: octal, hex, 0 = the writer.
  CHECK(sh.echo("/p1/tasks", "010") == 0);
  CHECK(sh.echo("/p1/tasks", "0x10") == 0);
  CHECK(sh.echo("/p1/tasks", "0", Caller{101, 0, 0}) == 0);
  CHECK(sh.cat("/p1/tasks") == "8\n16\n101\n");
  // 23, 24.
  CHECK(sh.echo("/p1/tasks", "999999") == ESRCH);
  CHECK(sh.lcs() == "No task 999999\nError while processing task 999999\n");
  CHECK(sh.echo("/p1/tasks", "100,999999,102") == ESRCH);
  CHECK(sh.cat("/p1/tasks") == "8\n16\n100\n101\n");
  CHECK(sh.cat("/p0/tasks") == "1\n102\n");
  CHECK(sh.echo("/p1/tasks", "-5") == EINVAL);
  CHECK(sh.lcs() == "Invalid pid -5\n");
  CHECK(sh.write("/p1/tasks", "1\n2\n") == EINVAL);
  CHECK(sh.lcs() == "Task list parsing error pid 1\n2\n");
  CHECK(sh.write("/p1/tasks", "1,\n2\n") == 0);
  CHECK(sh.write("/p1/tasks", "\n") == 0);
  CHECK(sh.write("/p1/tasks", " \n") == EINVAL);
  CHECK(sh.lcs() == "Task list parsing error pid \n");
  // 25: MON group of another control group.
  REQUIRE(sh.mkdir("/p0/mon_groups/m0") == 0);
  CHECK(sh.echo("/p0/mon_groups/m0/tasks", "16") == EINVAL);
  CHECK(sh.lcs() == "Can't move task to different control group\nError while processing task 16\n");
  CHECK(sh.echo("/p0/mon_groups/m0/tasks", "102") == 0);
  // 26: a CTRL_MON group lists its MON groups' threads; root lists the rest.
  CHECK(sh.cat("/p0/tasks") == "102\n");
  CHECK(sh.cat("/p0/mon_groups/m0/tasks") == "102\n");
  REQUIRE(sh.mkdir("/mon_groups/r0") == 0);
  CHECK(sh.echo("/mon_groups/r0/tasks", "16") == EINVAL);
  CHECK(sh.echo("/tasks", "16") == 0);
  CHECK(sh.echo("/mon_groups/r0/tasks", "16") == 0);
  CHECK(sh.cat("/tasks") == "16\n");
  CHECK(sh.cat("/mon_groups/r0/tasks") == "16\n");
  // Permission check: another user's task.
  CHECK(sh.echo("/p0/tasks", "8", Caller{5, 2000, 2000}) == EPERM);
  CHECK(sh.lcs() == "No permission to move task 8\nError while processing task 8\n");
  CHECK(sh.echo("/p0/tasks", "8", Caller{5, 1000, 1000}) == 0);
}

TEST_CASE("tasks: fork inheritance and exit", "[tasks]") {
  SimFixture f("intel-2s");
  Shell& sh = *f.sh;
  f.tasks.add(10);
  REQUIRE(sh.mkdir("/p0") == 0);
  REQUIRE(sh.mkdir("/p0/mon_groups/m") == 0);
  CHECK(sh.echo("/p0/tasks", "10") == 0);
  CHECK(sh.echo("/p0/mon_groups/m/tasks", "10") == 0);
  f.tasks.add(11);
  f.fs->on_fork(10, 11);
  CHECK(sh.cat("/p0/mon_groups/m/tasks") == "10\n11\n");
  f.tasks.remove(10);
  f.fs->on_exit(10);
  CHECK(sh.cat("/p0/tasks") == "11\n");
  // rmdir of the MON group returns its threads to the parent; rmdir of the
  // parent to the default group.
  CHECK(sh.rmdir("/p0/mon_groups/m") == 0);
  CHECK(sh.cat("/p0/tasks") == "11\n");
  CHECK(sh.rmdir("/p0") == 0);
  CHECK(sh.cat("/tasks") == "11\n");
}

TEST_CASE("cpus edge cases 27-30, 57", "[cpusfile]") {
  SimFixture f("intel-2s");
  Shell& sh = *f.sh;
  REQUIRE(sh.mkdir("/p0") == 0);
  CHECK(sh.echo("/p0/cpus", "0f") == 0);
  CHECK(sh.cat("/cpus_list") == "4-7\n");
  CHECK(sh.echo("/p0/cpus", "") == 0);
  CHECK(sh.cat("/cpus_list") == "0-7\n");
  CHECK(sh.echo("/cpus", "") == EINVAL);
  CHECK(sh.lcs() == "Can't drop CPUs from default group\n");
  CHECK(sh.echo("/p0/cpus_list", "1-2") == 0);
  REQUIRE(sh.mkdir("/p0/mon_groups/m") == 0);
  CHECK(sh.echo("/p0/mon_groups/m/cpus_list", "2") == 0);
  CHECK(sh.echo("/p0/mon_groups/m/cpus_list", "3") == EINVAL);
  CHECK(sh.lcs() == "Can only add CPUs to mongroup that belong to parent\n");
  CHECK(sh.echo("/p0/cpus_list", "1-2") == 0);
  CHECK(sh.cat("/p0/mon_groups/m/cpus_list") == "\n");
  CHECK(sh.echo("/p0/cpus", "0x3") == EINVAL);
  CHECK(sh.lcs() == "Bad CPU list/mask\n");
  CHECK(sh.echo("/p0/cpus", "100") == EOVERFLOW);
  CHECK(sh.lcs() == "Bad CPU list/mask\n");
  CHECK(sh.echo("/p0/cpus_list", "100-200") == ERANGE);
  CHECK(sh.lcs() == "Bad CPU list/mask\n");
  CHECK(sh.echo("/p0/cpus", "03,") == 0);
  CHECK(sh.cat("/p0/cpus") == "03\n");
  // Moving CPUs between groups takes them from the previous owner and its
  // MON groups.
  REQUIRE(sh.mkdir("/p1") == 0);
  CHECK(sh.echo("/p0/mon_groups/m/cpus_list", "1") == 0);
  CHECK(sh.echo("/p1/cpus_list", "1") == 0);
  CHECK(sh.cat("/p0/cpus_list") == "0\n");
  CHECK(sh.cat("/p0/mon_groups/m/cpus_list") == "\n");
  CHECK(sh.rmdir("/p1") == 0);
  CHECK(sh.cat("/cpus_list") == "1-7\n");
}

TEST_CASE("cpus program PQR_ASSOC through the Arch", "[cpusfile]") {
  SimFixture f("intel-2s");
  Shell& sh = *f.sh;
  REQUIRE(sh.mkdir("/p0") == 0);
  REQUIRE(sh.mkdir("/p0/mon_groups/m") == 0);
  CHECK(sh.echo("/p0/cpus_list", "2-3") == 0);
  CHECK(sh.echo("/p0/mon_groups/m/cpus_list", "3") == 0);
  // CPU 3 runs with p0's CLOSID 1 and m's RMID; CPU 2 with p0's RMID.
  unsigned found = 0;
  for (const hw::RegisterValue& r : f.backend.sim->dump_registers()) {
    if (r.msr != 0xc8f) continue;  // IA32_PQR_ASSOC
    uint32_t closid = static_cast<uint32_t>(r.value >> 32);
    uint32_t rmid = static_cast<uint32_t>(r.value & 0x3ff);
    if (r.cpu == 2) {
      CHECK(closid == 1);
      CHECK(rmid == 1);
      ++found;
    }
    if (r.cpu == 3) {
      CHECK(closid == 1);
      CHECK(rmid == 2);
      ++found;
    }
    if (r.cpu == 0) {
      CHECK(r.value == 0);
      ++found;
    }
  }
  CHECK(found == 3);
}

TEST_CASE("rename edge cases 31-33", "[rename]") {
  SimFixture f("intel-2s");
  Shell& sh = *f.sh;
  f.tasks.add(50);
  REQUIRE(sh.mkdir("/p0") == 0);
  REQUIRE(sh.mkdir("/p1") == 0);
  REQUIRE(sh.mkdir("/p0/mon_groups/m1") == 0);
  CHECK(sh.mv("/p0", "/p1x") == EPERM);
  CHECK(sh.lcs() == "Source must be a MON group\n");
  CHECK(sh.echo("/p0/cpus_list", "1") == 0);
  CHECK(sh.echo("/p0/mon_groups/m1/cpus_list", "1") == 0);
  CHECK(sh.mv("/p0/mon_groups/m1", "/p1/mon_groups/m1") == EPERM);
  CHECK(sh.lcs() == "Cannot move a MON group that monitors CPUs\n");
  // Within the same mon_groups it is always allowed.
  CHECK(sh.mv("/p0/mon_groups/m1", "/p0/mon_groups/m2") == 0);
  CHECK(sh.lcs() == "ok\n");
  CHECK(sh.echo("/p0/mon_groups/m2/cpus", "") == 0);
  CHECK(sh.echo("/p0/tasks", "50") == 0);
  CHECK(sh.echo("/p0/mon_groups/m2/tasks", "50") == 0);
  CHECK(sh.mv("/p0/mon_groups/m2", "/p1/mon_groups/m1") == 0);
  CHECK(sh.cat("/p1/tasks") == "50\n");
  CHECK(sh.cat("/p0/tasks") == "");
  CHECK(sh.cat("/p1/mon_groups/m1/tasks") == "50\n");
  CHECK(sh.mv("/p1/mon_groups/m1", "/p1/m1") == EPERM);
  CHECK(sh.lcs() == "Destination must be a mon_groups subdirectory\n");
  CHECK(sh.mv("/p1/mon_groups/m1", "/p1/mon_groups/mon_groups") == EPERM);
  CHECK(sh.mv("/p1/mon_groups/m1", "/info/x") == ENOENT);
  CHECK(sh.mv("/p1/mon_groups/m1", "/p1/mon_groups/m9", 1) == EINVAL);
  REQUIRE(sh.mkdir("/p1/mon_groups/m9") == 0);
  CHECK(sh.mv("/p1/mon_groups/m1", "/p1/mon_groups/m9") == EEXIST);
  // 33: files; appended to whatever LCS holds, no newline.
  CHECK(sh.lcs() == "ok\n");
  CHECK(sh.mv("/tasks", "/foo") == EPERM);
  CHECK(sh.lcs() == "Source and destination must be directories");
}

TEST_CASE("mkdir/rmdir edge cases 34-38, 55", "[groups]") {
  SimFixture f(model_platform());  // MB with 8 CLOSIDs
  Shell& sh = *f.sh;
  REQUIRE(sh.mkdir("/p0") == 0);
  CHECK(sh.mkdir("/p0/foo") == EPERM);
  CHECK(sh.mkdir("/info/x") == ENODEV);
  CHECK(sh.mkdir("/info/L3/x") == ENODEV);
  CHECK(sh.mkdir("/p0/mon_groups/mon_groups") == EPERM);
  CHECK(sh.mkdir("/p0/mon_data/x") == EPERM);
  CHECK(sh.mkdir("/a\nb") == EINVAL);
  CHECK(sh.mkdir("/p0") == EEXIST);
  CHECK(sh.mkdir("/tasks") == EEXIST);
  CHECK(sh.mkdir("/" + std::string(256, 'x')) == ENAMETOOLONG);
  // 35: MB has 8 CLOSIDs.
  for (int i = 1; i < 7; ++i) REQUIRE(sh.mkdir("/g" + std::to_string(i)) == 0);
  CHECK(sh.mkdir("/g7") == ENOSPC);
  CHECK(sh.lcs() == "Out of CLOSIDs\n");
  // 37.
  CHECK(sh.rmdir("/info") == EPERM);
  CHECK(sh.rmdir("/p0/mon_groups") == EPERM);
  CHECK(sh.rmdir("/p0/mon_data") == EPERM);
  CHECK(sh.rmdir("/p0/mon_data/mon_L3_00") == EPERM);
  CHECK(sh.rmdir("/nothere") == ENOENT);
  CHECK(sh.rmdir("/tasks") == ENOTDIR);
  // 38.
  auto root = sh.resolve("/p0");
  REQUIRE(root.ok());
  CHECK(f.fs->create(*root, "newfile").error().code == EACCES);
  CHECK(f.fs->unlink(*root, "tasks").error().code == EPERM);
  // 55: mode 0 groups; files keep their modes.
  REQUIRE(sh.rmdir("/g6") == 0);
  REQUIRE(sh.mkdir("/z", 0) == 0);
  CHECK((sh.stat("/z").mode & 07777) == 0);
  CHECK((sh.stat("/z/mon_groups").mode & 07777) == 0);
  CHECK((sh.stat("/z/mon_data").mode & 07777) == 0);
  CHECK((sh.stat("/z/tasks").mode & 07777) == 0644);
  CHECK((sh.stat("/z/size").mode & 07777) == 0444);
  // Ownership: a non-root creator owns the group.
  REQUIRE(sh.rmdir("/z") == 0);
  REQUIRE(sh.mkdir("/u", 0755, Caller{7, 1000, 100}) == 0);
  CHECK(sh.stat("/u").uid == 1000);
  CHECK(sh.stat("/u/tasks").gid == 100);
  CHECK(sh.stat("/u/mon_data/mon_L3_00/llc_occupancy").uid == 1000);
  // nlink = 2 + subdirectories; files 1, size 0.
  CHECK(sh.stat("/u").nlink == 4);
  CHECK(sh.stat("/u/schemata").nlink == 1);
  CHECK(sh.stat("/u/schemata").size == 0);
}

TEST_CASE("open permissions 39-40 and removed groups", "[groups]") {
  SimFixture f("intel-2s");
  Shell& sh = *f.sh;
  CHECK(sh.echo("/info/L3/num_closids", "1") == EACCES);
  auto ino = sh.resolve("/info/L3/num_closids");
  REQUIRE(ino.ok());
  uint32_t mode = 0644;
  REQUIRE(f.fs->setattr(*ino, &mode, nullptr, nullptr).ok());
  CHECK(sh.echo("/info/L3/num_closids", "1") == EINVAL);
  CHECK(sh.echo("/mon_data/mon_L3_00/llc_occupancy", "1") == EACCES);
  CHECK(sh.write("/schemata", std::string(4097, 'x')) == E2BIG);
  REQUIRE(sh.mkdir("/p0") == 0);
  auto t = sh.resolve("/p0/tasks");
  REQUIRE(t.ok());
  REQUIRE(sh.rmdir("/p0") == 0);
  CHECK(f.fs->write(*t, "1\n", root_caller()).error().code == ENODEV);
  CHECK(f.fs->open(*t, O_RDONLY, root_caller()).error().code == ENODEV);
  f.fs->forget(*t, 1);
  CHECK(f.fs->getattr(*t).error().code == ENOENT);
}

TEST_CASE("max_threshold_occupancy 52 and remount 51", "[info]") {
  SimFixture f("intel-2s");
  Shell& sh = *f.sh;
  CHECK(sh.echo("/info/L3_MON/max_threshold_occupancy", "4096") == 0);
  CHECK(sh.cat("/info/L3_MON/max_threshold_occupancy") == "0\n");
  CHECK(sh.echo("/info/L3_MON/max_threshold_occupancy", "99999999") == EINVAL);
  CHECK(sh.lcs() ==
        "max_threshold_occupancy: Exceeds limit (before adjustment) of 16777216 bytes\n");
  CHECK(sh.echo("/info/L3_MON/max_threshold_occupancy", "abc") == EINVAL);
  CHECK(sh.lcs() == "max_threshold_occupancy: Invalid input\n");
  CHECK(sh.echo("/info/L3_MON/max_threshold_occupancy", "0x20000") == 0);
  REQUIRE(sh.mkdir("/p0") == 0);
  CHECK(sh.echo("/schemata", "L3:0=f") == 0);
  f.fs->unmount();
  CHECK(f.fs->mount({}).ok());
  CHECK(f.fs->mount({}).error().code == EBUSY);
  CHECK(sh.ls("/").count("p0") == 0);
  CHECK(sh.cat("/schemata") == "    MB:0=100;1=100\n    L3:0=7ff;1=7ff\n");
  CHECK(sh.cat("/info/L3_MON/max_threshold_occupancy") == "131072\n");
}

TEST_CASE("mount options 50", "[info]") {
  SimFixture f("intel-cmt");
  f.fs->unmount();
  MountOptions o;
  o.cdp = true;
  CHECK(f.fs->mount(o).error().code == EINVAL);
  o = {};
  o.mba_mbps = true;
  CHECK(f.fs->mount(o).error().code == EINVAL);
  CHECK(f.fs->mount({}).ok());
}

TEST_CASE("last_cmd_status truncation", "[info]") {
  SimFixture f("intel-2s");
  Shell& sh = *f.sh;
  std::string item(600, '9');
  item[0] = 'x';
  CHECK(sh.echo("/tasks", item) == EINVAL);
  std::string want = ("Task list parsing error pid " + item).substr(0, 511) + "[truncated]\n";
  CHECK(sh.lcs() == want);
}

TEST_CASE("debug files", "[info]") {
  MountOptions o;
  o.debug = true;
  SimFixture f("intel-2s", o);
  Shell& sh = *f.sh;
  REQUIRE(sh.mkdir("/p0") == 0);
  REQUIRE(sh.mkdir("/p0/mon_groups/m") == 0);
  CHECK(sh.cat("/ctrl_hw_id") == "0\n");
  CHECK(sh.cat("/mon_hw_id") == "0\n");
  CHECK(sh.cat("/p0/ctrl_hw_id") == "1\n");
  CHECK(sh.cat("/p0/mon_hw_id") == "1\n");
  CHECK(sh.cat("/p0/mon_groups/m/mon_hw_id") == "2\n");
  CHECK(sh.ls("/p0/mon_groups/m").count("ctrl_hw_id") == 0);
}

}  // namespace resctrlfs::fs::testing
