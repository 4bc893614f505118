// Tests of the sandbox's seccomp supervisor: the pure parts (mount table
// rewrites by device, the resctrl statfs answer, --intercept), path
// resolution in another process's view, and, as root, the supervisor itself
// answering a forked child's statfs, fstatfs and mount-table opens from the
// main and a second thread, with callers killed in the middle of calls.
#include <fcntl.h>
#include <linux/openat2.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "sandbox/namespace.h"
#include "sandbox/path_resolve.h"
#include "sandbox/proc_rewrite.h"
#include "sandbox/seccomp_supervisor.h"
#include "tests/catch_skip.h"
#include "tests/temp_files.h"

using namespace resctrlfs::sandbox;
namespace stdfs = std::filesystem;

namespace {

const char* kMountinfo =
    "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
    "40 22 0:52 / /sys/fs/resctrl rw,nosuid,nodev,relatime - fuse.resctrl resctrl "
    "rw,user_id=0,group_id=0\n"
    "41 22 0:53 / /tmp rw - tmpfs tmpfs rw\n"
    "50 41 0:52 / /run/ctr/rootfs/sys/fs/resctrl ro,relatime master:3 - fuse.resctrl resctrl "
    "rw,user_id=0,group_id=0\n";
const char* kMounts =
    "/dev/sda1 / ext4 rw,relatime 0 0\n"
    "resctrl /sys/fs/resctrl fuse.resctrl rw,nosuid,nodev,relatime,user_id=0,group_id=0 0 0\n"
    "tmpfs /tmp tmpfs rw 0 0\n"
    "resctrl /run/ctr/rootfs/sys/fs/resctrl fuse.resctrl ro,relatime,user_id=0,group_id=0 0 0\n";

// A temporary directory of this file's tests (tests/temp_files.h).
struct TempDir : resctrlfs::test::TempDir {
  TempDir() : resctrlfs::test::TempDir("seccomp-test") {}
};

UniqueFd open_path(const std::string& p) { return UniqueFd(::open(p.c_str(), O_PATH | O_CLOEXEC)); }

bool same_file(int a, const std::string& b) {
  struct stat sa, sb;
  return ::fstat(a, &sa) == 0 && ::stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev &&
         sa.st_ino == sb.st_ino;
}

}  // namespace

TEST_CASE("mountinfo: every mount of the device becomes resctrl, others are kept") {
  auto r = rewrite_mountinfo_of_device(kMountinfo, "0:52", {"cdp", "mba_MBps"});
  CHECK(r.text ==
        "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
        "40 22 0:52 / /sys/fs/resctrl rw,nosuid,nodev,relatime - resctrl resctrl rw,cdp,mba_MBps\n"
        "41 22 0:53 / /tmp rw - tmpfs tmpfs rw\n"
        "50 41 0:52 / /run/ctr/rootfs/sys/fs/resctrl ro,relatime master:3 - resctrl resctrl "
        "rw,cdp,mba_MBps\n");
  CHECK(r.lines == std::vector<size_t>{1, 3});
  CHECK(r.line_count == 4);
  CHECK(rewrite_mountinfo_of_device(kMountinfo, "0:5", {}).lines.empty());
}

TEST_CASE("mounts: the lines of the rewritten mountinfo lines become resctrl") {
  auto mi = rewrite_mountinfo_of_device(kMountinfo, "0:52", {"cdp"});
  const char* want =
      "/dev/sda1 / ext4 rw,relatime 0 0\n"
      "resctrl /sys/fs/resctrl resctrl rw,nosuid,nodev,relatime,cdp 0 0\n"
      "tmpfs /tmp tmpfs rw 0 0\n"
      "resctrl /run/ctr/rootfs/sys/fs/resctrl resctrl ro,relatime,cdp 0 0\n";
  CHECK(rewrite_mounts_like(kMounts, mi) == want);
  // A mount added between the two reads: matched by mount point instead.
  std::string more = std::string(kMounts) + "tmpfs /mnt tmpfs rw 0 0\n";
  CHECK(rewrite_mounts_like(more, mi) == std::string(want) + "tmpfs /mnt tmpfs rw 0 0\n");
}

TEST_CASE("several devices: each mount gets its own device's options") {
  auto mi = rewrite_mountinfo_of_devices(
      kMountinfo, {ResctrlDevice{"0:53", {"debug"}}, ResctrlDevice{"0:52", {"cdp"}}});
  CHECK(mi.lines == std::vector<size_t>{1, 2, 3});
  CHECK(mi.text.find("41 22 0:53 / /tmp rw - resctrl resctrl rw,debug\n") != std::string::npos);
  CHECK(rewrite_mounts_like(kMounts, mi) ==
        "/dev/sda1 / ext4 rw,relatime 0 0\n"
        "resctrl /sys/fs/resctrl resctrl rw,nosuid,nodev,relatime,cdp 0 0\n"
        "resctrl /tmp resctrl rw,debug 0 0\n"
        "resctrl /run/ctr/rootfs/sys/fs/resctrl resctrl ro,relatime,cdp 0 0\n");
  CHECK(rewrite_mountinfo_of_devices(kMountinfo, {}).lines.empty());
}

TEST_CASE("mount(2) data for resctrl is parsed as the kernel parses it") {
  auto ok = parse_resctrl_mount_data("debug,,rw,mba_MBps,cdp,relatime_x_not", true);
  CHECK(ok.error == EINVAL);
  CHECK(ok.message == "resctrl: Unknown parameter 'relatime_x_not'");
  auto r = parse_resctrl_mount_data("debug,,rw,mba_MBps,cdp,ro,lazytime", true);
  CHECK(r.error == 0);
  CHECK(r.options == std::vector<std::string>{"cdp", "mba_MBps", "debug"});
  CHECK(parse_resctrl_mount_data("", true).options.empty());
  auto v = parse_resctrl_mount_data("cdp=1", true);
  CHECK(v.error == EINVAL);
  CHECK(v.message == "resctrl: Unexpected value for 'cdp'");
  CHECK(parse_resctrl_mount_data("source=x", true).message == "Multiple sources");
  CHECK(parse_resctrl_mount_data("source=x", false).error == 0);
  CHECK(parse_resctrl_mount_data("=x", true).message == "Unnamed parameter");
}

TEST_CASE("the statfs answer is kernfs's for resctrl") {
  constexpr long kValid = 0x20;  // ST_VALID: the kernel sets it on every statfs answer
  dev_t dev = makedev(0, 52);
  struct statfs s = resctrl_statfs(dev, kValid | ST_RELATIME | ST_NOSUID);
  CHECK(s.f_type == 0x7655821);
  CHECK(s.f_bsize == ::sysconf(_SC_PAGESIZE));
  CHECK(s.f_frsize == s.f_bsize);
  CHECK(s.f_namelen == 255);
  CHECK(s.f_blocks == 0);
  CHECK(s.f_bfree == 0);
  CHECK(s.f_bavail == 0);
  CHECK(s.f_files == 0);
  CHECK(s.f_ffree == 0);
  CHECK(s.f_flags == (kValid | ST_RELATIME | ST_NOSUID));
  int fsid[2];
  std::memcpy(fsid, &s.f_fsid, sizeof fsid);
  CHECK(fsid[0] == 52);
  CHECK(fsid[1] == 0);
}

TEST_CASE("option --intercept values") {
  CHECK(*parse_intercept("all") == Intercept::kAll);
  CHECK(*parse_intercept("statfs-only") == Intercept::kStatfsOnly);
  CHECK(*parse_intercept("none") == Intercept::kNone);
  CHECK(!parse_intercept("opens"));
}

TEST_CASE("paths resolve from the process's root and cwd") {
  TempDir t;
  const std::string& R = t.path;  // the process's root
  stdfs::create_directories(R + "/a/b");
  stdfs::create_directories(R + "/etc");
  { std::ofstream(R + "/etc/target") << "x"; }
  stdfs::create_symlink("/etc/target", R + "/a/abs");     // absolute: inside the root
  stdfs::create_symlink("../../etc", R + "/a/b/up");      // relative, across directories
  stdfs::create_symlink("../../../../..", R + "/a/esc");  // climbs past the root
  stdfs::create_symlink("loop", R + "/a/loop");
  UniqueFd root = open_path(R);
  UniqueFd cwd = open_path(R + "/a/b");
  ProcessView v;
  v.root_fd = root.get();
  v.tgid = ::getpid();
  v.tid = ::getpid();
  ResolveOptions o;

  auto r = resolve_in_view(v, cwd.get(), "/a/abs", o);
  REQUIRE(r);
  CHECK(same_file(r->fd.get(), R + "/etc/target"));
  CHECK(r->name == "target");
  CHECK(same_file(r->parent_fd.get(), R + "/etc"));
  r = resolve_in_view(v, cwd.get(), "up/target", o);
  REQUIRE(r);
  CHECK(same_file(r->fd.get(), R + "/etc/target"));
  r = resolve_in_view(v, cwd.get(), "../../../../../etc/target", o);
  REQUIRE(r);
  CHECK(same_file(r->fd.get(), R + "/etc/target"));
  r = resolve_in_view(v, cwd.get(), "/a/esc", o);
  REQUIRE(r);
  CHECK(same_file(r->fd.get(), R));
  r = resolve_in_view(v, cwd.get(), "/a/loop", o);
  REQUIRE(!r);
  CHECK(r.error().code == ELOOP);
  CHECK(resolve_in_view(v, cwd.get(), "/nope/x", o).error().code == ENOENT);
  CHECK(resolve_in_view(v, cwd.get(), "/etc/target/x", o).error().code == ENOTDIR);
  o.follow_last = false;
  r = resolve_in_view(v, cwd.get(), "/a/abs", o);
  REQUIRE(r);
  CHECK(r->name == "abs");
  o = ResolveOptions{};
  o.no_symlinks = true;
  CHECK(resolve_in_view(v, cwd.get(), "/a/abs", o).error().code == ELOOP);
  // RESOLVE_IN_ROOT: the start directory is the root for `/` and `..`.
  o = ResolveOptions{};
  o.root_is_start = true;
  UniqueFd a = open_path(R + "/a");
  r = resolve_in_view(v, a.get(), "/b/../../b", o);
  REQUIRE(r);
  CHECK(same_file(r->fd.get(), R + "/a/b"));
}

TEST_CASE("/proc/self and /proc/thread-self name the traced process, magic links are followed") {
  // The child says when it is in /tmp (a byte on a pipe): however late a
  // busy machine runs it, not within a time.
  int in_tmp[2];
  REQUIRE(::pipe(in_tmp) == 0);
  pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::close(in_tmp[0]);
    if (::chdir("/tmp") != 0) ::_exit(1);
    if (::write(in_tmp[1], "c", 1) != 1) ::_exit(1);
    ::pause();
    ::_exit(0);
  }
  ::close(in_tmp[1]);
  char c = 0;
  ssize_t got;
  do {
    got = ::read(in_tmp[0], &c, 1);
  } while (got < 0 && errno == EINTR);
  ::close(in_tmp[0]);
  REQUIRE(got == 1);
  UniqueFd root = open_path("/");
  UniqueFd cwd = open_path("/");
  ProcessView v;
  v.root_fd = root.get();
  v.tgid = child;
  v.tid = child;
  std::string proc = "/proc/" + std::to_string(child);
  auto r = resolve_in_view(v, cwd.get(), "/proc/self/mountinfo", ResolveOptions{});
  REQUIRE(r);
  CHECK(r->name == "mountinfo");
  CHECK(same_file(r->parent_fd.get(), proc));
  r = resolve_in_view(v, cwd.get(), "/proc/mounts", ResolveOptions{});
  REQUIRE(r);
  CHECK(r->name == "mounts");
  CHECK(same_file(r->parent_fd.get(), proc));
  r = resolve_in_view(v, cwd.get(), "/proc/thread-self/mountinfo", ResolveOptions{});
  REQUIRE(r);
  CHECK(same_file(r->parent_fd.get(), proc + "/task/" + std::to_string(child)));
  r = resolve_in_view(v, cwd.get(), "/proc/self/cwd", ResolveOptions{});
  REQUIRE(r);
  CHECK(same_file(r->fd.get(), "/tmp"));
  ResolveOptions nomagic;
  nomagic.no_magiclinks = true;
  CHECK(!resolve_in_view(v, cwd.get(), "/proc/self/cwd", nomagic));
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
}

namespace {

// What the child under the filter reports, one line per check.
std::string child_checks(const std::string& dir, dev_t dev) {
  std::string out;
  struct statfs s;
  out += "statfs " +
         std::string(::statfs(dir.c_str(), &s) == 0 && s.f_type == 0x7655821 ? "magic" : "no") +
         "\n";
  out += "statfs-proc " +
         std::string(::statfs("/proc", &s) == 0 && s.f_type == kProcSuperMagic ? "proc" : "no") +
         "\n";
  ::chdir(dir.c_str());
  out += "statfs-rel " +
         std::string(::statfs(".", &s) == 0 && s.f_type == 0x7655821 ? "magic" : "no") + "\n";
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  out += "fstatfs " +
         std::string(fd >= 0 && ::fstatfs(fd, &s) == 0 && s.f_type == 0x7655821 ? "magic" : "no") +
         "\n";
  if (fd >= 0) ::close(fd);
  auto mi = read_text_file("/proc/self/mountinfo");
  std::string devs = " " + std::to_string(major(dev)) + ":" + std::to_string(minor(dev)) + " ";
  bool found = false;
  if (mi) {
    size_t p = mi->find(devs);
    found = p != std::string::npos && mi->find(" - resctrl resctrl ", p) < mi->find('\n', p);
  }
  out += std::string("mountinfo ") + (found ? "resctrl" : "no") + "\n";
  struct Arg {
    std::string devs;
    bool found = false;
  } arg{devs};
  pthread_t th;
  pthread_create(
      &th, nullptr,
      [](void* p) -> void* {
        auto* a = static_cast<Arg*>(p);
        auto t = read_text_file("/proc/thread-self/mountinfo");
        size_t q = t ? t->find(a->devs) : std::string::npos;
        a->found = q != std::string::npos && t->find(" - resctrl resctrl ", q) < t->find('\n', q) &&
                   ::syscall(SYS_gettid) != ::getpid();
        return nullptr;
      },
      &arg);
  pthread_join(th, nullptr);
  out += std::string("thread-self ") + (arg.found ? "resctrl" : "no") + "\n";
  auto mounts = read_text_file("/proc/mounts");
  out += std::string("mounts ") +
         (mounts && mounts->find(" resctrl rw") != std::string::npos ? "resctrl" : "no") + "\n";
  // openat2 relative to a /proc fd, confined to it, and O_NOFOLLOW on the
  // last component (not a symlink): both still the caller's rewritten table.
  auto has_resctrl = [&](int fd) {
    std::string t;
    char buf[4096];
    ssize_t n;
    while (fd >= 0 && (n = ::read(fd, buf, sizeof buf)) > 0) t.append(buf, static_cast<size_t>(n));
    if (fd >= 0) ::close(fd);
    size_t q = t.find(devs);
    return q != std::string::npos && t.find(" - resctrl resctrl ", q) < t.find('\n', q);
  };
  int procfd = ::open("/proc", O_PATH | O_DIRECTORY);
  open_how how{};
  how.flags = O_RDONLY;
  how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
  int fd2 = static_cast<int>(::syscall(SYS_openat2, procfd, "/self/mountinfo", &how, sizeof how));
  out += std::string("openat2 ") + (has_resctrl(fd2) ? "resctrl" : "no") + "\n";
  ::close(procfd);
  out += std::string("nofollow ") +
         (has_resctrl(::open("/proc/self/mountinfo", O_RDONLY | O_NOFOLLOW)) ? "resctrl" : "no") +
         "\n";
  return out;
}

// Forks a child that installs the filter, hands its listener over, waits
// for `go` and runs `body`, writing its output to `out`.
template <typename F>
pid_t fork_traced(Intercept mode, int* listener, int out, F body, bool virtual_cpus = false) {
  int sp[2], go[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) == 0);
  REQUIRE(::pipe2(go, O_CLOEXEC) == 0);
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::close(sp[0]);
    ::close(go[1]);
    auto l = install_notify_filter(mode, virtual_cpus);
    if (!l || !send_fd(sp[1], *l)) ::_exit(3);
    ::close(*l);
    char c;
    if (::read(go[0], &c, 1) != 1) ::_exit(4);
    std::string s = body();
    if (::write(out, s.data(), s.size()) < 0) ::_exit(5);
    ::_exit(0);
  }
  ::close(sp[1]);
  ::close(go[0]);
  auto l = receive_fd(sp[0]);
  ::close(sp[0]);
  REQUIRE(l);
  *listener = *l;
  REQUIRE(::write(go[1], "g", 1) == 1);
  ::close(go[1]);
  return pid;
}

std::string drain(int fd) {
  std::string s;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0) s.append(buf, static_cast<size_t>(n));
  return s;
}

}  // namespace

TEST_CASE("the supervisor answers a traced child's statfs and mount-table opens") {
  if (::geteuid() != 0)
    RESCTRLFS_SKIP("the supervisor tests need root (a filter without no_new_privs)");
  TempDir t;
  struct stat st;
  REQUIRE(::stat(t.path.c_str(), &st) == 0);
  int pipefd[2];
  REQUIRE(::pipe(pipefd) == 0);
  int listener = -1;
  std::string dir = t.path;
  dev_t dev = st.st_dev;
  pid_t pid =
      fork_traced(Intercept::kAll, &listener, pipefd[1], [&] { return child_checks(dir, dev); });
  ::close(pipefd[1]);
  SupervisorConfig cfg;
  cfg.device = dev;
  auto sup = Supervisor::start(listener, cfg);
  REQUIRE(sup);
  std::string out = drain(pipefd[0]);
  ::close(pipefd[0]);
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(out ==
        "statfs magic\nstatfs-proc proc\nstatfs-rel magic\nfstatfs magic\nmountinfo resctrl\n"
        "thread-self resctrl\nmounts resctrl\nopenat2 resctrl\nnofollow resctrl\n");
}

TEST_CASE("statfs-only: statfs is answered, mount tables are the kernel's") {
  if (::geteuid() != 0) RESCTRLFS_SKIP("the supervisor tests need root");
  TempDir t;
  struct stat st;
  REQUIRE(::stat(t.path.c_str(), &st) == 0);
  int pipefd[2];
  REQUIRE(::pipe(pipefd) == 0);
  int listener = -1;
  std::string dir = t.path;
  dev_t dev = st.st_dev;
  pid_t pid = fork_traced(Intercept::kStatfsOnly, &listener, pipefd[1],
                          [&] { return child_checks(dir, dev); });
  ::close(pipefd[1]);
  SupervisorConfig cfg;
  cfg.device = dev;
  cfg.mode = Intercept::kStatfsOnly;
  auto sup = Supervisor::start(listener, cfg);
  REQUIRE(sup);
  std::string out = drain(pipefd[0]);
  ::close(pipefd[0]);
  ::waitpid(pid, nullptr, 0);
  CHECK(out ==
        "statfs magic\nstatfs-proc proc\nstatfs-rel magic\nfstatfs magic\nmountinfo no\n"
        "thread-self no\nmounts no\nopenat2 no\nnofollow no\n");
}

TEST_CASE("callers killed in the middle of calls do not disturb the supervisor") {
  if (::geteuid() != 0) RESCTRLFS_SKIP("the supervisor tests need root");
  TempDir t;
  struct stat st;
  REQUIRE(::stat(t.path.c_str(), &st) == 0);
  int pipefd[2];
  REQUIRE(::pipe(pipefd) == 0);
  int listener = -1;
  std::string dir = t.path;
  dev_t dev = st.st_dev;
  // The traced child forks busy callers, kills each at once with SIGKILL
  // (mid-call: the calls never stop), then checks that answers still come.
  pid_t pid = fork_traced(Intercept::kAll, &listener, pipefd[1], [&] {
    for (int round = 0; round < 40; ++round) {
      pid_t busy = ::fork();
      if (busy == 0) {
        struct statfs s;
        for (;;) {
          ::statfs(dir.c_str(), &s);
          int fd = ::open("/proc/self/mountinfo", O_RDONLY);
          if (fd >= 0) ::close(fd);
        }
      }
      ::usleep(static_cast<useconds_t>(1000 + (round % 7) * 700));
      ::kill(busy, SIGKILL);
      ::waitpid(busy, nullptr, 0);
    }
    return child_checks(dir, dev);
  });
  ::close(pipefd[1]);
  SupervisorConfig cfg;
  cfg.device = dev;
  auto sup = Supervisor::start(listener, cfg);
  REQUIRE(sup);
  std::string out = drain(pipefd[0]);
  ::close(pipefd[0]);
  ::waitpid(pid, nullptr, 0);
  CHECK(out ==
        "statfs magic\nstatfs-proc proc\nstatfs-rel magic\nfstatfs magic\nmountinfo resctrl\n"
        "thread-self resctrl\nmounts resctrl\nopenat2 resctrl\nnofollow resctrl\n");
}

namespace {

// What a thread under the filter sees of its affinity and CPU (virtual CPUs).
std::string affinity_checks() {
  std::string out;
  auto get = [](size_t len) -> std::string {
    uint8_t buf[64] = {};
    long n = ::syscall(SYS_sched_getaffinity, 0, len, buf);
    if (n < 0) return std::string("error ") + std::strerror(errno);
    std::string s = std::to_string(n) + " bytes:";
    for (unsigned c = 0; c < static_cast<unsigned>(n) * 8; ++c)
      if ((buf[c / 8] >> (c % 8)) & 1) s += " " + std::to_string(c);
    return s;
  };
  auto set = [](std::vector<unsigned> cpus) -> std::string {
    uint8_t buf[16] = {};
    for (unsigned c : cpus) buf[c / 8] |= static_cast<uint8_t>(1u << (c % 8));
    return ::syscall(SYS_sched_setaffinity, 0, sizeof buf, buf) == 0
               ? "ok"
               : std::string("error ") + std::strerror(errno);
  };
  out += "initial " + get(64) + "\n";
  out += "short " + get(4) + "\n";
  out += "set5 " + set({5}) + "\n";
  out += "after " + get(64) + "\n";
  out += "set9 " + set({9}) + "\n";
  unsigned cpu = 99, node = 99;
  long r = ::syscall(SYS_getcpu, &cpu, &node, nullptr);
  out +=
      "getcpu " + std::to_string(r) + " " + std::to_string(cpu) + " " + std::to_string(node) + "\n";
  int p[2];
  if (::pipe(p) != 0) return out + "pipe failed\n";
  pid_t kid = ::fork();
  if (kid == 0) {
    std::string s = "child " + get(64) + "\n";
    (void)!::write(p[1], s.data(), s.size());
    ::_exit(0);
  }
  ::close(p[1]);
  out += drain(p[0]);
  ::waitpid(kid, nullptr, 0);
  auto status = read_text_file("/proc/self/status");
  size_t at = status ? status->find("Cpus_allowed_list:") : std::string::npos;
  if (at != std::string::npos) {
    size_t nl = status->find('\n', at);
    std::string v = status->substr(at + 18, nl - at - 18);
    v.erase(0, v.find_first_not_of(" \t"));
    out += "host " + v + "\n";
  }
  return out;
}

}  // namespace

TEST_CASE("virtual CPUs: the supervisor answers affinity and getcpu in the platform's numbers") {
  if (::geteuid() != 0) RESCTRLFS_SKIP("the supervisor tests need root");
  cpu_set_t mine;
  REQUIRE(::sched_getaffinity(0, sizeof mine, &mine) == 0);
  std::vector<unsigned> host;
  for (unsigned c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &mine)) host.push_back(c);
  TempDir t;
  int pipefd[2];
  REQUIRE(::pipe(pipefd) == 0);
  int listener = -1;
  pid_t pid = fork_traced(
      Intercept::kAll, &listener, pipefd[1], [] { return affinity_checks(); }, true);
  ::close(pipefd[1]);
  SupervisorConfig cfg;
  cfg.vcpus = resctrlfs::VcpuMap(8, host);
  cfg.vcpu_file = t.path + "/vcpus";
  cfg.vcpu_nodes = {0, 0, 0, 0, 1, 1, 1, 1};
  auto sup = Supervisor::start(listener, cfg);
  REQUIRE(sup);
  std::string out = drain(pipefd[0]);
  ::close(pipefd[0]);
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status));
  const std::string host5 = std::to_string(cfg.vcpus.host_of(5));
  CHECK(out ==
        "initial 8 bytes: 0 1 2 3 4 5 6 7\n"
        "short error Invalid argument\n"
        "set5 ok\n"
        "after 8 bytes: 5\n"
        "set9 error Invalid argument\n"
        "getcpu 0 5 1\n"
        "child 8 bytes: 5\n"
        "host " +
            host5 + "\n");
  auto table = read_text_file(cfg.vcpu_file);
  REQUIRE(table);
  CHECK(table->find("thread " + std::to_string(pid) + " " + std::to_string(pid) + " ") !=
        std::string::npos);
  CHECK(table->substr(table->size() - 3) == " 5\n");
}
