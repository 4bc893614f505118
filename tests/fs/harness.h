// Defines the unit-test harness of fs/: a fake TaskSource, a recording
// InvalidationSink, and Shell, which drives an fs::Filesystem by path the
// way a shell would (cat, echo, mkdir, rmdir, mv) and reports errno and
// info/last_cmd_status.
#pragma once

#include <fcntl.h>

#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "fs/filesystem.h"
#include "hw/backend.h"
#include "tests/fs/fake_arch.h"

namespace resctrlfs::fs::testing {

class FakeTasks final : public TaskSource {
 public:
  void add(pid_t tid, uid_t ruid = 0, uid_t suid = 0) {
    if (!threads_.count(tid)) order_.push_back(tid);
    threads_[tid] = {ruid, suid};
  }
  void remove(pid_t tid) {
    threads_.erase(tid);
    std::erase(order_, tid);
  }
  std::vector<pid_t> all_threads() override { return order_; }
  bool exists(pid_t tid) override { return threads_.count(tid) != 0; }
  bool uids(pid_t tid, uid_t& ruid, uid_t& suid) override {
    auto it = threads_.find(tid);
    if (it == threads_.end()) return false;
    ruid = it->second.first;
    suid = it->second.second;
    return true;
  }

 private:
  std::map<pid_t, std::pair<uid_t, uid_t>> threads_;
  std::vector<pid_t> order_;
};

class RecordingInval final : public InvalidationSink {
 public:
  void inval_entry(Ino parent, const std::string& name) override {
    entries.emplace_back(parent, name);
  }
  void inval_inode(Ino ino) override { inodes.push_back(ino); }
  std::vector<std::pair<Ino, std::string>> entries;
  std::vector<Ino> inodes;
};

inline Caller root_caller(pid_t tid = 1) { return Caller{tid, 0, 0}; }

// Drives a Filesystem by path.
class Shell {
 public:
  explicit Shell(Filesystem& fs) : fs_(fs) {}

  // Inode of `path` ("/" or "/a/b"), or -errno.
  Result<Ino> resolve(const std::string& path) {
    Ino cur = kRootIno;
    size_t pos = 1;
    while (pos < path.size()) {
      size_t next = path.find('/', pos);
      std::string comp =
          path.substr(pos, next == std::string::npos ? std::string::npos : next - pos);
      if (!comp.empty()) {
        auto a = fs_.lookup(cur, comp);
        if (!a.ok()) return std::move(a).error();
        cur = a->ino;
      }
      if (next == std::string::npos) break;
      pos = next + 1;
    }
    return cur;
  }
  static std::pair<std::string, std::string> split(const std::string& path) {
    size_t slash = path.rfind('/');
    std::string parent = slash == 0 ? "/" : path.substr(0, slash);
    return {parent, path.substr(slash + 1)};
  }

  // Content of a file, or "ERRNO <n>".
  std::string cat(const std::string& path, const Caller& c = root_caller()) {
    auto ino = resolve(path);
    if (!ino.ok()) return "ERRNO " + std::to_string(ino.error().code);
    auto f = fs_.open(*ino, O_RDONLY, c);
    if (!f.ok()) return "ERRNO " + std::to_string(f.error().code);
    if (f->read_errno != 0) return "ERRNO " + std::to_string(f->read_errno);
    return f->snapshot;
  }
  // One write(2) after open(O_WRONLY|O_TRUNC); 0 or errno.
  int write(const std::string& path, const std::string& data, const Caller& c = root_caller()) {
    auto ino = resolve(path);
    if (!ino.ok()) return ino.error().code;
    auto f = fs_.open(*ino, O_WRONLY | O_TRUNC, c);
    if (!f.ok()) return f.error().code;
    auto w = fs_.write(*ino, data, c);
    return w.ok() ? 0 : w.error().code;
  }
  // `echo data > path`
  int echo(const std::string& path, const std::string& data, const Caller& c = root_caller()) {
    return write(path, data + "\n", c);
  }
  int mkdir(const std::string& path, uint32_t mode = 0755, const Caller& c = root_caller()) {
    auto [parent, name] = split(path);
    auto p = resolve(parent);
    if (!p.ok()) return p.error().code;
    auto r = fs_.mkdir(*p, name, mode, c);
    return r.ok() ? 0 : r.error().code;
  }
  int rmdir(const std::string& path) {
    auto [parent, name] = split(path);
    auto p = resolve(parent);
    if (!p.ok()) return p.error().code;
    auto r = fs_.rmdir(*p, name);
    return r.ok() ? 0 : r.error().code;
  }
  int mv(const std::string& from, const std::string& to, unsigned flags = 0) {
    auto [fp, fn] = split(from);
    auto [tp, tn] = split(to);
    auto a = resolve(fp);
    auto b = resolve(tp);
    if (!a.ok()) return a.error().code;
    if (!b.ok()) return b.error().code;
    auto r = fs_.rename(*a, fn, *b, tn, flags);
    return r.ok() ? 0 : r.error().code;
  }
  std::set<std::string> ls(const std::string& path) {
    std::set<std::string> out;
    auto ino = resolve(path);
    if (!ino.ok()) return out;
    auto d = fs_.readdir(*ino);
    if (!d.ok()) return out;
    for (auto& e : *d) out.insert(e.name);
    return out;
  }
  Attr stat(const std::string& path) {
    auto ino = resolve(path);
    if (!ino.ok()) return Attr{};
    auto a = fs_.getattr(*ino);
    return a.ok() ? *a : Attr{};
  }
  std::string lcs() { return cat("/info/last_cmd_status"); }

 private:
  Filesystem& fs_;
};

// A simulated platform, a fake task list and a mounted Filesystem.
struct SimFixture {
  explicit SimFixture(const std::string& platform, MountOptions opts = {}) {
    auto b = hw::make_sim_backend(platform);
    if (!b.ok()) throw std::runtime_error("sim backend: " + b.error().message);
    backend = std::move(b.value());
    FilesystemConfig cfg;
    cfg.arch = backend.arch.get();
    cfg.tasks = &tasks;
    cfg.inval = &inval;
    fs = make_filesystem(cfg);
    auto m = fs->mount(opts);
    if (!m.ok()) throw std::runtime_error("mount: " + m.error().message);
    sh = std::make_unique<Shell>(*fs);
  }
  hw::Backend backend;
  FakeTasks tasks;
  RecordingInval inval;
  std::unique_ptr<Filesystem> fs;
  std::unique_ptr<Shell> sh;
};

// A FakeArch platform, a fake task list and a Filesystem over them, mounted
// with default options unless `mounted` is false (for tests of mount itself).
struct FakeFixture {
  explicit FakeFixture(hw::PlatformInfo p, bool mounted = true) : arch(std::move(p)) {
    FilesystemConfig cfg;
    cfg.arch = &arch;
    cfg.tasks = &tasks;
    fs = make_filesystem(cfg);
    if (mounted) {
      auto m = fs->mount({});
      if (!m.ok()) throw std::runtime_error("mount: " + m.error().message);
    }
    sh = std::make_unique<Shell>(*fs);
  }
  FakeArch arch;
  FakeTasks tasks;
  std::unique_ptr<Filesystem> fs;
  std::unique_ptr<Shell> sh;
};

}  // namespace resctrlfs::fs::testing
