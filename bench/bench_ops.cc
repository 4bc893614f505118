// Implements bench_ops.h. Every body does exactly the system calls a shell
// or a monitoring agent does for that operation, nothing more, so that the
// FUSE request counts per operation are the ones users cause.
#include "bench/bench_ops.h"

#include <dirent.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>

extern char** environ;

namespace resctrlfs::bench {

const std::vector<OpInfo>& all_ops() {
  static const std::vector<OpInfo> ops = {
      {Op::kOpenReadSchemata, "openread_schemata", "open+read+close schemata"},
      {Op::kOpenReadMon, "openread_mon", "open+read+close mon_data"},
      {Op::kPreadSchemata, "pread_schemata", "pread held fd schemata"},
      {Op::kPreadMon, "pread_mon", "pread held fd mon_data"},
      {Op::kStat, "stat", "stat schemata"},
      {Op::kWriteSchemata, "write_schemata", "echo > schemata"},
      {Op::kMkrmCtrl, "mkrm_ctrl", "mkdir+rmdir CTRL_MON"},
      {Op::kMkrmMon, "mkrm_mon", "mkdir+rmdir MON"},
      {Op::kReaddir, "readdir", "readdir group"},
      {Op::kTasksWrite, "tasks_write", "tasks write 1 pid"},
  };
  return ops;
}

std::vector<std::string> list_dir(const std::string& path) {
  std::vector<std::string> out;
  if (DIR* d = opendir(path.c_str())) {
    while (dirent* e = readdir(d)) {
      std::string n = e->d_name;
      if (n != "." && n != "..") out.push_back(n);
    }
    closedir(d);
  }
  return out;
}

std::string read_path(const Target& t, const TreePaths& paths, bool mon) {
  if (!t.resctrl_tree()) return t.read_file;
  return t.root + "/" + (mon ? paths.mon_file : std::string("schemata"));
}

namespace {

int open_read_close(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  char buf[4096];
  ssize_t r;
  while ((r = read(fd, buf, sizeof(buf))) > 0) {
  }
  int err = r < 0 ? errno : 0;
  close(fd);
  return err;
}

int write_file(const std::string& path, const std::string& data, int flags) {
  int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC | flags);
  if (fd < 0) return errno;
  int err = 0;
  if (write(fd, data.data(), data.size()) != static_cast<ssize_t>(data.size())) err = errno;
  close(fd);
  return err;
}

// Held fds, one per client thread, opened on first use (in the warm-up) and
// closed when the operation body is destroyed.
struct HeldFds {
  std::string path;
  int fds[64];
  HeldFds() {
    for (int& fd : fds) fd = -1;
  }
  ~HeldFds() {
    for (int fd : fds)
      if (fd >= 0) close(fd);
  }
  int pread_once(int t) {
    if (fds[t] < 0) fds[t] = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fds[t] < 0) return errno;
    char buf[4096];
    return pread(fds[t], buf, sizeof(buf), 0) < 0 ? errno : 0;
  }
};

int readdir_all(const std::string& path) {
  DIR* d = opendir(path.c_str());
  if (!d) return errno;
  while (readdir(d)) {
  }
  closedir(d);
  return 0;
}

int mkdir_rmdir(const std::string& path) {
  if (mkdir(path.c_str(), 0755) != 0) return errno;
  if (rmdir(path.c_str()) != 0) return errno;
  return 0;
}

}  // namespace

std::optional<OpFn> make_op(Op op, const Target& t, const TreePaths& paths) {
  bool tree = t.resctrl_tree();
  switch (op) {
    case Op::kOpenReadSchemata:
    case Op::kOpenReadMon: {
      std::string p = read_path(t, paths, op == Op::kOpenReadMon);
      if (p.empty()) return std::nullopt;
      return OpFn([p](int) { return open_read_close(p); });
    }
    case Op::kPreadSchemata:
    case Op::kPreadMon: {
      std::string p = read_path(t, paths, op == Op::kPreadMon);
      if (p.empty()) return std::nullopt;
      auto held = std::make_shared<HeldFds>();
      held->path = p;
      return OpFn([held](int th) { return held->pread_once(th); });
    }
    case Op::kStat: {
      std::string p = read_path(t, paths, false);
      if (p.empty()) return std::nullopt;
      return OpFn([p](int) {
        struct stat st;
        return stat(p.c_str(), &st) == 0 ? 0 : errno;
      });
    }
    case Op::kWriteSchemata: {
      if (!tree) return std::nullopt;
      std::string p = t.root + "/schemata", line = paths.schemata_line;
      return OpFn([p, line](int) { return write_file(p, line, O_TRUNC); });
    }
    case Op::kMkrmCtrl:
    case Op::kMkrmMon: {
      if (!tree) return std::nullopt;
      std::string base = t.root + (op == Op::kMkrmCtrl ? "/bench_c" : "/mon_groups/bench_m");
      return OpFn([base](int th) { return mkdir_rmdir(base + std::to_string(th)); });
    }
    case Op::kReaddir: {
      std::string p = tree ? t.root + "/" + paths.group : t.list_dir;
      if (p.empty()) return std::nullopt;
      return OpFn([p](int) { return readdir_all(p); });
    }
    case Op::kTasksWrite: {
      if (!tree) return std::nullopt;
      std::string p = t.root + "/" + paths.group + "/tasks";
      return OpFn([p](int) {
        std::string tid = std::to_string(syscall(SYS_gettid)) + "\n";
        return write_file(p, tid, 0);
      });
    }
  }
  return std::nullopt;
}

bool prepare_tree(const Target& t, const TreePaths& paths, const std::string& template_dir,
                  std::string* error) {
  if (!t.resctrl_tree()) return true;
  std::string g = t.root + "/" + paths.group;
  if (mkdir(g.c_str(), 0755) != 0 && errno != EEXIST) {
    *error = "mkdir " + g + ": " + strerror(errno);
    return false;
  }
  if (t.fuse() || template_dir.empty()) return true;
  // A plain directory: give it the entries the real group has.
  for (const std::string& name : list_dir(template_dir)) {
    std::string src = template_dir + "/" + name, dst = g + "/" + name;
    struct stat st;
    if (stat(src.c_str(), &st) != 0) continue;
    if (S_ISDIR(st.st_mode)) {
      mkdir(dst.c_str(), 0755);
    } else {
      int fd = open(dst.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
      if (fd >= 0) close(fd);
    }
  }
  return true;
}

void cleanup_tree(const Target& t, const TreePaths& paths) {
  if (!t.resctrl_tree()) return;
  std::string g = t.root + "/" + paths.group;
  if (!t.fuse()) {
    for (const std::string& name : list_dir(g)) {
      std::string p = g + "/" + name;
      if (rmdir(p.c_str()) != 0) unlink(p.c_str());
    }
  }
  rmdir(g.c_str());
}

std::vector<Sample> time_cat_interleaved(const std::vector<const Target*>& targets,
                                         const TreePaths& paths, int rounds,
                                         std::optional<int> cpu) {
  pin_self(cpu);
  std::vector<std::vector<float>> lat(targets.size());
  std::vector<double> busy(targets.size(), 0);
  std::vector<std::string> files, errors(targets.size());
  for (const Target* t : targets) files.push_back(read_path(*t, paths, false));

  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  for (int r = 0; r < rounds; ++r) {
    for (size_t i = 0; i < targets.size(); ++i) {
      if (files[i].empty() || !errors[i].empty()) continue;
      char* argv[] = {const_cast<char*>("cat"), const_cast<char*>(files[i].c_str()), nullptr};
      double a = now_us();
      pid_t pid;
      int status = 0;
      if (posix_spawn(&pid, "/bin/cat", &fa, nullptr, argv, environ) != 0 ||
          waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        errors[i] = "cat " + files[i] + " failed";
        continue;
      }
      double d = now_us() - a;
      lat[i].push_back(static_cast<float>(d));
      busy[i] += d;
    }
  }
  posix_spawn_file_actions_destroy(&fa);

  std::vector<Sample> out(targets.size());
  for (size_t i = 0; i < targets.size(); ++i) {
    Sample& s = out[i];
    if (files[i].empty()) {
      s.error = "n/a";
      continue;
    }
    if (!errors[i].empty()) {
      s.error = errors[i];
      continue;
    }
    auto& v = lat[i];
    std::sort(v.begin(), v.end());
    s.ops = v.size();
    s.p50_us = v[v.size() / 2];
    s.p99_us = v[std::min(v.size() - 1, v.size() * 99 / 100)];
    s.mean_us = busy[i] / v.size();
    s.ops_per_s = 1e6 / s.mean_us;
  }
  return out;
}

}  // namespace resctrlfs::bench
