// Implements make_proc_task_source(): the TaskSource that reads /proc
// (every /proc/<pid>/task/<tid>, uids from /proc/<tid>/status).
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
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

// ENOENT and ESRCH from /proc mean the thread (or process) is gone; any
// other error leaves the question open.
bool gone(int err) { return err == ENOENT || err == ESRCH; }

class ProcTaskSource final : public TaskSource {
 public:
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
    if (::stat(("/proc/" + std::to_string(tid)).c_str(), &st) == 0) return 0;
    const int err = errno;
    return gone(err) ? ESRCH : err;
  }

  bool zombie(pid_t tid) override {
    // The state follows the command name, which may hold ')' itself.
    char buf[512];
    const int fd = ::open(("/proc/" + std::to_string(tid) + "/stat").c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    const ssize_t n = ::read(fd, buf, sizeof(buf) - 1);
    ::close(fd);
    if (n <= 0) return false;
    const std::string_view text(buf, static_cast<size_t>(n));
    const size_t paren = text.rfind(')');
    return paren != std::string_view::npos && paren + 2 < text.size() && text[paren + 2] == 'Z';
  }

  int uids(pid_t tid, uid_t& ruid, uid_t& suid) override {
    FILE* f = std::fopen(("/proc/" + std::to_string(tid) + "/status").c_str(), "r");
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
  static Error walk_error(const std::string& path, int err) {
    return Error::make(err, "cannot list " + path + ": " + std::strerror(err));
  }

  // Calls `each(tid, tgid)` for every thread; an error when /proc or a
  // process's task directory could not be read for another reason than the
  // process having exited.
  template <typename F>
  static Result<void> walk(F&& each) {
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
};

}  // namespace

std::unique_ptr<TaskSource> make_proc_task_source() { return std::make_unique<ProcTaskSource>(); }

}  // namespace resctrlfs::fs
