// Implements the keeper (run_keeper) and the systemd file descriptor
// store helpers of daemon/takeover.h.
#include "daemon/takeover.h"

#include <fcntl.h>
#include <linux/fuse.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "daemon/fuse_bridge.h"
#include "daemon/startup.h"

namespace resctrlfs::daemon {

namespace {

// FUSE_NOTIFY_RESEND (Linux 6.9; Debian 12's linux/fuse.h predates it).
constexpr int kFuseNotifyResend = 7;

// A daemon that dies this many times in a row before it says it is ready
// is not started again: the keeper unmounts and exits with status 1.
constexpr int kMaxFailedStarts = 5;

std::string self_path() {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return {};
  std::string p(buf, static_cast<size_t>(n));
  // Replaced under us (an upgrade): the path is what counts.
  constexpr std::string_view kDeleted = " (deleted)";
  if (p.size() > kDeleted.size() && p.ends_with(kDeleted)) p.resize(p.size() - kDeleted.size());
  return p;
}

class Keeper {
 public:
  Keeper(const DaemonOptions& opts, const std::vector<std::string>& args)
      : opts_(opts), args_(args) {}
  int run();

 private:
  bool mount_it();
  bool start_daemon(bool takeover);
  void on_exit(int status);
  void unmount_it();

  const DaemonOptions& opts_;
  const std::vector<std::string>& args_;
  std::string exe_;
  int fuse_fd_ = -1;
  // Linux before 6.9: no FUSE_NOTIFY_RESEND. Each daemon then gets a clone
  // of the connection (FUSE_DEV_IOC_CLONE) that only it holds, so that the
  // requests it had read end with ECONNABORTED when it dies instead of
  // waiting for an answer forever.
  bool clone_per_daemon_ = false;
  int notify_fd_ = -1;
  std::string notify_name_;
  std::string systemd_notify_;
  pid_t child_ = -1;
  bool child_ready_ = false;
  bool ever_ready_ = false;
  bool stopping_ = false;
  bool done_ = false;
  int exit_code_ = 0;
  int failed_starts_ = 0;
  StartupPipe startup_;
};

bool Keeper::mount_it() {
  FuseSettings settings;
  settings.mountpoint = opts_.mountpoint;
  settings.fuse_options = opts_.fuse_options;
  Result<int> fd = FuseBridge::mount_connection(settings);
  if (!fd.ok()) {
    spdlog::error("{}", fd.error().message);
    return false;
  }
  fuse_fd_ = *fd;
  clone_per_daemon_ = !kernel_resends(fuse_fd_);
  if (clone_per_daemon_)
    spdlog::warn(
        "the kernel has no FUSE_NOTIFY_RESEND (Linux < 6.9): a request a daemon had read when "
        "it died fails with ECONNABORTED instead of being answered by the next one");
  return true;
}

bool Keeper::start_daemon(bool takeover) {
  int pass_fd = fuse_fd_;
  if (clone_per_daemon_) {
    pass_fd = clone_connection(fuse_fd_);
    if (pass_fd < 0) return false;
  }
  std::vector<std::string> argv_s{exe_, "-f", "--fuse-fd", std::to_string(pass_fd)};
  if (takeover) argv_s.push_back("--takeover");
  for (size_t i = 1; i < args_.size(); ++i) {
    if (args_[i] == "--keeper" || args_[i] == "-f" || args_[i] == "--foreground") continue;
    argv_s.push_back(args_[i]);
  }
  std::vector<char*> argv;
  for (std::string& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid < 0) {
    spdlog::error("fork: {}", strerror(errno));
    if (pass_fd != fuse_fd_) ::close(pass_fd);
    return false;
  }
  if (pid == 0) {
    sigset_t all;
    sigemptyset(&all);
    sigprocmask(SIG_SETMASK, &all, nullptr);
    fcntl(pass_fd, F_SETFD, 0);  // the daemon inherits this one
    setenv("NOTIFY_SOCKET", notify_name_.c_str(), 1);
    execv(exe_.c_str(), argv.data());
    std::fprintf(stderr, "resctrlfsd keeper: exec %s: %s\n", exe_.c_str(), strerror(errno));
    _exit(127);
  }
  if (pass_fd != fuse_fd_) ::close(pass_fd);
  child_ = pid;
  child_ready_ = false;
  spdlog::info("keeper: started resctrlfsd pid {}{}", pid, takeover ? " (takeover)" : "");
  return true;
}

void Keeper::unmount_it() {
  if (umount2(opts_.mountpoint.c_str(), MNT_DETACH) != 0 && errno != EINVAL && errno != ENOENT)
    spdlog::warn("keeper: unmounting {}: {}", opts_.mountpoint, strerror(errno));
}

void Keeper::on_exit(int status) {
  child_ = -1;
  const bool clean = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  if (stopping_ || clean) {
    // Stopped, or the tree was unmounted: the daemon has unmounted or the
    // kernel has; what is left to do is not to leave a dead mount.
    unmount_it();
    done_ = true;
    exit_code_ = clean ? 0 : 1;
    return;
  }
  if (WIFSIGNALED(status)) {
    spdlog::warn("keeper: resctrlfsd died of signal {}", WTERMSIG(status));
  } else {
    spdlog::warn("keeper: resctrlfsd exited with status {}", WEXITSTATUS(status));
  }
  // A first daemon that never served: a bad command line, a busy mount
  // point; its own message says which. Nothing to take over.
  if (!ever_ready_) {
    startup_.report_error("resctrlfsd: the daemon did not start (its message is above)");
    unmount_it();
    done_ = true;
    exit_code_ = 1;
    return;
  }
  if (!child_ready_ && ++failed_starts_ >= kMaxFailedStarts) {
    spdlog::error("keeper: resctrlfsd failed {} starts in a row: unmounting {}", failed_starts_,
                  opts_.mountpoint);
    unmount_it();
    done_ = true;
    exit_code_ = 1;
    return;
  }
  // The journal holds what the dead one acknowledged; the kernel holds the
  // rest.
  if (!start_daemon(/*takeover=*/true)) {
    unmount_it();
    done_ = true;
    exit_code_ = 1;
  }
}

int Keeper::run() {
  exe_ = self_path();
  if (exe_.empty()) {
    std::fprintf(stderr, "resctrlfsd: --keeper: cannot read /proc/self/exe\n");
    return 1;
  }
  if (!opts_.foreground) startup_ = StartupPipe::detach();
  sigset_t mask;
  sigemptyset(&mask);
  for (int sig : {SIGCHLD, SIGTERM, SIGINT, SIGHUP}) sigaddset(&mask, sig);
  sigprocmask(SIG_BLOCK, &mask, nullptr);
  const int sfd = signalfd(-1, &mask, SFD_CLOEXEC);
  // The daemons' READY=1 comes to a socket of the keeper's own.
  notify_fd_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  notify_name_ = "@resctrlfs-keeper-" + std::to_string(getpid());
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path + 1, notify_name_.data() + 1, notify_name_.size() - 1);
  if (sfd < 0 || notify_fd_ < 0 ||
      bind(notify_fd_, reinterpret_cast<sockaddr*>(&addr),
           static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + notify_name_.size())) != 0) {
    startup_.report_error(std::string("resctrlfsd: --keeper: ") + strerror(errno));
    return 1;
  }
  if (const char* n = std::getenv("NOTIFY_SOCKET")) systemd_notify_ = n;
  unsetenv("NOTIFY_SOCKET");
  if (!mount_it()) {
    startup_.report_error("resctrlfsd: cannot mount FUSE at " + opts_.mountpoint);
    return 1;
  }
  if (!start_daemon(/*takeover=*/false)) {
    unmount_it();
    startup_.report_error("resctrlfsd: --keeper: cannot start the daemon");
    return 1;
  }
  while (!done_) {
    pollfd p[2] = {{sfd, POLLIN, 0}, {notify_fd_, POLLIN, 0}};
    if (poll(p, 2, -1) < 0) {
      if (errno == EINTR) continue;
      spdlog::error("keeper: poll: {}", strerror(errno));
      break;
    }
    if (p[1].revents & POLLIN) {
      char buf[512];
      const ssize_t n = recv(notify_fd_, buf, sizeof(buf), 0);
      if (n > 0 &&
          std::string_view(buf, static_cast<size_t>(n)).find("READY=1") != std::string_view::npos) {
        child_ready_ = true;
        failed_starts_ = 0;
        if (!ever_ready_) {
          ever_ready_ = true;
          spdlog::info("keeper: {} is served (pid {}); the keeper holds the connection",
                       opts_.mountpoint, child_);
          send_systemd_notification(systemd_notify_.c_str(), "READY=1");
          startup_.report_ready(/*keep_stderr=*/stderr_is_kept_open_safely());
        }
      }
    }
    if (p[0].revents & POLLIN) {
      signalfd_siginfo si;
      if (read(sfd, &si, sizeof(si)) != sizeof(si)) continue;
      if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT) {
        stopping_ = true;
        if (child_ > 0) {
          kill(child_, SIGTERM);
        } else {
          unmount_it();
          done_ = true;
        }
      } else if (si.ssi_signo == SIGHUP && child_ > 0 && !stopping_) {
        // An upgrade: the program at the same path, started afresh, takes
        // the connection over.
        spdlog::info("keeper: SIGHUP: restarting resctrlfsd from {}", exe_);
        kill(child_, SIGKILL);
      }
      for (;;) {
        int status = 0;
        const pid_t w = waitpid(-1, &status, WNOHANG);
        if (w <= 0) break;
        if (w == child_) on_exit(status);
      }
    }
  }
  if (fuse_fd_ >= 0) ::close(fuse_fd_);
  return exit_code_;
}

}  // namespace

bool kernel_resends(int fd) {
  if (const char* e = std::getenv("RESCTRLFS_KEEPER_CLONE"); e != nullptr && e[0] == '1')
    return false;  // test aid: the older kernels' way on a newer one
  const fuse_out_header probe{sizeof(fuse_out_header), kFuseNotifyResend, 0};
  return ::write(fd, &probe, sizeof(probe)) == static_cast<ssize_t>(sizeof(probe));
}

int clone_connection(int fd) {
  const int c = ::open("/dev/fuse", O_RDWR | O_CLOEXEC);
  uint32_t src = static_cast<uint32_t>(fd);
  if (c < 0 || ioctl(c, FUSE_DEV_IOC_CLONE, &src) != 0) {
    spdlog::error("cloning the FUSE connection: {}", strerror(errno));
    if (c >= 0) ::close(c);
    return -1;
  }
  return c;
}

int run_keeper(const DaemonOptions& opts, const std::vector<std::string>& args) {
  Keeper k(opts, args);
  return k.run();
}

int fd_from_systemd() {
  const char* pid = std::getenv("LISTEN_PID");
  const char* fds = std::getenv("LISTEN_FDS");
  const char* names = std::getenv("LISTEN_FDNAMES");
  if (pid == nullptr || fds == nullptr || std::atol(pid) != static_cast<long>(getpid())) return -1;
  const int n = std::atoi(fds);
  std::string_view rest = names != nullptr ? names : "";
  int found = -1;
  for (int i = 0; i < n; ++i) {
    const size_t colon = rest.find(':');
    const std::string_view name = rest.substr(0, colon);
    rest = colon == std::string_view::npos ? std::string_view() : rest.substr(colon + 1);
    const int fd = 3 + i;  // SD_LISTEN_FDS_START
    if (name == "fuse" && found < 0) {
      found = fd;
      fcntl(fd, F_SETFD, FD_CLOEXEC);
    } else {
      ::close(fd);  // nothing else of ours is stored
    }
  }
  unsetenv("LISTEN_PID");
  unsetenv("LISTEN_FDS");
  unsetenv("LISTEN_FDNAMES");
  return found;
}

bool store_fd_in_systemd(int fd) {
  const char* path = std::getenv("NOTIFY_SOCKET");
  if (path == nullptr || path[0] == '\0') {
    spdlog::warn("--fd-store: no NOTIFY_SOCKET (not run by systemd): a restart cannot take over");
    return false;
  }
  if (!send_systemd_notification(path, "FDSTORE=1\nFDNAME=fuse", fd)) {
    spdlog::warn("--fd-store: handing the FUSE descriptor to systemd: {}", strerror(errno));
    return false;
  }
  return true;
}

void remove_fd_from_systemd() {
  (void)send_systemd_notification(std::getenv("NOTIFY_SOCKET"), "FDSTOREREMOVE=1\nFDNAME=fuse");
}

}  // namespace resctrlfs::daemon
