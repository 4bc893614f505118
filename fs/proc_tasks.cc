// Implements make_proc_task_source(): the TaskSource that reads /proc
// (every /proc/<pid>/task/<tid>, uids from /proc/<tid>/status).
#include <dirent.h>
#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
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

class ProcTaskSource final : public TaskSource {
 public:
  std::vector<pid_t> all_threads() override {
    std::vector<pid_t> out;
    walk([&](pid_t tid, pid_t) { out.push_back(tid); });
    return out;
  }

  std::vector<std::pair<pid_t, pid_t>> all_threads_with_process() override {
    std::vector<std::pair<pid_t, pid_t>> out;
    walk([&](pid_t tid, pid_t tgid) { out.emplace_back(tid, tgid); });
    return out;
  }

  bool exists(pid_t tid) override {
    if (tid <= 0) return false;
    // /proc/<tid> resolves for every thread id, listed or not.
    struct stat st {};
    return ::stat(("/proc/" + std::to_string(tid)).c_str(), &st) == 0;
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
  template <typename F>
  static void walk(F&& each) {
    DIR* proc = opendir("/proc");
    if (proc == nullptr) return;
    while (dirent* pe = readdir(proc)) {
      if (!all_digits(pe->d_name)) continue;
      const auto tgid = static_cast<pid_t>(std::atoi(pe->d_name));
      std::string task_dir = std::string("/proc/") + pe->d_name + "/task";
      DIR* td = opendir(task_dir.c_str());
      if (td == nullptr) continue;  // the process exited meanwhile
      while (dirent* te = readdir(td)) {
        if (all_digits(te->d_name)) each(static_cast<pid_t>(std::atoi(te->d_name)), tgid);
      }
      closedir(td);
    }
    closedir(proc);
  }
};

}  // namespace

std::unique_ptr<TaskSource> make_proc_task_source() { return std::make_unique<ProcTaskSource>(); }

}  // namespace resctrlfs::fs
