// resctrlfs-sandbox: runs a program in a private mount namespace in which
// resctrlfsd is mounted at /sys/fs/resctrl and /proc and sysfs agree with the
// simulated platform, so that unmodified resctrl clients (pqos, rdtset,
// goresctrl, runc, containerd) use it as they would use the kernel's resctrl.
//
// Process layout: this process enters the namespace, starts resctrlfsd in
// the foreground as its child (sandbox/daemons.h, which also starts and
// stops the daemons of later mounts and unmounts of resctrl inside),
// fakes the /proc and sysfs files, then forks COMMAND. COMMAND installs the seccomp filter
// (seccomp_supervisor.h), passes its listener back over a socket pair and stops before exec until
// this process runs the supervisor (and, with --intercept statfs-only or
// none, has bind-mounted rewritten tables over COMMAND's own
// /proc/<pid>/mounts and mountinfo, a bind that survives exec). This process
// then waits, forwarding signals sent to it, and on COMMAND's exit stops the
// supervisor and the daemon and removes what it created. The namespace
// disappears with its last process.
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "base/vcpus.h"
#include "base/version.h"
#include "hw/platform_factory.h"
#include "sandbox/daemons.h"
#include "sandbox/namespace.h"
#include "sandbox/options.h"
#include "sandbox/proc_rewrite.h"
#include "sandbox/seccomp_supervisor.h"
#include "sandbox/topology.h"

namespace resctrlfs::sandbox {
namespace {

constexpr const char* kMountpoint = "/sys/fs/resctrl";
constexpr int kSetupFailed = 125;
constexpr const char* kEnvStaging = "RESCTRLFS_SANDBOX";
constexpr const char* kEnvMountOpts = "RESCTRLFS_SANDBOX_MOUNT_OPTS";

void log(const std::string& msg) { std::fprintf(stderr, "resctrlfs-sandbox: %s\n", msg.c_str()); }

// What the sandbox needs to know about the simulated platform.
struct PlatformView {
  std::string vendor;
  std::vector<std::string> flags;
  std::vector<CpuPlacement> placement;  // index = CPU number
  CacheSizes caches;                    // sysfs cache/index{2,3}/size
  uint64_t cpuinfo_cache_kb = 0;        // cpuinfo's "cache size"
  std::string own_cpuinfo;              // a platform of another CPU family: its whole /proc/cpuinfo
};

// cpuinfo's "cache size": the L2's where the platform says so
// (CpuDescription::cache_size_from_l2), else the L3 (or L2).
uint64_t cpuinfo_cache_kb(bool from_l2, const CacheSizes& caches) {
  return (from_l2 || caches.l3 == 0 ? caches.l2 : caches.l3) >> 10;
}

Result<PlatformView> load_platform(const std::string& name) {
  hw::PlatformOptions popts;
  popts.platform = name;
  RESCTRLFS_ASSIGN_OR_RETURN(hw::Backend backend, hw::make_platform(popts));
  const hw::PlatformInfo& info = backend.arch->info();
  PlatformView v;
  if (!backend.cpu && !backend.facts)
    return Error::make(ENODEV, "the platform does not say what /proc/cpuinfo shows");
  if (backend.cpu) {
    v.vendor = backend.cpu->vendor;
    v.flags = backend.cpu->flags;
  }
  for (size_t cpu = 0; cpu < info.cpu_ids(hw::Scope::PACKAGE).size(); ++cpu) {
    CpuPlacement p;
    p.package = info.cpu_ids(hw::Scope::PACKAGE)[cpu];
    p.l2_id = cpu < info.cpu_ids(hw::Scope::L2_CACHE).size()
                  ? info.cpu_ids(hw::Scope::L2_CACHE)[cpu]
                  : -1;
    p.l3_id = cpu < info.cpu_ids(hw::Scope::L3_CACHE).size()
                  ? info.cpu_ids(hw::Scope::L3_CACHE)[cpu]
                  : -1;
    p.core = cpu < info.cpu_ids(hw::Scope::CORE).size() ? info.cpu_ids(hw::Scope::CORE)[cpu] : -1;
    p.node = cpu < info.cpu_ids(hw::Scope::NODE).size() ? info.cpu_ids(hw::Scope::NODE)[cpu] : -1;
    v.placement.push_back(p);
  }
  if (backend.facts) {  // another architecture: its own cpuinfo, not the host's rewritten
    std::vector<unsigned> cpus;
    for (unsigned c = 0; c < v.placement.size(); ++c) cpus.push_back(c);
    v.vendor = backend.facts->vendor;
    v.own_cpuinfo = backend.facts->cpuinfo(cpus);
    v.caches = {backend.facts->l2_size_bytes, backend.facts->l3_size_bytes};
    return v;
  }
  v.caches = {backend.cpu->l2_bytes, backend.cpu->l3_bytes};
  v.cpuinfo_cache_kb = cpuinfo_cache_kb(backend.cpu->cache_size_from_l2, v.caches);
  return v;
}

// The machine a daemon on the real backend with `--hw-root ROOT` drives
// (ROOT an emulation of the kernel's CPU drivers, as in the tests): the
// vendor and flags its CPUs enumerate, its sysfs placement and cache sizes.
Result<PlatformView> load_hw_root(const std::string& root) {
  hw::PlatformOptions popts;
  popts.backend = hw::BackendKind::kReal;
  popts.hw_root = root;
  RESCTRLFS_ASSIGN_OR_RETURN(hw::CpuDescription info, hw::real_cpu_description(popts));
  RESCTRLFS_ASSIGN_OR_RETURN(auto cpus, read_host_topology(root + "/sys/devices/system/cpu"));
  PlatformView v;
  v.vendor = info.vendor;
  v.flags = info.flags;
  for (const auto& c : cpus) {
    if (c.cpu != v.placement.size())
      return Error::make(ENODEV, root + ": CPU " + std::to_string(v.placement.size()) +
                                     " is missing from its sysfs (offline CPUs are not shown)");
    v.placement.push_back({c.package, c.cache_id(2), c.cache_id(3)});
    for (const auto& k : c.caches) {
      if (k.level == 2 && v.caches.l2 == 0) v.caches.l2 = k.size_bytes;
      if (k.level == 3 && v.caches.l3 == 0) v.caches.l3 = k.size_bytes;
    }
  }
  v.cpuinfo_cache_kb = cpuinfo_cache_kb(info.cache_size_from_l2, v.caches);
  return v;
}

// A built-in platform other than host whose CPU count differs from the
// host's runs fitted to the host's CPUs (NAME@host, hw::fitted_to_host()).
bool fit_to_host(const std::string& name, const std::vector<HostCpu>& host) {
  auto names = hw::platform_names();
  if (name == "host" || std::find(names.begin(), names.end(), name) == names.end()) return false;
  auto p = load_platform(name);
  return p && p->placement.size() != host.size();
}

std::vector<int> cpu_packages(const PlatformView& v) {
  std::vector<int> out;
  for (const auto& p : v.placement) out.push_back(p.package);
  return out;
}

// The host CPUs this process may run on, ascending.
Result<std::vector<unsigned>> allowed_host_cpus() {
  for (size_t n = 1024; n <= (1u << 20); n *= 2) {
    cpu_set_t* set = CPU_ALLOC(n);
    if (!set) return Error::make(ENOMEM, "CPU_ALLOC");
    size_t size = CPU_ALLOC_SIZE(n);
    if (::sched_getaffinity(0, size, set) == 0) {
      std::vector<unsigned> out;
      for (size_t c = 0; c < n; ++c)
        if (CPU_ISSET_S(c, size, set)) out.push_back(static_cast<unsigned>(c));
      CPU_FREE(set);
      return out;
    }
    int e = errno;
    CPU_FREE(set);
    if (e != EINVAL) return Error::make(e, std::string("sched_getaffinity: ") + std::strerror(e));
  }
  return Error::make(EINVAL, "sched_getaffinity: no mask size fits");
}

std::string host_vendor() {
  auto text = read_text_file("/proc/cpuinfo");
  if (!text) return "";
  size_t p = text->find("vendor_id");
  if (p == std::string::npos) return "";
  size_t colon = text->find(':', p);
  size_t nl = text->find('\n', p);
  if (colon == std::string::npos || colon > nl) return "";
  std::string v = text->substr(colon + 1, nl - colon - 1);
  v.erase(0, v.find_first_not_of(" \t"));
  return v;
}

// Where the staging directory goes: $TMPDIR if it is a directory, else /tmp.
// It is the only thing the sandbox creates on the host's filesystem.
std::string staging_parent() {
  const char* t = std::getenv("TMPDIR");
  std::error_code ec;
  if (t && *t == '/' && std::filesystem::is_directory(t, ec)) return t;
  return "/tmp";
}

bool is_executable(const std::string& path) { return ::access(path.c_str(), X_OK) == 0; }

Result<std::string> find_daemon(const Options& o) {
  if (!o.daemon_path.empty()) {
    if (!is_executable(o.daemon_path))
      return Error::make(ENOENT, "--daemon " + o.daemon_path + " is not executable");
    return o.daemon_path;
  }
  if (const char* env = std::getenv("RESCTRLFSD"); env && *env) {
    if (!is_executable(env))
      return Error::make(ENOENT, std::string("$RESCTRLFSD ") + env + " is not executable");
    return std::string(env);
  }
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    auto dir = self.parent_path();
    for (auto cand : {dir / "resctrlfsd", dir / ".." / "daemon" / "resctrlfsd"})
      if (is_executable(cand.string())) return cand.lexically_normal().string();
  }
  if (const char* path = std::getenv("PATH")) {
    std::string p = path;
    size_t start = 0;
    while (start <= p.size()) {
      size_t end = p.find(':', start);
      if (end == std::string::npos) end = p.size();
      std::string cand = p.substr(start, end - start) + "/resctrlfsd";
      if (end > start && is_executable(cand)) return cand;
      start = end + 1;
    }
  }
  return Error::make(ENOENT, "cannot find resctrlfsd (use --daemon PATH or set $RESCTRLFSD)");
}

std::vector<char*> c_argv(std::vector<std::string>& args) {
  std::vector<char*> out;
  for (auto& a : args) out.push_back(a.data());
  out.push_back(nullptr);
  return out;
}

sigset_t handled_signals() {
  sigset_t s;
  sigemptyset(&s);
  for (int sig : {SIGCHLD, SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2}) sigaddset(&s, sig);
  return s;
}

// In a forked child: restore the signal mask and ask for `sig` when this
// process dies; exits if it already has.
void prepare_child(pid_t parent, int death_signal) {
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  ::prctl(PR_SET_PDEATHSIG, death_signal);
  if (::getppid() != parent) ::_exit(kSetupFailed);
}

int exit_code_of(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return kSetupFailed;
}

// Binds rewritten copies of the current mount tables over /proc/<pid>/mounts
// and /proc/<pid>/mountinfo.
Result<void> bind_mount_tables(const std::string& staging, pid_t pid,
                               const std::vector<std::string>& resctrl_opts) {
  RESCTRLFS_ASSIGN_OR_RETURN(std::string mounts, read_text_file("/proc/self/mounts"));
  RESCTRLFS_ASSIGN_OR_RETURN(std::string mountinfo, read_text_file("/proc/self/mountinfo"));
  std::string p = std::to_string(pid);
  RESCTRLFS_RETURN_IF_ERROR(bind_file(staging, "mounts." + p,
                                      rewrite_mounts(mounts, kMountpoint, resctrl_opts),
                                      "/proc/" + p + "/mounts"));
  return bind_file(staging, "mountinfo." + p,
                   rewrite_mountinfo(mountinfo, kMountpoint, resctrl_opts),
                   "/proc/" + p + "/mountinfo");
}

std::vector<std::string> shell_command() {
  const char* sh = std::getenv("SHELL");
  if (sh && *sh) return {sh};
  if (is_executable("/bin/bash")) return {"/bin/bash"};
  return {"/bin/sh"};
}

[[noreturn]] void exec_command(std::vector<std::string> cmd) {
  auto argv = c_argv(cmd);
  ::execvp(argv[0], argv.data());
  int e = errno;
  std::fprintf(stderr, "resctrlfs-sandbox: cannot run %s: %s\n", argv[0], std::strerror(e));
  ::_exit(e == ENOENT ? 127 : 126);
}

// Inside an existing sandbox: give COMMAND (this very process, after exec)
// rewritten mount tables.
int run_nested(const Options& o, const std::string& staging) {
  if (!o.daemon_args.empty()) {
    log("already inside a sandbox (" + staging +
        "); daemon options are not allowed here: run only `resctrlfs-sandbox -- COMMAND`");
    return kSetupFailed;
  }
  const char* opts = std::getenv(kEnvMountOpts);
  auto r = bind_mount_tables(staging, ::getpid(), resctrl_mount_options(opts ? opts : ""));
  if (!r) {
    log(r.error().message);
    return kSetupFailed;
  }
  exec_command(o.command.empty() ? shell_command() : o.command);
}

// Owns what the sandbox started and created; stop() undoes it.
class Sandbox {
 public:
  explicit Sandbox(Options o) : opts_(std::move(o)) {}
  ~Sandbox() { stop(); }

  // Everything up to (not including) COMMAND. On error the caller stops.
  Result<void> setup();
  // Forks COMMAND, waits for it, forwarding signals. Returns its exit code.
  int run_command();
  void stop();

 private:
  Result<void> fake_proc_and_sysfs();
  Result<void> fake_cpu_tree();
  Result<void> rewrite_host_cpuinfo();

  Options opts_;
  PlatformView platform_;
  std::vector<FileBind> topology_binds_;
  std::string daemon_;
  std::string staging_;
  pid_t self_ = ::getpid();
  bool fake_machine_ = true;  // cpuinfo and sysfs show platform_, not the host
  VcpuMap vcpus_;             // --cpus platform: the virtual CPUs, else disabled
  std::string vcpu_file_;     // the table of threads' virtual affinities, for the daemons
  std::shared_ptr<Daemons> daemons_;
  std::unique_ptr<Supervisor> supervisor_;
};

Result<void> Sandbox::setup() {
  if (::geteuid() != 0)
    return Error::make(EPERM,
                       "must run as root (it creates a mount namespace and mounts FUSE there): "
                       "run it with sudo, e.g. sudo resctrlfs-sandbox --platform intel-2s");
  RESCTRLFS_ASSIGN_OR_RETURN(daemon_, find_daemon(opts_));
  // With the real backend on a real machine (--hw-root /) the host's
  // cpuinfo and sysfs are the truth and stay; with another hw root, /proc
  // and sysfs must show the machine the daemon reads there, as for a
  // simulated one.
  const bool real = hw::backend_named(opts_.backend) == hw::BackendKind::kReal;
  fake_machine_ = !real || (!opts_.hw_root.empty() && opts_.hw_root != "/");
  if (fake_machine_) {
    RESCTRLFS_ASSIGN_OR_RETURN(auto host, read_host_topology("/sys/devices/system/cpu"));
    std::string what = real ? "--hw-root " + opts_.hw_root : "platform " + opts_.platform;
    const bool virt = opts_.cpus == "platform";
    if (virt && real)
      return Error::make(EINVAL,
                         "--cpus platform needs the simulated backend (with --backend msr "
                         "the CPUs are the machine's, or --hw-root's)");
    if (virt && opts_.intercept == "none")
      return Error::make(EINVAL,
                         "--cpus platform needs the seccomp supervisor (it answers "
                         "sched_setaffinity and sched_getaffinity): drop --intercept none");
    if (virt && opts_.platform == "host")
      return Error::make(EINVAL,
                         "--cpus platform needs --platform NAME|FILE.json (the host platform "
                         "has the host's CPUs already)");
    if (!real && !virt && fit_to_host(opts_.platform, host))
      set_platform(opts_, hw::fitted_to_host(opts_.platform));
    auto p = real ? load_hw_root(opts_.hw_root) : load_platform(opts_.platform);
    if (!p) return Error::make(p.error().code, what + ": " + p.error().message);
    platform_ = std::move(*p);
    if (virt) {
      RESCTRLFS_ASSIGN_OR_RETURN(auto allowed, allowed_host_cpus());
      vcpus_ = VcpuMap(static_cast<unsigned>(platform_.placement.size()), std::move(allowed));
    }
    std::string hv = host_vendor();
    if (!hv.empty() && hv != platform_.vendor)
      log("warning: platform vendor " + platform_.vendor + " differs from this CPU's " + hv +
          "; /proc/cpuinfo shows " + platform_.vendor +
          ", but clients that read CPUID (pqos) will treat it as " + hv);
    auto plan = vcpus_.enabled() ? Result<std::vector<FileBind>>(std::vector<FileBind>{})
                                 : plan_topology_binds(host, platform_.placement, platform_.caches);
    if (plan) {
      topology_binds_ = std::move(*plan);
    } else if (opts_.ignore_topology) {
      log("warning: " + plan.error().message);
    } else {
      return Error::make(plan.error().code, what + ": " + plan.error().message);
    }
  }
  RESCTRLFS_RETURN_IF_ERROR(enter_private_mount_namespace());
  RESCTRLFS_ASSIGN_OR_RETURN(staging_, make_staging_dir(staging_parent()));
  RESCTRLFS_RETURN_IF_ERROR(cover_sys_fs(staging_));
  // Without --state-dir the daemon keeps no journal, so every sandbox starts
  // from a fresh tree; its instance lock is keyed by this sandbox's mount
  // namespace, so sandboxes never meet. Every daemon of this sandbox (the
  // first and those of later mounts inside) keeps its boot state in the
  // staging area, which goes with the sandbox as the kernel's memory goes
  // at reboot.
  // Quiet unless asked: the daemon's info lines (its mount, ...) are noise
  // around COMMAND's output; its warnings and errors are not.
  std::vector<std::string> daemon_args = daemon_args_without_resctrl_options(opts_);
  if (!opts_.verbose && !opts_.has_log_level) {
    daemon_args.push_back("--log-level");
    daemon_args.push_back("warn");
  }
  if (vcpus_.enabled()) {
    vcpu_file_ = staging_ + "/vcpus";
    RESCTRLFS_RETURN_IF_ERROR(write_text_file(vcpu_file_, format_vcpu_table(VcpuTable(vcpus_))));
    daemon_args.push_back("--virtual-cpus");
    daemon_args.push_back(vcpu_file_);
  }
  daemons_ = std::make_shared<Daemons>(
      daemon_, std::move(daemon_args),
      has_boot_state_dir(opts_) ? std::string() : staging_ + "/boot-state");
  const sigset_t sigs = handled_signals();
  auto interrupted = [&sigs]() -> Result<void> {
    timespec zero{0, 0};
    siginfo_t si;
    int sig = ::sigtimedwait(&sigs, &si, &zero);
    if (sig > 0 && sig != SIGCHLD)
      return Error::make(EINTR, std::string("interrupted by ") + ::strsignal(sig));
    return {};
  };
  RESCTRLFS_RETURN_IF_ERROR(
      daemons_->start(kMountpoint, resctrl_mount_options(opts_.mount_options), interrupted));
  return fake_proc_and_sysfs();
}

Result<void> Sandbox::fake_proc_and_sysfs() {
  RESCTRLFS_ASSIGN_OR_RETURN(std::string fs, read_text_file("/proc/filesystems"));
  RESCTRLFS_RETURN_IF_ERROR(
      bind_file(staging_, "filesystems", add_resctrl_filesystem(fs), "/proc/filesystems"));
  if (!fake_machine_) return {};  // real hardware: the host's flags and topology are true
  if (!platform_.own_cpuinfo.empty()) {
    if (vcpus_.enabled()) RESCTRLFS_RETURN_IF_ERROR(fake_cpu_tree());
    RESCTRLFS_RETURN_IF_ERROR(
        bind_file(staging_, "cpuinfo", platform_.own_cpuinfo, "/proc/cpuinfo"));
  } else {
    RESCTRLFS_RETURN_IF_ERROR(rewrite_host_cpuinfo());
  }
  int n = 0;
  for (const auto& b : topology_binds_)
    RESCTRLFS_RETURN_IF_ERROR(
        bind_file(staging_, "sysfs." + std::to_string(n++), b.content, b.target));
  return {};
}

// The host's /proc/cpuinfo with the platform's vendor, RDT flags,
// packages and cache size.
Result<void> Sandbox::rewrite_host_cpuinfo() {
  RESCTRLFS_ASSIGN_OR_RETURN(std::string cpuinfo, read_text_file("/proc/cpuinfo"));
  if (vcpus_.enabled()) {
    std::vector<int> cores;
    for (const auto& p : platform_.placement) cores.push_back(p.core);
    cpuinfo = virtual_cpuinfo(cpuinfo, cores);
    if (cpuinfo.empty()) return Error::make(ENODEV, "/proc/cpuinfo has no processor block");
    RESCTRLFS_RETURN_IF_ERROR(fake_cpu_tree());
  }
  RESCTRLFS_RETURN_IF_ERROR(
      bind_file(staging_, "cpuinfo",
                rewrite_cpuinfo_vendor(
                    rewrite_cpuinfo_topology(rewrite_cpuinfo(cpuinfo, platform_.flags),
                                             cpu_packages(platform_), platform_.cpuinfo_cache_kb),
                    platform_.vendor),
                "/proc/cpuinfo"));
  return {};
}

// --cpus platform: a whole /sys/devices/system/cpu of the platform's CPUs
// (topology.h), with the host's other entries (cpufreq, vulnerabilities,
// smt, ...) bound in, mounted over the host's; on a one-node host the node's
// cpulist and cpumap name every virtual CPU.
Result<void> Sandbox::fake_cpu_tree() {
  const std::string sys_cpu = "/sys/devices/system/cpu";
  const std::string tree = staging_ + "/cpu-tree";
  uint64_t l1d = 0, l1i = 0;
  if (auto host = read_host_topology(sys_cpu); host && !host->empty())
    for (const auto& c : host->front().caches)
      if (c.level == 1) (c.type == "Instruction" ? l1i : l1d) = c.size_bytes;
  std::error_code ec;
  auto files = virtual_cpu_tree(platform_.placement, platform_.caches, l1d, l1i);
  // A tmpfs of its own, sized for the files (a page each): 512 CPUs need
  // more than the staging area holds.
  std::filesystem::create_directory(tree, ec);
  std::string tmpfs_opts = "mode=0755,size=" + std::to_string((files.size() + 256) * 4096);
  if (::mount("resctrlfs-sandbox", tree.c_str(), "tmpfs", MS_NOSUID | MS_NODEV,
              tmpfs_opts.c_str()) != 0)
    return Error::make(errno, "mount tmpfs on " + tree + ": " + std::strerror(errno));
  for (const auto& f : files) {
    std::filesystem::path p = tree + "/" + f.target;
    std::filesystem::create_directories(p.parent_path(), ec);
    if (ec)
      return Error::make(ec.value(), "mkdir " + p.parent_path().string() + ": " + ec.message());
    RESCTRLFS_RETURN_IF_ERROR(write_text_file(p.string(), f.content));
  }
  for (const auto& e : std::filesystem::directory_iterator(sys_cpu, ec)) {
    std::string name = e.path().filename().string();
    bool cpu_dir = name.size() > 3 && name.rfind("cpu", 0) == 0 &&
                   name.find_first_not_of("0123456789", 3) == std::string::npos;
    if (cpu_dir || std::filesystem::exists(tree + "/" + name)) continue;
    std::error_code e2;
    if (e.is_directory(e2) && !e.is_symlink(e2)) {
      std::string dst = tree + "/" + name;
      std::filesystem::create_directory(dst, e2);
      if (::mount(e.path().c_str(), dst.c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0)
        std::filesystem::remove(dst, e2);
    } else if (e.is_regular_file(e2)) {
      if (auto text = read_text_file(e.path().string()))
        (void)write_text_file(tree + "/" + name, *text);
    }
  }
  if (::mount(tree.c_str(), sys_cpu.c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0)
    return Error::make(errno, "bind " + tree + " over " + sys_cpu + ": " + std::strerror(errno));
  // One NUMA node: it has every CPU.
  const std::string node = "/sys/devices/system/node";
  if (std::filesystem::exists(node + "/node0") && !std::filesystem::exists(node + "/node1")) {
    CpuMask all = vcpus_.all();
    (void)bind_file(staging_, "node0.cpulist", format_cpu_list(all) + "\n",
                    node + "/node0/cpulist");
    (void)bind_file(staging_, "node0.cpumap", format_cpu_mask(all) + "\n", node + "/node0/cpumap");
  }
  return {};
}

int Sandbox::run_command() {
  std::vector<std::string> cmd = opts_.command.empty() ? shell_command() : opts_.command;
  std::string mount_opts;
  for (const auto& o : resctrl_mount_options(opts_.mount_options))
    mount_opts += (mount_opts.empty() ? "" : ",") + o;
  auto mode = parse_intercept(opts_.intercept);
  if (!mode) {
    log(mode.error().message);
    return kSetupFailed;
  }
  int go[2];
  if (::pipe2(go, O_CLOEXEC) != 0) {
    log(std::string("pipe: ") + std::strerror(errno));
    return kSetupFailed;
  }
  // COMMAND installs the seccomp filter and hands its listener back here.
  int sp[2] = {-1, -1};
  if (*mode != Intercept::kNone &&
      ::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) != 0) {
    log(std::string("socketpair: ") + std::strerror(errno));
    return kSetupFailed;
  }
  pid_t pid = ::fork();
  if (pid < 0) {
    log(std::string("fork: ") + std::strerror(errno));
    return kSetupFailed;
  }
  if (pid == 0) {
    prepare_child(self_, SIGTERM);
    ::close(go[1]);
    if (sp[1] >= 0) {
      ::close(sp[0]);
      auto listener = install_notify_filter(*mode, vcpus_.enabled());
      if (!listener) {
        log(listener.error().message +
            " (a kernel without seccomp user notification, or a seccomp listener already "
            "installed above the sandbox: --intercept none runs without it)");
        ::_exit(kSetupFailed);
      }
      if (!send_fd(sp[1], *listener)) ::_exit(kSetupFailed);
      ::close(*listener);
      ::close(sp[1]);
    }
    ::setenv(kEnvStaging, staging_.c_str(), 1);
    ::setenv(kEnvMountOpts, mount_opts.c_str(), 1);
    ::setenv("RESCTRLFSD_PID", std::to_string(daemons_->current_pid()).c_str(), 1);
    char c;
    ssize_t n;
    do {
      n = ::read(go[0], &c, 1);
    } while (n < 0 && errno == EINTR);
    if (n != 1) ::_exit(kSetupFailed);  // the sandbox could not finish the binds
    exec_command(cmd);
  }
  ::close(go[0]);
  auto fail = [&](const std::string& msg) {
    log(msg);
    ::close(go[1]);
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    return kSetupFailed;
  };
  if (sp[0] >= 0) {
    ::close(sp[1]);
    auto listener = receive_fd(sp[0]);
    ::close(sp[0]);
    if (!listener) return fail(listener.error().message);
    SupervisorConfig cfg;
    cfg.mounts = daemons_;
    cfg.mode = *mode;
    if (vcpus_.enabled()) {
      cfg.vcpus = vcpus_;
      cfg.vcpu_file = vcpu_file_;
      for (const auto& p : platform_.placement) cfg.vcpu_nodes.push_back(std::max(p.node, 0));
    }
    auto sup = Supervisor::start(*listener, std::move(cfg));
    if (!sup) return fail(sup.error().message);
    supervisor_ = std::move(*sup);
  }
  if (*mode != Intercept::kAll) {
    // Without open interception only COMMAND's own tables can be rewritten,
    // by binds over its /proc/<pid> files.
    auto r = bind_mount_tables(staging_, pid, resctrl_mount_options(opts_.mount_options));
    if (!r) return fail(r.error().message);
  }
  if (::write(go[1], "g", 1) != 1) log(std::string("write: ") + std::strerror(errno));
  ::close(go[1]);

  const sigset_t sigs = handled_signals();
  while (true) {
    siginfo_t si;
    int sig = ::sigwaitinfo(&sigs, &si);
    if (sig < 0) continue;
    if (sig != SIGCHLD) {
      // Signals from the terminal (si_code SI_KERNEL) reached COMMAND's
      // process group already; only those sent to this process are passed on.
      if (si.si_code <= 0) ::kill(pid, sig);
      continue;
    }
    // The daemons are reaped by their set (the supervisor's workers wait
    // for those they stop), COMMAND here.
    for (const auto& m : daemons_->reap()) log("warning: " + m);
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) return exit_code_of(status);
  }
}

void Sandbox::stop() {
  supervisor_.reset();
  std::vector<std::string> mountpoints;
  if (daemons_) mountpoints = daemons_->stop_all();
  if (!staging_.empty()) {
    // Only this namespace sees these mounts; detaching them lets the staging
    // directory, the one thing on the host's filesystem, be removed.
    for (const auto& m : mountpoints) ::umount2(m.c_str(), MNT_DETACH);
    ::umount2(kMountpoint, MNT_DETACH);
    remove_staging_dir(staging_);
    staging_.clear();
  }
}

int main_impl(int argc, char** argv) {
  auto parsed = parse_options(std::vector<std::string>(argv + 1, argv + argc));
  if (!parsed) {
    log(parsed.error().message);
    return kSetupFailed;
  }
  Options o = std::move(*parsed);
  if (o.help) {
    std::fputs(usage().c_str(), stdout);
    return 0;
  }
  if (o.version) {
    std::printf("resctrlfs-sandbox %s\n", kVersion);
    return 0;
  }
  if (o.list_platforms) {
    for (const std::string& n : hw::platform_names()) std::printf("%s\n", n.c_str());
    return 0;
  }
  if (const char* staging = std::getenv(kEnvStaging); staging && *staging) {
    auto mi = read_text_file("/proc/self/mountinfo");
    if (mi && has_mount(*mi, kMountpoint)) return run_nested(o, staging);
  }
  const sigset_t sigs = handled_signals();
  ::sigprocmask(SIG_BLOCK, &sigs, nullptr);
  Sandbox sb(std::move(o));
  if (auto r = sb.setup(); !r) {
    log(r.error().message);
    return kSetupFailed;
  }
  int code = sb.run_command();
  sb.stop();
  return code;
}

}  // namespace
}  // namespace resctrlfs::sandbox

int main(int argc, char** argv) { return resctrlfs::sandbox::main_impl(argc, argv); }
