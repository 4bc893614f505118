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

// Whether a failed look-up under /proc means that the process or thread is
// gone, rather than that it could not be looked up.
bool gone_errno(int e) { return e == ENOENT || e == ESRCH; }

class ProcTaskSource final : public TaskSource {
 public:
  std::vector<pid_t> all_threads() override {
    std::vector<pid_t> out;
    if (!walk([&](pid_t tid, pid_t) { out.push_back(tid); })) out.clear();
    return out;
  }

  std::vector<std::pair<pid_t, pid_t>> all_threads_with_process() override {
    std::vector<std::pair<pid_t, pid_t>> out;
    if (!walk([&](pid_t tid, pid_t tgid) { out.emplace_back(tid, tgid); })) out.clear();
    return out;
  }

  bool exists(pid_t tid) override {
    if (tid <= 0) return false;
    // /proc/<tid> resolves for every thread id, listed or not.
    struct stat st {};
    return ::stat(("/proc/" + std::to_string(tid)).c_str(), &st) == 0;
  }

  bool gone(pid_t tid) override {
    if (tid <= 0) return true;
    struct stat st {};
    if (::stat(("/proc/" + std::to_string(tid)).c_str(), &st) == 0) return false;
    return gone_errno(errno);
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

  bool uids(pid_t tid, uid_t& ruid, uid_t& suid) override {
    FILE* f = std::fopen(("/proc/" + std::to_string(tid) + "/status").c_str(), "r");
    if (f == nullptr) return false;
    char line[256];
    bool found = false;
    while (std::fgets(line, sizeof(line), f) != nullptr) {
      unsigned r = 0, e = 0, s = 0;
      if (std::strncmp(line, "Uid:", 4) == 0 &&
          std::sscanf(line + 4, "%u %u %u", &r, &e, &s) == 3) {
        ruid = r;
        suid = s;
        found = true;
        break;
      }
    }
    std::fclose(f);
    return found;
  }

 private:
  // Calls `each` for every thread; false when the walk could not be
  // completed (a directory that could not be opened or read for another
  // reason than its process being gone): the caller then has no list.
  template <typename F>
  static bool walk(F&& each) {
    DIR* proc = opendir("/proc");
    if (proc == nullptr) return false;
    bool complete = true;
    while (complete) {
      errno = 0;
      dirent* pe = readdir(proc);
      if (pe == nullptr) {
        complete = errno == 0;
        break;
      }
      if (!all_digits(pe->d_name)) continue;
      const auto tgid = static_cast<pid_t>(std::atoi(pe->d_name));
      std::string task_dir = std::string("/proc/") + pe->d_name + "/task";
      DIR* td = opendir(task_dir.c_str());
      if (td == nullptr) {
        // The process exited meanwhile, or the walk is cut short.
        complete = gone_errno(errno);
        continue;
      }
      while (true) {
        errno = 0;
        dirent* te = readdir(td);
        if (te == nullptr) {
          if (errno != 0 && !gone_errno(errno)) complete = false;
          break;
        }
        if (all_digits(te->d_name)) each(static_cast<pid_t>(std::atoi(te->d_name)), tgid);
      }
      closedir(td);
    }
    closedir(proc);
    return complete;
  }
};

}  // namespace

std::unique_ptr<TaskSource> make_proc_task_source() { return std::make_unique<ProcTaskSource>(); }

}  // namespace resctrlfs::fs
