// Implements make_proc_task_source(): the TaskSource that reads /proc
// (every /proc/<pid>/task/<tid>, uids from /proc/<tid>/status), and its
// PidView for callers in another pid namespace: a thread's ids in every
// namespace from the daemon's down to its own are the NSpid line of its
// status, and its namespace is /proc/<tid>/ns/pid, whose parents
// NS_GET_PARENT walks.
#include <dirent.h>
#include <fcntl.h>
#include <linux/nsfs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "fs/filesystem.h"

namespace resctrlfs::fs {

namespace {

bool all_digits(const char* s) {
  if (*s == '\0') return false;
  for (; *s != '\0'; ++s)
    if (*s < '0' || *s > '9') return false;
  return true;
}

std::string proc_path(pid_t tid, const char* rest) { return "/proc/" + std::to_string(tid) + rest; }

// The pid namespace of thread `tid` (its device and inode), false if gone.
bool pid_ns_of(pid_t tid, dev_t& dev, ino_t& ino) {
  struct stat st {};
  if (::stat(proc_path(tid, "/ns/pid").c_str(), &st) != 0) return false;
  dev = st.st_dev;
  ino = st.st_ino;
  return true;
}

// The NSpid line of thread `tid`: its id in each namespace from the one
// /proc belongs to (the daemon's) down to its own. Empty if gone.
std::vector<pid_t> nspids(pid_t tid) {
  std::vector<pid_t> out;
  FILE* f = std::fopen(proc_path(tid, "/status").c_str(), "r");
  if (f == nullptr) return out;
  char line[512];
  while (std::fgets(line, sizeof(line), f) != nullptr) {
    if (std::strncmp(line, "NSpid:", 6) != 0) continue;
    char* p = line + 6;
    for (;;) {
      char* end = nullptr;
      const long v = std::strtol(p, &end, 10);
      if (end == p) break;
      out.push_back(static_cast<pid_t>(v));
      p = end;
    }
    break;
  }
  std::fclose(f);
  return out;
}

// ENOENT and ESRCH from /proc mean the thread (or process) is gone; any
// other error leaves the question open.
bool gone(int err) { return err == ENOENT || err == ESRCH; }

Error walk_error(const std::string& path, int err) {
  return Error::make(err, "cannot list " + path + ": " + std::strerror(err));
}

// Calls `each(tid, tgid)` for every thread; an error when /proc or a
// process's task directory could not be read for another reason than the
// process having exited.
template <typename F>
Result<void> walk(F&& each) {
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return walk_error("/proc", errno);
  Result<void> r = Ok();
  for (;;) {
    errno = 0;
    dirent* pe = readdir(proc);
    if (pe == nullptr) {
      if (errno != 0) r = walk_error("/proc", errno);
      break;
    }
    if (!all_digits(pe->d_name)) continue;
    const auto tgid = static_cast<pid_t>(std::atoi(pe->d_name));
    std::string task_dir = std::string("/proc/") + pe->d_name + "/task";
    DIR* td = opendir(task_dir.c_str());
    if (td == nullptr) {
      if (gone(errno)) continue;  // the process exited meanwhile
      r = walk_error(task_dir, errno);
      break;
    }
    for (;;) {
      errno = 0;
      dirent* te = readdir(td);
      if (te == nullptr) {
        // A process that exited while its directory was read: ESRCH or
        // ENOENT, its threads are gone.
        if (errno != 0 && !gone(errno)) r = walk_error(task_dir, errno);
        break;
      }
      if (all_digits(te->d_name)) each(static_cast<pid_t>(std::atoi(te->d_name)), tgid);
    }
    closedir(td);
    if (!r.ok()) break;
  }
  closedir(proc);
  return r;
}

class ProcPidView final : public PidView {
 public:
  // `depth`: how many entries the caller's NSpid line has.
  ProcPidView(dev_t dev, ino_t ns, size_t depth) : dev_(dev), ns_(ns), depth_(depth) {}

  pid_t to_daemon(pid_t id) override {
    if (id <= 0) return 0;
    // No index from an id of a namespace to the thread: the threads of the
    // namespaces the caller sees are looked at until one has it.
    pid_t found = 0;
    // A walk cut short (no descriptor left) finds nothing more: the id is
    // then not found, as when it is in no namespace the caller sees.
    (void)walk([&](pid_t tid, pid_t) {
      if (found == 0 && from_daemon(tid) == id) found = tid;
    });
    return found;
  }

  pid_t from_daemon(pid_t tid) override {
    dev_t dev = 0;
    ino_t ino = 0;
    if (!pid_ns_of(tid, dev, ino) || dev != dev_ || !visible(tid, ino)) return 0;
    std::vector<pid_t> ids = nspids(tid);
    return ids.size() >= depth_ ? ids[depth_ - 1] : 0;
  }

 private:
  // Whether namespace `ino` (thread `tid`'s) is the caller's or below it.
  bool visible(pid_t tid, ino_t ino) {
    if (ino == ns_) return true;
    auto it = seen_.find(ino);
    if (it != seen_.end()) return it->second;
    bool below = false;
    int fd = ::open(proc_path(tid, "/ns/pid").c_str(), O_RDONLY | O_CLOEXEC);
    // Namespaces nest at most 32 deep.
    for (int depth = 0; fd >= 0 && depth < 33 && !below; ++depth) {
      const int parent = ::ioctl(fd, NS_GET_PARENT);
      ::close(fd);
      fd = parent;
      struct stat st {};
      if (fd >= 0 && ::fstat(fd, &st) == 0 && st.st_dev == dev_ && st.st_ino == ns_) below = true;
    }
    if (fd >= 0) ::close(fd);
    seen_[ino] = below;
    return below;
  }

  dev_t dev_;
  ino_t ns_;
  size_t depth_;
  std::unordered_map<ino_t, bool> seen_;  // other namespaces: below the caller's?
};

class ProcTaskSource final : public TaskSource {
 public:
  ProcTaskSource() { have_own_ = pid_ns_of(getpid(), own_dev_, own_ns_); }

  std::unique_ptr<PidView> pid_view(pid_t caller_tid) override {
    dev_t dev = 0;
    ino_t ino = 0;
    // One stat for a caller of the daemon's namespace (the common case).
    if (!have_own_ || caller_tid <= 0 || !pid_ns_of(caller_tid, dev, ino) ||
        (dev == own_dev_ && ino == own_ns_))
      return nullptr;
    const std::vector<pid_t> ids = nspids(caller_tid);
    // A caller FUSE names is visible to the daemon, so its namespace is
    // the daemon's or below it: more than one id.
    if (ids.size() < 2) return nullptr;
    return std::make_unique<ProcPidView>(dev, ino, ids.size());
  }

  Result<std::vector<pid_t>> all_threads() override {
    std::vector<pid_t> out;
    RESCTRLFS_RETURN_IF_ERROR(walk([&](pid_t tid, pid_t) { out.push_back(tid); }));
    return out;
  }

  Result<std::vector<std::pair<pid_t, pid_t>>> all_threads_with_process() override {
    std::vector<std::pair<pid_t, pid_t>> out;
    RESCTRLFS_RETURN_IF_ERROR(walk([&](pid_t tid, pid_t tgid) { out.emplace_back(tid, tgid); }));
    return out;
  }

  int lookup(pid_t tid) override {
    if (tid <= 0) return ESRCH;
    // /proc/<tid> resolves for every thread id, listed or not.
    struct stat st {};
    if (::stat(proc_path(tid, "").c_str(), &st) == 0) return 0;
    const int err = errno;
    return gone(err) ? ESRCH : err;
  }

  bool zombie(pid_t tid) override {
    // The state follows the command name, which may hold ')' itself.
    char buf[512];
    const int fd = ::open(proc_path(tid, "/stat").c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    const ssize_t n = ::read(fd, buf, sizeof(buf) - 1);
    ::close(fd);
    if (n <= 0) return false;
    const std::string_view text(buf, static_cast<size_t>(n));
    const size_t paren = text.rfind(')');
    return paren != std::string_view::npos && paren + 2 < text.size() && text[paren + 2] == 'Z';
  }

  int uids(pid_t tid, uid_t& ruid, uid_t& suid) override {
    FILE* f = std::fopen(proc_path(tid, "/status").c_str(), "r");
    if (f == nullptr) {
      const int err = errno;
      return gone(err) ? ESRCH : err;
    }
    char line[256];
    int err = ESRCH;  // a status without a Uid line: the thread went meanwhile
    while (std::fgets(line, sizeof(line), f) != nullptr) {
      unsigned r = 0, e = 0, s = 0;
      if (std::strncmp(line, "Uid:", 4) == 0 &&
          std::sscanf(line + 4, "%u %u %u", &r, &e, &s) == 3) {
        ruid = r;
        suid = s;
        err = 0;
        break;
      }
    }
    if (err != 0 && std::ferror(f) && !gone(errno)) err = errno != 0 ? errno : EIO;
    std::fclose(f);
    return err;
  }

 private:
  bool have_own_ = false;
  dev_t own_dev_ = 0;
  ino_t own_ns_ = 0;
};

}  // namespace

std::unique_ptr<TaskSource> make_proc_task_source() { return std::make_unique<ProcTaskSource>(); }

}  // namespace resctrlfs::fs
