// Unit tests of the sandbox's pure parts: the /proc rewrites, the sysfs
// topology plan (on a fake sysfs tree) and the command-line parser.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>

#include "sandbox/options.h"
#include "sandbox/proc_rewrite.h"
#include "sandbox/topology.h"

using namespace resctrlfs::sandbox;

namespace {

const char* kCpuinfo =
    "processor\t: 0\n"
    "vendor_id\t: GenuineIntel\n"
    "flags\t\t: fpu vme cat_l3 cdp_l3 sse mba cqm_llc\n"
    "vmx flags\t: vnmi cat_l3\n"
    "bugs\t\t: spectre_v1\n"
    "\n"
    "processor\t: 1\n"
    "flags\t\t: fpu vme cat_l3 cdp_l3 sse mba cqm_llc\n"
    "\n";

}  // namespace

TEST_CASE("cpuinfo flags become exactly the platform's RDT flags") {
  std::string out = rewrite_cpuinfo(kCpuinfo, {"cat_l3", "mba", "cqm", "rdt_a", "cqm_llc"});
  CHECK(out ==
        "processor\t: 0\n"
        "vendor_id\t: GenuineIntel\n"
        "flags\t\t: fpu vme sse cat_l3 mba cqm rdt_a cqm_llc\n"
        "vmx flags\t: vnmi cat_l3\n"
        "bugs\t\t: spectre_v1\n"
        "\n"
        "processor\t: 1\n"
        "flags\t\t: fpu vme sse cat_l3 mba cqm rdt_a cqm_llc\n"
        "\n");
}

TEST_CASE("cpuinfo: a platform without RDT removes every host RDT flag") {
  std::string out = rewrite_cpuinfo("flags\t\t: fpu cqm rdt_a cat_l2 cdp_l2 cqm_mbm_local x\n", {});
  CHECK(out == "flags\t\t: fpu x\n");
}

TEST_CASE("cpuinfo: flags are appended in the given order without duplicates") {
  CHECK(rewrite_cpuinfo("flags\t: a", {"cqm", "cat_l3", "cqm"}) == "flags\t: a cqm cat_l3");
}

TEST_CASE("cpuinfo: lwp is the platform's, never the host's") {
  // A family-15h host (lwp among its 8000_0001h ECX flags) under a platform
  // without LWP loses it; under one with LWP (cpuinfo_rdt_flags gives
  // "lwp") it keeps it, once, at the end like every platform flag; a host
  // without LWP gets it from such a platform.
  const char* fam15 = "flags\t\t: fpu sse xop skinit wdt lwp fma4 tce\n";
  CHECK(rewrite_cpuinfo(fam15, {}) == "flags\t\t: fpu sse xop skinit wdt fma4 tce\n");
  CHECK(rewrite_cpuinfo(fam15, {"cat_l3", "cqm"}) ==
        "flags\t\t: fpu sse xop skinit wdt fma4 tce cat_l3 cqm\n");
  CHECK(rewrite_cpuinfo(fam15, {"lwp"}) == "flags\t\t: fpu sse xop skinit wdt fma4 tce lwp\n");
  CHECK(rewrite_cpuinfo("flags\t\t: fpu sse avx2\n", {"lwp"}) == "flags\t\t: fpu sse avx2 lwp\n");
  // Only the flags line: another line naming lwp is left alone.
  CHECK(rewrite_cpuinfo("model name\t: lwp\nflags\t\t: lwp\n", {}) ==
        "model name\t: lwp\nflags\t\t:\n");
}

TEST_CASE("filesystems gains exactly one nodev resctrl line") {
  std::string fs = "nodev\tsysfs\n\text4\nnodev\tfuse\n";
  std::string out = add_resctrl_filesystem(fs);
  CHECK(out == fs + "nodev\tresctrl\n");
  CHECK(add_resctrl_filesystem(out) == out);
  CHECK(add_resctrl_filesystem("nodev\tsysfs") == "nodev\tsysfs\nnodev\tresctrl\n");
}

TEST_CASE("resctrl mount options are picked from -o in the kernel's order") {
  CHECK(resctrl_mount_options("") == std::vector<std::string>{});
  CHECK(resctrl_mount_options("allow_other,mba_MBps,cdp") ==
        std::vector<std::string>{"cdp", "mba_MBps"});
  CHECK(resctrl_mount_options("debug,cdpl2") == std::vector<std::string>{"cdpl2", "debug"});
}

TEST_CASE("mounts: the FUSE line at the mount point reads as the kernel's resctrl") {
  std::string mounts =
      "sysfs /sys sysfs rw,relatime 0 0\n"
      "resctrl /sys/fs/resctrl fuse.resctrl rw,nosuid,nodev,relatime,user_id=0,group_id=0,"
      "default_permissions,allow_other 0 0\n"
      "tmpfs /tmp tmpfs rw 0 0\n";
  CHECK(rewrite_mounts(mounts, "/sys/fs/resctrl", {}) ==
        "sysfs /sys sysfs rw,relatime 0 0\n"
        "resctrl /sys/fs/resctrl resctrl rw,nosuid,nodev,relatime 0 0\n"
        "tmpfs /tmp tmpfs rw 0 0\n");
  CHECK(rewrite_mounts(mounts, "/sys/fs/resctrl", {"cdp", "mba_MBps"})
            .find("resctrl /sys/fs/resctrl resctrl rw,nosuid,nodev,relatime,cdp,mba_MBps 0 0\n") !=
        std::string::npos);
  // No mount there: unchanged.
  CHECK(rewrite_mounts(mounts, "/mnt/x", {"cdp"}) == mounts);
}

TEST_CASE("mounts: of stacked mounts the visible (last) one is rewritten") {
  std::string mounts =
      "none /sys/fs/resctrl tmpfs rw 0 0\n"
      "resctrl /sys/fs/resctrl fuse.resctrl rw,relatime,user_id=0 0 0\n";
  CHECK(rewrite_mounts(mounts, "/sys/fs/resctrl", {}) ==
        "none /sys/fs/resctrl tmpfs rw 0 0\n"
        "resctrl /sys/fs/resctrl resctrl rw,relatime 0 0\n");
}

TEST_CASE("mountinfo: fstype, source and super options are rewritten, the rest kept") {
  std::string mi =
      "23 27 0:22 / /sys rw,relatime - sysfs sysfs rw\n"
      "50 45 0:60 / /sys/fs/resctrl rw,nosuid,nodev,relatime shared:7 master:1 - fuse.resctrl "
      "resctrl rw,user_id=0,group_id=0\n";
  CHECK(rewrite_mountinfo(mi, "/sys/fs/resctrl", {"mba_MBps"}) ==
        "23 27 0:22 / /sys rw,relatime - sysfs sysfs rw\n"
        "50 45 0:60 / /sys/fs/resctrl rw,nosuid,nodev,relatime shared:7 master:1 - resctrl "
        "resctrl rw,mba_MBps\n");
  CHECK(has_mount(mi, "/sys/fs/resctrl"));
  CHECK(!has_mount(mi, "/sys/fs"));
  std::string ro = "5 1 0:1 / /sys/fs/resctrl ro - fuse.resctrl resctrl ro,user_id=0\n";
  CHECK(rewrite_mountinfo(ro, "/sys/fs/resctrl", {}) ==
        "5 1 0:1 / /sys/fs/resctrl ro - resctrl resctrl ro\n");
}

TEST_CASE("mount points with spaces are matched in their escaped form") {
  std::string mi = "5 1 0:1 / /mnt/a\\040b rw - fuse.resctrl resctrl rw\n";
  CHECK(has_mount(mi, "/mnt/a b"));
  CHECK(rewrite_mountinfo(mi, "/mnt/a b", {}) ==
        "5 1 0:1 / /mnt/a\\040b rw - resctrl resctrl rw\n");
}

namespace {

// A fake /sys/devices/system/cpu with `n` CPUs on one package sharing L3 0.
struct FakeSysfs {
  std::filesystem::path root;
  explicit FakeSysfs(unsigned n) {
    char templ[] = "/tmp/sandbox-topo-XXXXXX";
    root = ::mkdtemp(templ);
    for (unsigned c = 0; c < n; ++c) {
      auto cpu = root / ("cpu" + std::to_string(c));
      std::filesystem::create_directories(cpu / "topology");
      put(cpu / "topology/physical_package_id", "0\n");
      for (auto f : {"package_cpus", "core_siblings"}) put(cpu / "topology" / f, "3\n");
      for (auto f : {"package_cpus_list", "core_siblings_list"}) put(cpu / "topology" / f, "0-1\n");
      for (int idx = 0; idx < 4; ++idx) {
        auto d = cpu / "cache" / ("index" + std::to_string(idx));
        std::filesystem::create_directories(d);
        int level = idx < 2 ? 1 : idx;
        put(d / "level", std::to_string(level) + "\n");
        put(d / "id", (level == 3 ? "0" : std::to_string(c)) + "\n");
        put(d / "shared_cpu_map", level == 3 ? "3\n" : std::to_string(1 << c) + "\n");
        put(d / "shared_cpu_list", level == 3 ? "0-1\n" : std::to_string(c) + "\n");
        put(d / "size", level == 3 ? "32768K\n" : level == 2 ? "1024K\n" : "32K\n");
      }
    }
    std::filesystem::create_directories(root / "cpufreq");  // not a CPU
  }
  ~FakeSysfs() { std::filesystem::remove_all(root); }
  static void put(const std::filesystem::path& p, const std::string& s) { std::ofstream(p) << s; }
};

}  // namespace

TEST_CASE("host topology is read from sysfs") {
  FakeSysfs fake(2);
  auto host = read_host_topology(fake.root.string());
  REQUIRE(host.ok());
  REQUIRE(host->size() == 2);
  CHECK((*host)[1].cpu == 1);
  CHECK((*host)[1].package == 0);
  CHECK((*host)[1].cache_id(2) == 1);
  CHECK((*host)[1].cache_id(3) == 0);
  CHECK(topology_matches(*host, {{0, 0, 0}, {0, 1, 0}}));
  CHECK(topology_matches(*host, {{0, -1, 0}, {0, -1, 0}}));  // no L2 in the platform
  CHECK(!topology_matches(*host, {{0, 0, 0}, {1, 1, 1}}));
  CHECK(!topology_matches(*host, {{0, 0, 0}}));
}

TEST_CASE("a two-socket platform on a one-socket host binds ids and cpu sets of CPU 1 and 0") {
  FakeSysfs fake(2);
  auto host = read_host_topology(fake.root.string());
  REQUIRE(host.ok());
  auto plan = plan_topology_binds(*host, {{0, 0, 0}, {1, 1, 1}});
  REQUIRE(plan.ok());
  std::map<std::string, std::string> binds;
  for (auto& b : *plan) binds[b.target.substr(fake.root.string().size() + 1)] = b.content;
  std::map<std::string, std::string> expect = {
      {"cpu0/topology/package_cpus", "1\n"},        {"cpu0/topology/package_cpus_list", "0\n"},
      {"cpu0/topology/core_siblings", "1\n"},       {"cpu0/topology/core_siblings_list", "0\n"},
      {"cpu0/cache/index3/shared_cpu_map", "1\n"},  {"cpu0/cache/index3/shared_cpu_list", "0\n"},
      {"cpu1/topology/physical_package_id", "1\n"}, {"cpu1/topology/package_cpus", "2\n"},
      {"cpu1/topology/package_cpus_list", "1\n"},   {"cpu1/topology/core_siblings", "2\n"},
      {"cpu1/topology/core_siblings_list", "1\n"},  {"cpu1/cache/index3/id", "1\n"},
      {"cpu1/cache/index3/shared_cpu_map", "2\n"},  {"cpu1/cache/index3/shared_cpu_list", "1\n"},
  };
  CHECK(binds == expect);
}

TEST_CASE("the platform's L2 and L3 sizes are bound where the host's differ") {
  FakeSysfs fake(2);
  auto host = read_host_topology(fake.root.string());
  REQUIRE(host.ok());
  auto plan = plan_topology_binds(*host, {{0, 0, 0}, {0, 1, 0}}, {1024 * 1024, 16 * 1024 * 1024});
  REQUIRE(plan.ok());
  std::map<std::string, std::string> binds;
  for (auto& b : *plan) binds[b.target.substr(fake.root.string().size() + 1)] = b.content;
  std::map<std::string, std::string> expect = {{"cpu0/cache/index3/size", "16384K\n"},
                                               {"cpu1/cache/index3/size", "16384K\n"}};
  CHECK(binds == expect);  // L2 is the host's 1024K already; L1 is never touched
  plan = plan_topology_binds(*host, {{0, 0, 0}, {0, 1, 0}}, {512 * 1024, 0});
  REQUIRE(plan.ok());
  binds.clear();
  for (auto& b : *plan) binds[b.target.substr(fake.root.string().size() + 1)] = b.content;
  expect = {{"cpu0/cache/index2/size", "512K\n"}, {"cpu1/cache/index2/size", "512K\n"}};
  CHECK(binds == expect);
}

TEST_CASE("cpuinfo: package, siblings, cores and cache size of each processor") {
  const std::string host =
      "processor\t: 0\nvendor_id\t: AuthenticAMD\nstepping\t: 1\ncpu MHz\t\t: 2000.000\n"
      "cache size\t: 1024 KB\nphysical id\t: 0\nsiblings\t: 4\ncore id\t\t: 0\n"
      "cpu cores\t: 2\nflags\t\t: fpu\n\n"
      "processor\t: 1\nstepping\t: 1\ncpu MHz\t\t: 2000.000\ncache size\t: 1024 KB\n"
      "physical id\t: 0\nsiblings\t: 4\ncpu cores\t: 2\n\n"
      "processor\t: 2\nstepping\t: 1\ncache size\t: 1024 KB\nphysical id\t: 0\n"
      "siblings\t: 4\ncpu cores\t: 2\n\n"
      "processor\t: 3\nstepping\t: 1\ncache size\t: 1024 KB\nphysical id\t: 0\n"
      "siblings\t: 4\ncpu cores\t: 2\n\n";
  const std::string want =
      "processor\t: 0\nvendor_id\t: AuthenticAMD\nstepping\t: 1\ncpu MHz\t\t: 2000.000\n"
      "cache size\t: 512 KB\nphysical id\t: 0\nsiblings\t: 3\ncore id\t\t: 0\n"
      "cpu cores\t: 1\nflags\t\t: fpu\n\n"
      "processor\t: 1\nstepping\t: 1\ncpu MHz\t\t: 2000.000\ncache size\t: 512 KB\n"
      "physical id\t: 0\nsiblings\t: 3\ncpu cores\t: 1\n\n"
      "processor\t: 2\nstepping\t: 1\ncache size\t: 512 KB\nphysical id\t: 0\n"
      "siblings\t: 3\ncpu cores\t: 1\n\n"
      "processor\t: 3\nstepping\t: 1\ncache size\t: 512 KB\nphysical id\t: 1\n"
      "siblings\t: 1\ncpu cores\t: 1\n\n";
  CHECK(rewrite_cpuinfo_topology(host, {0, 0, 0, 1}, 512) == want);
  // Two threads per core on the host: cores are siblings / 2.
  CHECK(rewrite_cpuinfo_topology("processor\t: 0\nsiblings\t: 8\ncpu cores\t: 4\n",
                                 {0, 0, 0, 0, 1, 1, 1, 1},
                                 0) == "processor\t: 0\nsiblings\t: 4\ncpu cores\t: 2\n");
  // No cache size line: one is added after cpu MHz (else stepping).
  CHECK(rewrite_cpuinfo_topology("processor\t: 0\nstepping\t: 4\nflags\t\t: x\n", {0}, 16384) ==
        "processor\t: 0\nstepping\t: 4\ncache size\t: 16384 KB\nflags\t\t: x\n");
  // Processors the platform does not place keep their lines; size 0 keeps the host's.
  const std::string other = "processor\t: 5\ncache size\t: 1 KB\nphysical id\t: 3\n";
  CHECK(rewrite_cpuinfo_topology(other, {0, 1}, 0) == other);
}

TEST_CASE("cpuinfo: every vendor_id line shows the platform's vendor") {
  const std::string host =
      "processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\n\n"
      "processor\t: 1\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\n";
  CHECK(rewrite_cpuinfo_vendor(host, "GenuineIntel") ==
        "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 25\n\n"
        "processor\t: 1\nvendor_id\t: GenuineIntel\ncpu family\t: 25\n");
  // Same vendor, or no vendor known: unchanged; other lines never touched.
  CHECK(rewrite_cpuinfo_vendor(host, "AuthenticAMD") == host);
  CHECK(rewrite_cpuinfo_vendor(host, "") == host);
  CHECK(rewrite_cpuinfo_vendor("model name\t: vendor_id\n", "GenuineIntel") ==
        "model name\t: vendor_id\n");
}

TEST_CASE("mountinfo: the resctrl mounts a new namespace must not keep, deepest first") {
  const std::string mi =
      "22 1 0:21 / /sys rw shared:7 - sysfs sysfs rw\n"
      "40 22 0:35 / /sys/fs/resctrl rw shared:20 - resctrl resctrl rw\n"
      "61 1 0:52 / /mnt/my\\040tree rw,nosuid shared:30 - fuse.resctrl resctrl rw,user_id=0\n"
      "62 61 0:53 / /mnt/my\\040tree/x/y rw - fuse.resctrl resctrl rw\n"
      "63 1 0:54 / /mnt/other rw - fuse.sshfs host: rw\n"
      "64 1 0:55 / /mnt/resctrl rw - tmpfs resctrl rw\n";
  CHECK(resctrl_mount_points(mi) ==
        std::vector<std::string>{"/mnt/my tree/x/y", "/sys/fs/resctrl", "/mnt/my tree"});
  CHECK(resctrl_mount_points("garbage\n1 2 3\n").empty());
}

TEST_CASE("options: set_platform rewrites the daemon's --platform") {
  auto o = parse_options({"--platform", "intel-2s", "-o", "cdp", "--", "true"});
  REQUIRE(o.ok());
  set_platform(*o, "intel-2s@host");
  CHECK(o->platform == "intel-2s@host");
  CHECK(o->daemon_args == std::vector<std::string>{"--platform", "intel-2s@host", "-o", "cdp"});
  o = parse_options({"--platform=amd-2s"});
  REQUIRE(o.ok());
  set_platform(*o, "amd-2s@host");
  CHECK(o->daemon_args == std::vector<std::string>{"--platform=amd-2s@host"});
  o = parse_options({"-o", "cdp"});
  REQUIRE(o.ok());
  set_platform(*o, "x");
  CHECK(o->daemon_args == std::vector<std::string>{"-o", "cdp", "--platform", "x"});
}

TEST_CASE("options: --list-platforms is the sandbox's own, not passed to the daemon") {
  auto o = parse_options({"--list-platforms"});
  REQUIRE(o.ok());
  CHECK(o->list_platforms);
  CHECK(o->daemon_args.empty());
  CHECK(usage().find("--list-platforms") != std::string::npos);
}

TEST_CASE("a platform with another CPU count is refused with a message") {
  FakeSysfs fake(2);
  auto host = read_host_topology(fake.root.string());
  REQUIRE(host.ok());
  auto plan = plan_topology_binds(*host, {{0, 0, 0}, {0, 1, 0}, {1, 2, 1}, {1, 3, 1}});
  REQUIRE(!plan.ok());
  CHECK(plan.error().code == ENODEV);
  CHECK(plan.error().message.find("4 CPUs but this host has 2") != std::string::npos);
}

TEST_CASE("options: daemon options pass through, the sandbox reads what it needs") {
  auto o = parse_options({"--platform", "intel-2s", "-o", "cdp", "-f", "--control=/run/s",
                          "-omba_MBps", "--daemon", "/x/resctrlfsd", "--", "pqos", "-I", "-d"});
  REQUIRE(o.ok());
  CHECK(o->platform == "intel-2s");
  CHECK(o->mount_options == "cdp,mba_MBps");
  CHECK(o->daemon_path == "/x/resctrlfsd");
  CHECK(o->daemon_args == std::vector<std::string>{"--platform", "intel-2s", "-o", "cdp",
                                                   "--control=/run/s", "-omba_MBps"});
  CHECK(o->command == std::vector<std::string>{"pqos", "-I", "-d"});
  CHECK(!o->ignore_topology);
  CHECK(!o->has_state_dir);
  o = parse_options({"--state-dir", "/var/lib/x"});
  REQUIRE(o.ok());
  CHECK(o->has_state_dir);
  CHECK(o->daemon_args == std::vector<std::string>{"--state-dir", "/var/lib/x"});
}

TEST_CASE("options: defaults, --platform=, --backend, help, errors") {
  auto o = parse_options({});
  REQUIRE(o.ok());
  CHECK(o->platform == "host");
  CHECK(o->backend == "sim");
  CHECK(o->command.empty());
  o = parse_options({"--platform=amd-2s", "--backend", "msr", "--ignore-topology", "-h", "--"});
  REQUIRE(o.ok());
  CHECK(o->platform == "amd-2s");
  CHECK(o->backend == "msr");
  CHECK(o->ignore_topology);
  CHECK(o->help);
  CHECK(o->command.empty());
  CHECK(!parse_options({"--platform"}).ok());
  CHECK(!parse_options({"-o"}).ok());
  CHECK(!parse_options({"--daemon"}).ok());
}

TEST_CASE("options: a mistyped option is the sandbox's error, with a suggestion") {
  auto o = parse_options({"--platfrom", "intel-2s", "--", "true"});
  REQUIRE(!o.ok());
  CHECK(o.error().message.find("unknown option '--platfrom' (did you mean --platform?)") == 0);
  o = parse_options({"--verbsoe"});
  REQUIRE(!o.ok());
  CHECK(o.error().message.find("(did you mean --verbose?)") != std::string::npos);
  o = parse_options({"--no-such-thing-at-all"});
  REQUIRE(!o.ok());
  CHECK(o.error().message.find("did you mean") == std::string::npos);
  CHECK(o.error().message.find("--help") != std::string::npos);
  // A command before "--" is no daemon argument either.
  o = parse_options({"--platform", "intel-2s", "cat", "/proc/self/mounts"});
  REQUIRE(!o.ok());
  CHECK(o.error().message.find("unexpected argument 'cat': the command goes after --") == 0);
  // The daemon's options pass with their values, in both spellings.
  o = parse_options({"--log-level", "debug", "--rdt=l3cat", "--tasks-from-proc", "--broker", "/s"});
  REQUIRE(o.ok());
  CHECK(o->has_log_level);
  CHECK(o->daemon_args == std::vector<std::string>{"--log-level", "debug", "--rdt=l3cat",
                                                   "--tasks-from-proc", "--broker", "/s"});
  CHECK(!parse_options({"--log-level"}).ok());
  CHECK(!parse_options({"--tasks-from-proc=1"}).ok());
  o = parse_options({"-v", "--verbose"});
  REQUIRE(o.ok());
  CHECK(o->verbose);
  CHECK(o->daemon_args.empty());
  CHECK(usage().find("-v, --verbose") != std::string::npos);
}

TEST_CASE("options: --hw-root is read and passed on to the daemon") {
  auto o = parse_options({});
  REQUIRE(o.ok());
  CHECK(o->hw_root == "/");
  o = parse_options({"--backend", "msr", "--hw-root", "/tmp/hw", "--rdt-from-cpuid", "--", "x"});
  REQUIRE(o.ok());
  CHECK(o->hw_root == "/tmp/hw");
  CHECK(o->daemon_args ==
        std::vector<std::string>{"--backend", "msr", "--hw-root", "/tmp/hw", "--rdt-from-cpuid"});
  o = parse_options({"--hw-root=/r"});
  REQUIRE(o.ok());
  CHECK(o->hw_root == "/r");
  CHECK(!parse_options({"--hw-root"}).ok());
}

TEST_CASE("options: --cpus host (default) or platform, not passed to the daemon") {
  auto o = parse_options({});
  REQUIRE(o.ok());
  CHECK(o->cpus == "host");
  o = parse_options({"--cpus", "platform", "--platform", "intel-2s"});
  REQUIRE(o.ok());
  CHECK(o->cpus == "platform");
  CHECK(o->daemon_args == std::vector<std::string>{"--platform", "intel-2s"});
  o = parse_options({"--cpus=host"});
  REQUIRE(o.ok());
  CHECK(o->cpus == "host");
  auto bad = parse_options({"--cpus", "64"});
  REQUIRE(!bad.ok());
  CHECK(bad.error().message.find("host or platform") != std::string::npos);
  CHECK(!parse_options({"--cpus"}).ok());
}

namespace {

std::map<std::string, std::string> tree_of(const std::vector<FileBind>& files) {
  std::map<std::string, std::string> m;
  for (const auto& f : files) m[f.target] = f.content;
  return m;
}

// intel-2s: 8 CPUs, packages 0 (0-3) and 1 (4-7), an L2 per CPU, an L3
// per package.
std::vector<CpuPlacement> intel_2s() {
  std::vector<CpuPlacement> v;
  for (int c = 0; c < 8; ++c) v.push_back({c / 4, c, c / 4});
  return v;
}

}  // namespace

TEST_CASE("virtual CPUs: sysfs's cpu tree has the platform's CPUs and caches") {
  auto t = tree_of(virtual_cpu_tree(intel_2s(), {1 << 20, 16 << 20}, 48 << 10, 32 << 10));
  CHECK(t["online"] == "0-7\n");
  CHECK(t["possible"] == "0-7\n");
  CHECK(t["present"] == "0-7\n");
  CHECK(t["offline"] == "\n");
  CHECK(t.count("cpu7/online") == 1);
  CHECK(t.count("cpu8/online") == 0);
  CHECK(t["cpu5/topology/physical_package_id"] == "1\n");
  CHECK(t["cpu5/topology/core_id"] == "1\n");
  CHECK(t["cpu5/topology/package_cpus_list"] == "4-7\n");
  CHECK(t["cpu5/topology/package_cpus"] == "f0\n");
  CHECK(t["cpu5/topology/core_siblings_list"] == "4-7\n");
  CHECK(t["cpu5/topology/thread_siblings_list"] == "5\n");
  CHECK(t["cpu5/cache/index0/type"] == "Data\n");
  CHECK(t["cpu5/cache/index0/size"] == "48K\n");
  CHECK(t["cpu5/cache/index1/type"] == "Instruction\n");
  CHECK(t["cpu5/cache/index2/level"] == "2\n");
  CHECK(t["cpu5/cache/index2/id"] == "5\n");
  CHECK(t["cpu5/cache/index2/shared_cpu_list"] == "5\n");
  CHECK(t["cpu5/cache/index2/size"] == "1024K\n");
  CHECK(t["cpu5/cache/index3/level"] == "3\n");
  CHECK(t["cpu5/cache/index3/id"] == "1\n");
  CHECK(t["cpu5/cache/index3/shared_cpu_list"] == "4-7\n");
  CHECK(t["cpu5/cache/index3/shared_cpu_map"] == "f0\n");
  CHECK(t["cpu5/cache/index3/size"] == "16384K\n");
  CHECK(t["cpu0/cache/index3/number_of_sets"] == "16384\n");
}

TEST_CASE("virtual CPUs: SMT siblings share a core, and a platform without L3 has no index3") {
  std::vector<CpuPlacement> v = {{0, 0, -1, 0}, {0, 0, -1, 0}, {0, 1, -1, 1}, {0, 1, -1, 1}};
  auto t = tree_of(virtual_cpu_tree(v, {}));
  CHECK(t["cpu1/topology/core_id"] == "0\n");
  CHECK(t["cpu1/topology/thread_siblings_list"] == "0-1\n");
  CHECK(t["cpu3/topology/core_cpus_list"] == "2-3\n");
  CHECK(t["cpu3/cache/index0/id"] == "2\n");
  CHECK(t["cpu3/cache/index2/shared_cpu_list"] == "2-3\n");
  CHECK(t.count("cpu0/cache/index3/level") == 0);
}

TEST_CASE("virtual CPUs: /proc/cpuinfo has one block per virtual CPU") {
  const char* host =
      "processor\t: 0\n"
      "vendor_id\t: AuthenticAMD\n"
      "physical id\t: 0\n"
      "siblings\t: 2\n"
      "core id\t\t: 0\n"
      "cpu cores\t: 2\n"
      "apicid\t\t: 0\n"
      "initial apicid\t: 0\n"
      "flags\t\t: fpu\n"
      "\n"
      "processor\t: 1\n"
      "core id\t\t: 1\n"
      "\n";
  std::string out = virtual_cpuinfo(host, {0, 1, 2, 3, 0, 1, 2, 3});
  std::vector<int> packages = {0, 0, 0, 0, 1, 1, 1, 1};
  out = rewrite_cpuinfo_vendor(rewrite_cpuinfo_topology(out, packages, 16384), "GenuineIntel");
  size_t n = 0;
  for (size_t p = out.find("processor\t: "); p != std::string::npos;
       p = out.find("processor\t: ", p + 1))
    ++n;
  CHECK(n == 8);
  size_t five = out.find("processor\t: 5\n");
  REQUIRE(five != std::string::npos);
  std::string block = out.substr(five, out.find("\n\n", five) - five);
  CHECK(block.find("physical id\t: 1\n") != std::string::npos);
  CHECK(block.find("core id\t\t: 1\n") != std::string::npos);
  CHECK(block.find("apicid\t\t: 5\n") != std::string::npos);
  CHECK(block.find("initial apicid\t: 5") != std::string::npos);
  CHECK(block.find("siblings\t: 4\n") != std::string::npos);
  CHECK(block.find("vendor_id\t: GenuineIntel\n") != std::string::npos);
  CHECK(out.find("AuthenticAMD") == std::string::npos);
  CHECK(virtual_cpuinfo("no processors here\n", {0}).empty());
}
