// Implements the sandbox's set of daemons (see daemons.h).
#include "sandbox/daemons.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "sandbox/namespace.h"
#include "sandbox/path_resolve.h"

namespace resctrlfs::sandbox {
namespace {

int exit_code_of(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 125;
}

// The mount id and root inode of what is mounted at `path` now.
bool mount_of(const std::string& path, uint64_t* mnt_id, struct statx* out) {
  struct statx stx;
  if (::statx(AT_FDCWD, path.c_str(), AT_NO_AUTOMOUNT, STATX_INO | STATX_MNT_ID, &stx) != 0)
    return false;
  if (!(stx.stx_mask & STATX_MNT_ID)) return false;
  *mnt_id = stx.stx_mnt_id;
  if (out) *out = stx;
  return true;
}

// Waits up to `ms` for the process behind `pidfd` to exit; true if it has.
bool exited_within(int pidfd, int ms) {
  pollfd p{pidfd, POLLIN, 0};
  int n;
  do {
    n = ::poll(&p, 1, ms);
  } while (n < 0 && errno == EINTR);
  return n > 0;
}

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ",") + s;
  return out;
}

}  // namespace

struct Daemons::Entry {
  enum class State { kStarting, kMounted, kStopping };
  State state = State::kStarting;
  pid_t pid = 0;
  UniqueFd pidfd;
  bool reaped = false;  // under mu_: the pid may have been reused
  std::string mountpoint;
  ResctrlMount mount;
};

Daemons::Daemons(std::string daemon, std::vector<std::string> args, std::string boot_state_dir)
    : daemon_(std::move(daemon)),
      args_(std::move(args)),
      boot_state_dir_(std::move(boot_state_dir)),
      self_(::getpid()) {}

Daemons::~Daemons() { stop_all(); }

Result<void> Daemons::start(const std::string& mountpoint, const std::vector<std::string>& options,
                            const std::function<Result<void>()>& interrupted) {
  for (const auto& m : reap()) std::fprintf(stderr, "resctrlfs-sandbox: warning: %s\n", m.c_str());
  auto e = std::make_shared<Entry>();
  e->mountpoint = mountpoint;
  e->mount.options = options;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_) return Error::make(ENODEV, "the sandbox is stopping");
    if (!entries_.empty()) return Error::make(EBUSY, "resctrl is already mounted");
    entries_.push_back(e);
  }
  std::vector<std::string> args = {daemon_, "-f"};
  args.insert(args.end(), args_.begin(), args_.end());
  if (!options.empty()) {
    args.push_back("-o");
    args.push_back(join(options));
  }
  if (!boot_state_dir_.empty()) {
    args.push_back("--boot-state-dir");
    args.push_back(boot_state_dir_);
  }
  args.push_back(mountpoint);
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = ::fork();
  if (pid < 0) {
    int err = errno;
    forget(0);
    return Error::make(err, std::string("fork: ") + std::strerror(err));
  }
  if (pid == 0) {
    // SIGTERM lets the daemon unmount cleanly if the sandbox dies; its own
    // process group keeps a terminal's ^C for COMMAND.
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != self_) ::_exit(125);
    ::setpgid(0, 0);
    int null = ::open("/dev/null", O_RDONLY);
    if (null >= 0) ::dup2(null, 0);
    ::execv(argv[0], argv.data());
    std::fprintf(stderr, "resctrlfs-sandbox: cannot run %s: %s\n", argv[0], std::strerror(errno));
    ::_exit(127);
  }
  int pfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  {
    std::lock_guard<std::mutex> lock(mu_);
    e->pid = pid;
    e->pidfd.reset(pfd);
  }
  if (pfd < 0) {
    int err = errno;
    terminate(*e);
    forget(pid);
    return Error::make(err, std::string("pidfd_open: ") + std::strerror(err));
  }
  auto r = wait_mounted(*e, interrupted);
  if (!r) {
    terminate(*e);
    forget(pid);
    return r;
  }
  std::lock_guard<std::mutex> lock(mu_);
  e->state = Entry::State::kMounted;
  return {};
}

Result<void> Daemons::wait_mounted(Entry& e, const std::function<Result<void>()>& interrupted) {
  uint64_t before = 0;
  mount_of(e.mountpoint, &before, nullptr);
  // The mount or the daemon's exit ends the wait; the limit only guards
  // against a daemon that hangs without either, and is far above a start on
  // a loaded machine (a sanitizer build of the daemon on the real backend under
  // a load of 10 on 2 CPUs mounts in a few seconds). Past 30 s the wait says
  // so once, so that a slow start is not mistaken for a hang.
  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + std::chrono::seconds(300);
  bool told = false;
  while (true) {
    if (exited_within(e.pidfd.get(), 20)) {
      int status = 0;
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (!e.reaped && ::waitpid(e.pid, &status, 0) == e.pid) e.reaped = true;
      }
      return Error::make(EINVAL, daemon_ + " exited before mounting (status " +
                                     std::to_string(exit_code_of(status)) + ")");
    }
    uint64_t now_id = 0;
    struct statx stx;
    // A new mount there is the daemon's (nothing else mounts there while it
    // starts: resctrl is refused meanwhile, and the daemon takes the
    // mount point's instance lock).
    if (mount_of(e.mountpoint, &now_id, &stx) && now_id != before) {
      std::lock_guard<std::mutex> lock(mu_);
      e.mount.device = makedev(stx.stx_dev_major, stx.stx_dev_minor);
      e.mount.mnt_id = now_id;
      e.mount.root_ino = static_cast<ino_t>(stx.stx_ino);
      return {};
    }
    const auto now = std::chrono::steady_clock::now();
    if (now > deadline)
      return Error::make(ETIMEDOUT, daemon_ + " did not mount " + e.mountpoint +
                                        " within 300 s and is still running (pid " +
                                        std::to_string(e.pid) + "): see its log");
    if (!told && now > start + std::chrono::seconds(30)) {
      std::fprintf(stderr, "resctrlfs-sandbox: still waiting for %s (pid %d) to mount %s\n",
                   daemon_.c_str(), static_cast<int>(e.pid), e.mountpoint.c_str());
      told = true;
    }
    if (interrupted) RESCTRLFS_RETURN_IF_ERROR(interrupted());
  }
}

void Daemons::terminate(Entry& e) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (e.pid <= 0 || e.reaped) return;
    ::kill(e.pid, SIGTERM);
  }
  if (e.pidfd.get() < 0 || !exited_within(e.pidfd.get(), 5000)) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!e.reaped) {
      std::fprintf(stderr, "resctrlfs-sandbox: resctrlfsd did not stop within 5 s; killing it\n");
      ::kill(e.pid, SIGKILL);
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (e.reaped) return;
  // Whatever the daemon started and left in its process group (its own)
  // must not outlive it: it would keep this mount namespace and the
  // caller's stdout and stderr for ever. The daemon is not reaped yet, so
  // the group's id cannot have been reused.
  siginfo_t si{};
  ::waitid(P_PID, static_cast<id_t>(e.pid), &si, WEXITED | WNOWAIT);
  ::kill(-e.pid, SIGKILL);
  ::waitpid(e.pid, nullptr, 0);
  e.reaped = true;
}

void Daemons::forget(pid_t pid) {
  std::lock_guard<std::mutex> lock(mu_);
  entries_.erase(std::remove_if(entries_.begin(), entries_.end(),
                                [&](const std::shared_ptr<Entry>& e) { return e->pid == pid; }),
                 entries_.end());
}

std::vector<ResctrlMount> Daemons::mounts() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<ResctrlMount> out;
  for (const auto& e : entries_)
    if (e->state != Entry::State::kStarting) out.push_back(e->mount);
  return out;
}

Result<void> Daemons::mount(const std::string& mountpoint,
                            const std::vector<std::string>& options) {
  return start(mountpoint, options, nullptr);
}

Result<void> Daemons::unmount(uint64_t mnt_id, int flags) {
  std::shared_ptr<Entry> e;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& x : entries_)
      if (x->state == Entry::State::kMounted && x->mount.mnt_id == mnt_id) e = x;
    if (!e) return Error::make(EINVAL, "not a mount of this sandbox");
    e->state = Entry::State::kStopping;
  }
  // By its path (an fd held on it would make the mount busy): only if the
  // mount there is still this one.
  uint64_t now_id = 0;
  int rc = -1, err = EINVAL;
  if (mount_of(e->mountpoint, &now_id, nullptr) && now_id == mnt_id) {
    rc = ::umount2(e->mountpoint.c_str(), flags & (MNT_FORCE | MNT_DETACH));
    err = errno;
  }
  if (rc != 0) {
    std::lock_guard<std::mutex> lock(mu_);
    e->state = Entry::State::kMounted;
    return Error::make(err, std::string("umount: ") + std::strerror(err));
  }
  // The daemon ends when the kernel drops its FUSE connection; after a lazy
  // unmount the connection may live on while files are open: stop it.
  if (flags & MNT_DETACH) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!e->reaped) ::kill(e->pid, SIGTERM);
  }
  if (!exited_within(e->pidfd.get(), 10000)) {
    std::fprintf(stderr,
                 "resctrlfs-sandbox: resctrlfsd (pid %d) still running 10 s after the unmount of "
                 "%s; stopping it\n",
                 static_cast<int>(e->pid), e->mountpoint.c_str());
  }
  terminate(*e);
  forget(e->pid);
  return {};
}

pid_t Daemons::current_pid() const {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_.empty() ? 0 : entries_.front()->pid;
}

std::vector<std::string> Daemons::reap() {
  std::vector<std::string> out;
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = entries_.begin(); it != entries_.end();) {
    Entry& e = **it;
    if (e.state != Entry::State::kMounted || e.reaped || e.pidfd.get() < 0 ||
        !exited_within(e.pidfd.get(), 0)) {
      ++it;
      continue;
    }
    int status = 0;
    ::kill(-e.pid, SIGKILL);
    ::waitpid(e.pid, &status, 0);
    e.reaped = true;
    out.push_back("resctrlfsd exited (status " + std::to_string(exit_code_of(status)) + "); " +
                  e.mountpoint + " no longer works");
    it = entries_.erase(it);
  }
  return out;
}

std::vector<std::string> Daemons::stop_all() {
  std::vector<std::shared_ptr<Entry>> all;
  {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
    all = entries_;
  }
  std::vector<std::string> out;
  for (const auto& e : all) {
    terminate(*e);
    out.push_back(e->mountpoint);
  }
  std::lock_guard<std::mutex> lock(mu_);
  entries_.clear();
  return out;
}

}  // namespace resctrlfs::sandbox
