// libFuzzer target: hostile writes to the resctrl files whose parsers live
// in fs/ (tasks, cpus, cpus_list, mode, mbm_{total,local}_bytes_config,
// max_threshold_occupancy, mbm_assign_mode, the MON group's tasks and
// cpus_list) and hostile state documents for restore_state_json(). Each
// input builds a fresh filesystem over the simulated AMD machine (BMEC and
// ABMC present) with a fake task list, so a crash reproduces from its input
// alone. The first byte chooses the file; the rest is one write(2).
//
// Besides crashes and sanitizer reports, it checks the invariant every
// command must keep: each online CPU belongs to exactly one CTRL_MON group.
#include <fcntl.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "fs/filesystem.h"
#include "hw/backend.h"

namespace {

using namespace resctrlfs;

class FuzzTasks final : public fs::TaskSource {
 public:
  Result<std::vector<pid_t>> all_threads() override {
    return std::vector<pid_t>{100, 101, 102, 200};
  }
  int lookup(pid_t tid) override {
    return tid == 100 || tid == 101 || tid == 102 || tid == 200 ? 0 : ESRCH;
  }
  int uids(pid_t tid, uid_t& ruid, uid_t& suid) override {
    if (lookup(tid) != 0) return ESRCH;
    ruid = suid = tid == 200 ? 1000 : 0;
    return 0;
  }
};

struct Target {
  const char* path;
  bool as_user;  // write as uid 1000 (permission paths)
};

// Index = first byte modulo the table size; the last entry is the state
// document restore.
const Target kTargets[] = {
    {"/g/tasks", false},
    {"/g/cpus", false},
    {"/g/cpus_list", false},
    {"/g/mode", false},
    {"/info/L3_MON/mbm_total_bytes_config", false},
    {"/info/L3_MON/mbm_local_bytes_config", false},
    {"/info/L3_MON/max_threshold_occupancy", false},
    {"/info/L3_MON/mbm_assign_mode", false},
    {"/g/mon_groups/m/tasks", false},
    {"/g/mon_groups/m/cpus_list", false},
    {"/tasks", true},
    {"/cpus_list", false},
    {nullptr, false},
};
constexpr size_t kNumTargets = sizeof(kTargets) / sizeof(kTargets[0]);

fs::Ino resolve(fs::Filesystem& f, std::string_view path) {
  fs::Ino cur = fs::kRootIno;
  size_t pos = 1;
  while (pos < path.size()) {
    size_t next = path.find('/', pos);
    std::string_view comp =
        path.substr(pos, next == std::string_view::npos ? path.npos : next - pos);
    auto a = f.lookup(cur, comp);
    if (!a.ok()) return 0;
    cur = a->ino;
    if (next == std::string_view::npos) break;
    pos = next + 1;
  }
  return cur;
}

std::string read_file(fs::Filesystem& f, std::string_view path) {
  fs::Ino ino = resolve(f, path);
  if (ino == 0) return "";
  if (!f.open(ino, O_RDONLY, fs::Caller{1, 0, 0}).ok()) return "";
  auto r = f.render(ino, fs::Caller{1, 0, 0});
  return r.ok() ? *r : std::string();
}

// The cpus_list syntax fs/ prints: "a-b,c".
std::vector<bool> parse_list(const std::string& s, unsigned n) {
  std::vector<bool> out(n, false);
  size_t pos = 0;
  while (pos < s.size() && s[pos] != '\n') {
    unsigned a = 0, b = 0;
    while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') a = a * 10 + (s[pos++] - '0');
    b = a;
    if (pos < s.size() && s[pos] == '-') {
      ++pos;
      b = 0;
      while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') b = b * 10 + (s[pos++] - '0');
    }
    for (unsigned c = a; c <= b && c < n; ++c) out[c] = true;
    if (pos < s.size() && s[pos] == ',') ++pos;
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static hw::Backend backend = [] {
    auto b = hw::make_sim_backend("amd-2s");
    if (!b.ok()) std::abort();
    return std::move(b.value());
  }();
  FuzzTasks tasks;
  fs::FilesystemConfig cfg;
  cfg.arch = backend.arch.get();
  cfg.tasks = &tasks;
  auto f = fs::make_filesystem(cfg);
  if (!f || !f->mount({}).ok()) std::abort();
  const fs::Caller root{100, 0, 0};
  const fs::Caller user{200, 1000, 1000};
  // BMEC files exist only outside mbm_event mode.
  (void)f->write(resolve(*f, "/info/L3_MON/mbm_assign_mode"), "default\n", root);
  (void)f->mkdir(fs::kRootIno, "g", 0755, root);
  (void)f->mkdir(resolve(*f, "/g/mon_groups"), "m", 0755, root);
  (void)f->write(resolve(*f, "/g/cpus_list"), "4-5\n", root);

  const Target& t = kTargets[data[0] % kNumTargets];
  std::string_view payload(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (t.path == nullptr) {
    // A hostile state document on the freshly mounted tree.
    f->unmount();
    if (!f->mount({}).ok()) std::abort();
    (void)f->restore_state_json(std::string(payload));
  } else {
    fs::Ino ino = resolve(*f, t.path);
    if (ino != 0) (void)f->write(ino, payload, t.as_user ? user : root);
  }

  // Every online CPU in exactly one CTRL_MON group.
  const unsigned n = backend.arch->info().nr_cpus;
  std::vector<int> owners(n, 0);
  for (const char* p : {"/cpus_list", "/g/cpus_list"}) {
    std::string s = read_file(*f, p);
    if (s.empty()) continue;
    std::vector<bool> m = parse_list(s, n);
    for (unsigned c = 0; c < n; ++c) owners[c] += m[c] ? 1 : 0;
  }
  if (resolve(*f, "/g") != 0) {
    for (unsigned c = 0; c < n; ++c) {
      if (backend.arch->info().online.test(c) && owners[c] != 1) std::abort();
    }
  }
  f->unmount();
  return 0;
}
