// Implements the start-up steps of resctrlfsd: instance lock, mount point
// preparation, the detach pipe, sd_notify.
#include "daemon/startup.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "daemon/private_dir.h"

namespace resctrlfs::daemon {

std::string lock_file_name(std::string_view abs_mountpoint, std::string_view ns_key) {
  std::string out;
  if (!ns_key.empty()) {
    out = ns_key;
    out += '.';
  }
  std::string_view p = abs_mountpoint;
  while (!p.empty() && p.front() == '/') p.remove_prefix(1);
  while (!p.empty() && p.back() == '/') p.remove_suffix(1);
  if (p.empty()) return "-.lock";
  for (char c : p) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '/') {
      out += '-';
    } else if (std::isalnum(u) || c == '_' || c == '.') {
      out += c;
    } else {
      char hex[4];
      std::snprintf(hex, sizeof(hex), "%%%02X", u);
      out += hex;
    }
  }
  return out + ".lock";
}

std::string MountNamespace::key() const { return "mnt-" + std::to_string(inode); }

std::string MountNamespace::identity() const {
  return key() + "-" + std::to_string(oldest_pid) + "-" + std::to_string(oldest_start);
}

namespace {

// The inode of a "mnt:[N]" namespace link; 0 if it is not one.
uint64_t mnt_link_inode(const std::string& link) {
  char target[64];
  const ssize_t n = ::readlink(link.c_str(), target, sizeof(target) - 1);
  if (n <= 0) return 0;
  const std::string t(target, static_cast<size_t>(n));
  if (t.size() < 7 || t.compare(0, 5, "mnt:[") != 0 || t.back() != ']') return 0;
  uint64_t v = 0;
  for (size_t i = 5; i + 1 < t.size(); ++i) {
    if (t[i] < '0' || t[i] > '9' || v > (UINT64_MAX - 9) / 10) return 0;
    v = v * 10 + static_cast<uint64_t>(t[i] - '0');
  }
  return v;
}

// Field 22 of /proc/PID/stat (start time), counted after the ")" that ends
// the command name, which may itself hold spaces and parentheses.
bool stat_start_time(const std::string& stat_path, uint64_t* out) {
  const std::string s = read_text_file(stat_path);
  const size_t close = s.rfind(')');
  if (close == std::string::npos) return false;
  std::istringstream fields(s.substr(close + 1));
  std::string f;
  for (int i = 3; i <= 22; ++i) {
    if (!(fields >> f)) return false;
  }
  if (f.empty() || f.find_first_not_of("0123456789") != std::string::npos) return false;
  *out = std::strtoull(f.c_str(), nullptr, 10);
  return true;
}

}  // namespace

Result<MountNamespace> current_mount_namespace(const std::string& proc_root) {
  MountNamespace ns;
  ns.inode = mnt_link_inode(proc_root + "/self/ns/mnt");
  if (ns.inode == 0)
    return Error::make(EIO, "cannot read " + proc_root + "/self/ns/mnt (no mount namespaces?)");
  bool found = false;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(proc_root, ec)) {
    const std::string name = e.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    if (mnt_link_inode(e.path().string() + "/ns/mnt") != ns.inode) continue;
    uint64_t start = 0;
    if (!stat_start_time(e.path().string() + "/stat", &start)) continue;
    const long pid = std::strtol(name.c_str(), nullptr, 10);
    if (!found || start < ns.oldest_start || (start == ns.oldest_start && pid < ns.oldest_pid)) {
      ns.oldest_pid = pid;
      ns.oldest_start = start;
      found = true;
    }
  }
  if (!found) return Error::make(EIO, "no process of this mount namespace in " + proc_root);
  return ns;
}

Result<InstanceLock> InstanceLock::acquire(const std::string& dir,
                                           const std::string& abs_mountpoint,
                                           const std::string& ns_key,
                                           std::chrono::milliseconds wait) {
  RESCTRLFS_ASSIGN_OR_RETURN(PrivateDir pdir, PrivateDir::open(dir, "lock directory", true));
  const std::string name = lock_file_name(abs_mountpoint, ns_key);
  const std::string path = pdir.file(name);
  const auto deadline = std::chrono::steady_clock::now() + wait;
  bool said = false;
  for (;;) {
    // No O_TRUNC: the holder's pid stays readable for the message below.
    const int fd =
        ::openat(pdir.fd(), name.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0) return Error::make(errno, "cannot open lock file " + path + ": " + strerror(errno));
    struct stat held;
    if (fstat(fd, &held) != 0 || !S_ISREG(held.st_mode)) {
      ::close(fd);
      return Error::make(EINVAL, "lock file " + path + " is not a regular file");
    }
    while (flock(fd, LOCK_EX | LOCK_NB) != 0) {
      const int err = errno;
      if (err == EINTR) continue;
      // /proc/mounts names the real path of the mount point.
      char real[PATH_MAX];
      const std::string target =
          ::realpath(abs_mountpoint.c_str(), real) != nullptr ? real : abs_mountpoint;
      const bool serving = resctrl_mounted_at(read_text_file("/proc/self/mounts"), target);
      if (err == EWOULDBLOCK && !serving && std::chrono::steady_clock::now() < deadline) {
        // The holder has no mount here: it is exiting (an unmount just
        // happened) or has not mounted yet. Its exit releases the lock.
        if (!said) {
          std::fprintf(stderr, "resctrlfsd: waiting for the previous resctrlfsd on %s to exit\n",
                       abs_mountpoint.c_str());
          said = true;
        }
        ::usleep(20 * 1000);
        continue;
      }
      char pid[32] = {};
      const ssize_t n = pread(fd, pid, sizeof(pid) - 1, 0);
      ::close(fd);
      std::string holder = n > 0 ? std::string(pid, static_cast<size_t>(n)) : std::string("?");
      while (!holder.empty() && (holder.back() == '\n' || holder.back() == ' ')) holder.pop_back();
      if (err == EWOULDBLOCK && serving) {
        return Error::make(EBUSY, "another resctrlfsd (pid " + holder + ") already serves " +
                                      abs_mountpoint + " (lock " + path + ")");
      }
      if (err == EWOULDBLOCK) {
        return Error::make(EBUSY, "the resctrlfsd (pid " + holder + ") that held " +
                                      abs_mountpoint + " did not exit within " +
                                      std::to_string(wait.count() / 1000) + " s (lock " + path +
                                      ")");
      }
      return Error::make(err, "cannot lock " + path + ": " + strerror(err));
    }
    // A holder removes the file as it exits (so that namespaces leave no
    // files behind): a lock on a file no longer at `path` guards nothing.
    struct stat named;
    if (::fstatat(pdir.fd(), name.c_str(), &named, AT_SYMLINK_NOFOLLOW) == 0 &&
        held.st_ino == named.st_ino && held.st_dev == named.st_dev) {
      // The pid is for the message above; the lock itself is the flock.
      if (ftruncate(fd, 0) == 0) {
        const std::string pid = std::to_string(getpid()) + "\n";
        (void)pwrite(fd, pid.data(), pid.size(), 0);
      }
      return InstanceLock(fd, pdir.release(), name, path);
    }
    ::close(fd);
  }
}

InstanceLock::~InstanceLock() {
  if (fd_ < 0) return;
  // Unlinked while still locked: whoever opened it meanwhile sees, once it
  // holds the lock, that the file is gone and opens a new one.
  ::unlinkat(dir_fd_, name_.c_str(), 0);
  ::close(fd_);
  ::close(dir_fd_);
}

std::string read_text_file(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool resctrl_mounted_at(std::string_view proc_mounts, std::string_view abs_path) {
  std::istringstream mounts{std::string(proc_mounts)};
  std::string line;
  while (std::getline(mounts, line)) {
    std::istringstream fields(line);
    std::string source, target, type;
    fields >> source >> target >> type;
    if (target == abs_path && (type == "resctrl" || type == "fuse.resctrl")) return true;
  }
  return false;
}

Result<std::string> prepare_mountpoint(const std::string& mountpoint) {
  // Asked with statfs, not stat: a FUSE statfs always reaches the
  // connection, while a stat of the mount's root is answered from the
  // kernel's attribute cache (attr_timeout, an hour) if anything read it in
  // the hour before the daemon died.
  struct statfs sfs;
  if (statfs(mountpoint.c_str(), &sfs) != 0 && errno == ENOTCONN) {
    // A FUSE mount whose daemon died: nobody can use it, detach it.
    if (umount2(mountpoint.c_str(), MNT_DETACH) != 0) {
      return Error::make(errno,
                         "mount point " + mountpoint +
                             " is a dead FUSE mount and cannot be detached: " + strerror(errno));
    }
  }
  struct stat st;
  if (stat(mountpoint.c_str(), &st) != 0) {
    return Error::make(errno, "mount point " + mountpoint + ": " + strerror(errno));
  }
  if (!S_ISDIR(st.st_mode)) {
    return Error::make(ENOTDIR, "mount point " + mountpoint + " is not a directory");
  }
  char buf[PATH_MAX];
  if (realpath(mountpoint.c_str(), buf) == nullptr) {
    return Error::make(errno, "mount point " + mountpoint + ": " + strerror(errno));
  }
  if (resctrl_mounted_at(read_text_file("/proc/mounts"), buf)) {
    return Error::make(EBUSY, std::string("resctrl is already mounted at ") + buf);
  }
  return std::string(buf);
}

StartupPipe StartupPipe::detach() {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    std::perror("resctrlfsd: pipe");
    std::exit(1);
  }
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) {
    std::perror("resctrlfsd: fork");
    std::exit(1);
  }
  if (pid == 0) {
    ::close(fds[0]);
    setsid();
    return StartupPipe(fds[1]);
  }
  // Parent: wait for the child's verdict.
  ::close(fds[1]);
  std::string msg;
  char buf[512];
  for (;;) {
    const ssize_t n = read(fds[0], buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    msg.append(buf, static_cast<size_t>(n));
  }
  if (msg == "OK") std::_Exit(0);
  if (msg.empty()) {
    // The child died without a word: reap it to report how.
    int status = 0;
    if (waitpid(pid, &status, 0) == pid && WIFSIGNALED(status)) {
      std::fprintf(stderr, "resctrlfsd: daemon killed by signal %d during start-up\n",
                   WTERMSIG(status));
    } else {
      std::fprintf(stderr, "resctrlfsd: daemon exited during start-up\n");
    }
  } else {
    std::fprintf(stderr, "%s\n", msg.c_str());
  }
  std::_Exit(1);
}

void StartupPipe::report_ready(bool keep_stderr) {
  if (fd_ < 0) return;
  (void)!write(fd_, "OK", 2);
  ::close(fd_);
  fd_ = -1;
  // Fully detached now: no terminal, no hold on the caller's directory.
  const int null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  if (null >= 0) {
    dup2(null, 0);
    dup2(null, 1);
    if (!keep_stderr) dup2(null, 2);
    if (null > 2) ::close(null);
  }
  (void)!chdir("/");
}

bool syslog_listens(const char* path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (std::strlen(path) >= sizeof(addr.sun_path)) return false;
  std::strcpy(addr.sun_path, path);
  // syslog(3) tries a datagram socket, then a stream one.
  for (int type : {SOCK_DGRAM, SOCK_STREAM}) {
    const int fd = ::socket(AF_UNIX, type | SOCK_CLOEXEC, 0);
    if (fd < 0) continue;
    const bool ok = ::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) == 0;
    ::close(fd);
    if (ok) return true;
  }
  return false;
}

bool stderr_is_kept_open_safely() {
  struct stat st;
  if (::fstat(2, &st) != 0) return false;
  return !S_ISFIFO(st.st_mode) && !S_ISSOCK(st.st_mode);
}

void StartupPipe::report_error(const std::string& message) {
  if (fd_ < 0) return;
  (void)!write(fd_, message.data(), message.size());
  ::close(fd_);
  fd_ = -1;
}

bool send_systemd_notification(const char* path, std::string_view msg, int fd) {
  if (path == nullptr || path[0] == '\0') return false;
  const int s = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (s < 0) return false;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const size_t len = std::min(std::strlen(path), sizeof(addr.sun_path) - 1);
  std::memcpy(addr.sun_path, path, len);
  if (addr.sun_path[0] == '@') addr.sun_path[0] = '\0';
  iovec iov{const_cast<char*>(msg.data()), msg.size()};
  msghdr mh{};
  mh.msg_name = &addr;
  mh.msg_namelen = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + len);
  mh.msg_iov = &iov;
  mh.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
  if (fd >= 0) {
    std::memset(control, 0, sizeof(control));
    mh.msg_control = control;
    mh.msg_controllen = sizeof(control);
    cmsghdr* c = CMSG_FIRSTHDR(&mh);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &fd, sizeof(int));
  }
  const bool ok = sendmsg(s, &mh, MSG_NOSIGNAL) == static_cast<ssize_t>(msg.size());
  ::close(s);
  return ok;
}

void notify_systemd_ready() {
  (void)send_systemd_notification(std::getenv("NOTIFY_SOCKET"), "READY=1");
}

}  // namespace resctrlfs::daemon
