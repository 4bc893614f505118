// Implements `resctrlfsd --self-check` (see self_check.h): hw/'s probe of
// the machine, a private resctrl tree over its model, and the comparison
// with the kernel's tree. Nothing here writes a register of the machine or
// a file of the kernel's tree: the kernel's tree is only read, and every
// write goes to the private tree.
#include "daemon/self_check.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "base/cpulist.h"
#include "daemon/startup.h"
#include "fs/filesystem.h"
#include "hw/probe.h"

namespace resctrlfs::daemon {

namespace {

namespace sfs = std::filesystem;

enum class Verdict { kMatch, kDiffer, kNotChecked };

struct Check {
  std::string area;  // "cpuid", "registers", "info", "schemata", ...
  std::string item;
  Verdict verdict = Verdict::kNotChecked;
  std::string detail;
};

const char* verdict_name(Verdict v) {
  switch (v) {
    case Verdict::kMatch:
      return "match";
    case Verdict::kDiffer:
      return "differ";
    case Verdict::kNotChecked:
      break;
  }
  return "not_checked";
}

std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

// A whole file of the kernel's tree, or the errno of its open or read.
struct FileText {
  int err = 0;
  std::string text;
};

FileText read_kernel_file(const std::string& path) {
  FileText out;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    out.err = errno;
    return out;
  }
  char buf[8192];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) out.err = errno;
    if (n <= 0) break;
    out.text.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

std::string one_line(std::string s) {
  while (!s.empty() && s.back() == '\n') s.pop_back();
  std::replace(s.begin(), s.end(), '\n', '|');
  return s;
}

// The private resctrl tree, addressed by relative paths.
class PrivateTree {
 public:
  explicit PrivateTree(fs::Filesystem& f) : fs_(f) {}

  Result<fs::Ino> lookup(const std::string& rel) {
    fs::Ino ino = fs::kRootIno;
    std::istringstream parts(rel);
    std::string name;
    while (std::getline(parts, name, '/')) {
      if (name.empty()) continue;
      RESCTRLFS_ASSIGN_OR_RETURN(fs::Attr a, fs_.lookup(ino, name));
      ino = a.ino;
    }
    return ino;
  }
  FileText read(const std::string& rel) {
    FileText out;
    auto ino = lookup(rel);
    if (!ino.ok()) {
      out.err = ino.error().code;
      return out;
    }
    auto text = fs_.render(*ino, caller_);
    if (!text.ok()) {
      out.err = text.error().code;
      return out;
    }
    out.text = *text;
    return out;
  }
  Result<void> write(const std::string& rel, const std::string& data) {
    RESCTRLFS_ASSIGN_OR_RETURN(fs::Ino ino, lookup(rel));
    RESCTRLFS_ASSIGN_OR_RETURN(size_t n, fs_.write(ino, data, caller_));
    (void)n;
    return Ok();
  }
  Result<void> mkdir(const std::string& name) {
    RESCTRLFS_ASSIGN_OR_RETURN(fs::Attr a, fs_.mkdir(fs::kRootIno, name, 0755, caller_));
    (void)a;
    return Ok();
  }
  // Regular files under `rel`, recursively, as relative paths.
  void files(const std::string& rel, std::vector<std::string>& out) {
    auto ino = lookup(rel);
    if (!ino.ok()) return;
    auto entries = fs_.readdir(*ino);
    if (!entries.ok()) return;
    for (const auto& e : *entries) {
      if (e.name == "." || e.name == "..") continue;
      const std::string p = rel + "/" + e.name;
      if ((e.attr.mode & S_IFMT) == S_IFDIR) {
        files(p, out);
      } else {
        out.push_back(p);
      }
    }
  }
  std::string lcs() { return one_line(read("info/last_cmd_status").text); }

 private:
  fs::Filesystem& fs_;
  fs::Caller caller_{static_cast<pid_t>(::getpid()), 0, 0};
};

void kernel_files(const sfs::path& root, const std::string& rel, std::vector<std::string>& out) {
  std::error_code ec;
  for (const auto& e : sfs::directory_iterator(root / rel, ec)) {
    const std::string p = rel + "/" + e.path().filename().string();
    if (e.is_directory(ec)) {
      kernel_files(root, p, out);
    } else {
      out.push_back(p);
    }
  }
}

// The kernel's mount options at `path` (from /proc/mounts), with CDP also
// read off the info/ directory (a stand-in tree may not list options).
fs::MountOptions kernel_mount_options(const std::string& mounts, const std::string& path) {
  fs::MountOptions o;
  std::istringstream in(mounts);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string source, target, type, opts;
    fields >> source >> target >> type >> opts;
    if (target != path) continue;
    std::istringstream list(opts);
    std::string opt;
    while (std::getline(list, opt, ',')) {
      if (opt == "cdp") o.cdp = true;
      if (opt == "cdpl2") o.cdpl2 = true;
      if (opt == "mba_MBps") o.mba_mbps = true;
      if (opt == "debug") o.debug = true;
      if (opt == "cba") o.cba = true;
    }
  }
  std::error_code ec;
  if (sfs::exists(path + "/info/L3CODE", ec)) o.cdp = true;
  if (sfs::exists(path + "/info/L2CODE", ec)) o.cdpl2 = true;
  // Our own resources, which a FUSE mount's options in the mount table do
  // not show: a tree that has them was mounted with their option.
  if (sfs::exists(path + "/info/CB", ec)) o.cba = true;
  if (sfs::exists(path + "/info/STLB", ec)) o.stlb = true;
  return o;
}

class Report {
 public:
  void add(std::string area, std::string item, Verdict v, std::string detail = {}) {
    checks_.push_back(Check{std::move(area), std::move(item), v, std::move(detail)});
  }
  bool any_differ() const {
    return std::any_of(checks_.begin(), checks_.end(),
                       [](const Check& c) { return c.verdict == Verdict::kDiffer; });
  }
  const std::vector<Check>& checks() const { return checks_; }

 private:
  std::vector<Check> checks_;
};

// Registers of the machine's CLOSID `hc` against the model's `mc`.
void compare_registers(Report& r, hw::HwProbe& probe, const std::string& item, uint32_t mc,
                       uint32_t hc, const std::string& how) {
  auto regs = probe.closid_registers(mc, hc);
  if (regs.empty()) {
    r.add("registers", item, Verdict::kNotChecked, "no control register for this CLOSID");
    return;
  }
  std::string differ, unread;
  for (const auto& reg : regs) {
    if (!reg.machine) {
      unread += (unread.empty() ? "" : "; ") + reg.what;
    } else if (*reg.machine != reg.model) {
      differ += (differ.empty() ? "" : "; ") + reg.what + " MSR " + hex(reg.msr) + " on CPU " +
                std::to_string(reg.cpu) + ": machine " + hex(*reg.machine) + ", resctrlfs " +
                hex(reg.model);
    }
  }
  if (!differ.empty()) {
    r.add("registers", item, Verdict::kDiffer, differ);
  } else if (!unread.empty()) {
    r.add("registers", item, Verdict::kNotChecked, "not read: " + unread);
  } else {
    r.add("registers", item, Verdict::kMatch,
          std::to_string(regs.size()) + " registers of CLOSID " + std::to_string(hc) + how);
  }
}

// A kernel group: name ("" for the root) and its directory.
struct Group {
  std::string name;
  std::string dir;
};

std::string list_of(const std::vector<unsigned>& v) {
  std::string out;
  for (unsigned x : v) out += (out.empty() ? "" : ",") + std::to_string(x);
  return out;
}

// The CPUs of a kernel group's cpus_list, or empty with `err` set.
std::vector<unsigned> kernel_cpus(const std::string& dir, unsigned nbits, std::string& err) {
  FileText t = read_kernel_file(dir + "/cpus_list");
  if (t.err != 0) {
    err = std::string("cpus_list unreadable: ") + std::strerror(t.err);
    return {};
  }
  auto m = parse_cpu_list(t.text, nbits);
  if (!m.ok()) {
    err = "cpus_list unparsable: " + one_line(t.text);
    return {};
  }
  return m->cpus();
}

// Each CPU in `cpus` must hold one of `want` in PQR_ASSOC's `field`
// ("CLOSID" or "RMID", read off `have`).
void compare_cpu_tags(Report& r, const std::string& item, const std::vector<unsigned>& cpus,
                      const std::vector<uint32_t>& want, const std::map<unsigned, uint32_t>& have,
                      const char* field, const std::string& how) {
  std::vector<unsigned> unread;
  std::string differ;
  for (unsigned c : cpus) {
    auto it = have.find(c);
    if (it == have.end()) {
      unread.push_back(c);
    } else if (std::find(want.begin(), want.end(), it->second) == want.end()) {
      differ += (differ.empty() ? "" : "; ") + std::string("CPU ") + std::to_string(c) + " has " +
                field + " " + std::to_string(it->second);
    }
  }
  std::vector<unsigned> wanted(want.begin(), want.end());
  const std::string expect = std::string(field) + (want.size() > 1 ? "s " : " ") + list_of(wanted);
  if (!differ.empty()) {
    // On a machine whose kernel runs a task of another group on that CPU
    // at the moment of the read, PQR_ASSOC holds the task's tags.
    r.add("cpus", item, Verdict::kDiffer,
          "cpus_list " + list_of(cpus) + ", the group's " + expect + how + "; in PQR_ASSOC: " +
              differ + " (or a task of another group was running there when it was read)");
  } else if (!unread.empty()) {
    r.add("cpus", item, Verdict::kNotChecked,
          "PQR_ASSOC not read on CPU(s) " + list_of(unread) + " of cpus_list " + list_of(cpus));
  } else {
    r.add("cpus", item, Verdict::kMatch,
          "PQR_ASSOC of CPU(s) " + list_of(cpus) + " holds " + expect + how);
  }
}

// Every kernel group's cpus_list against the CLOSIDs (and, where the
// kernel's tree gives mon_hw_id, the RMIDs) the CPUs' PQR_ASSOC hold.
// `closids[i]`: the CLOSIDs group i may have on the machine (empty:
// unknown), `how[i]` how they were found.
void compare_cpus(Report& r, hw::HwProbe& probe, const std::vector<Group>& groups,
                  const std::vector<std::vector<uint32_t>>& closids,
                  const std::vector<std::string>& how) {
  const hw::PlatformInfo& info = probe.model()->info();
  const unsigned nbits = info.nr_cpus;
  const auto cpu_closids = probe.machine_cpu_closids();
  const auto cpu_rmids = probe.machine_cpu_rmids();
  const bool mon = info.res(hw::ResourceId::L3).mon.capable;
  bool rmid_unknown = false;
  for (size_t i = 0; i < groups.size(); ++i) {
    const Group& g = groups[i];
    const std::string item = g.name.empty() ? "/" : g.name;
    std::string err;
    const auto cpus = kernel_cpus(g.dir, nbits, err);
    if (!err.empty()) {
      r.add("cpus", item, Verdict::kNotChecked, err);
      continue;
    }
    if (!cpus.empty()) {
      if (closids[i].empty()) {
        r.add("cpus", item, Verdict::kNotChecked,
              "cpus_list " + list_of(cpus) + ": the group's CLOSID on the machine is not known");
      } else {
        compare_cpu_tags(r, item, cpus, closids[i], cpu_closids, "CLOSID", how[i]);
      }
    }
    if (!mon) continue;
    // RMIDs: a CPU in a child MON group's cpus_list has that group's RMID,
    // the others the control group's (RMID 0 for the default group).
    std::vector<std::pair<std::string, std::string>> mons;  // item, dir
    std::error_code ec;
    for (const auto& e : sfs::directory_iterator(g.dir + "/mon_groups", ec))
      if (e.is_directory(ec))
        mons.emplace_back(item == "/" ? "mon_groups/" + e.path().filename().string()
                                      : item + "/mon_groups/" + e.path().filename().string(),
                          e.path().string());
    std::sort(mons.begin(), mons.end());
    auto rmid_of = [](const std::string& dir, bool root) -> std::optional<uint32_t> {
      FileText t = read_kernel_file(dir + "/mon_hw_id");
      if (t.err != 0) return root ? std::optional<uint32_t>(0) : std::nullopt;
      return static_cast<uint32_t>(std::strtoul(t.text.c_str(), nullptr, 10));
    };
    std::vector<unsigned> own = cpus;
    for (const auto& [mitem, mdir] : mons) {
      std::string merr;
      const auto mcpus = kernel_cpus(mdir, nbits, merr);
      if (!merr.empty()) {
        r.add("cpus", mitem + " RMID", Verdict::kNotChecked, merr);
        continue;
      }
      for (unsigned c : mcpus) own.erase(std::remove(own.begin(), own.end(), c), own.end());
      if (mcpus.empty()) continue;
      auto rmid = rmid_of(mdir, false);
      if (!rmid) {
        rmid_unknown = true;
        continue;
      }
      compare_cpu_tags(r, mitem + " RMID", mcpus, {*rmid}, cpu_rmids, "RMID",
                       " (the kernel's mon_hw_id)");
    }
    if (own.empty()) continue;
    auto rmid = rmid_of(g.dir, g.name.empty());
    if (!rmid || (g.name.empty() && rmid_unknown)) {
      rmid_unknown = true;
      continue;
    }
    compare_cpu_tags(r, item + " RMID", own, {*rmid}, cpu_rmids, "RMID",
                     g.name.empty() ? " (the default group's)" : " (the kernel's mon_hw_id)");
  }
  if (rmid_unknown) {
    r.add("cpus", "RMIDs", Verdict::kNotChecked,
          "the kernel's tree shows no mon_hw_id (mount it with -o debug to compare the CPUs' "
          "RMIDs)");
  }
}

void compare_with_kernel(Report& r, hw::HwProbe& probe, const std::string& kpath) {
  const std::string mounts = read_text_file("/proc/mounts");
  if (!resctrl_mounted_at(mounts, kpath)) {
    r.add("kernel", "resctrl at " + kpath, Verdict::kNotChecked,
          "not mounted (mount it with `mount -t resctrl resctrl " + kpath +
              "` and run again to compare the files)");
    // Without a tree, CLOSID 0 still should hold the defaults.
    if (probe.machine_error().empty()) {
      compare_registers(r, probe, "CLOSID 0 (no resctrl mounted: the defaults)", 0, 0, "");
    }
    return;
  }
  const fs::MountOptions mo = kernel_mount_options(mounts, kpath);
  auto tasks = fs::make_proc_task_source();
  fs::FilesystemConfig cfg;
  cfg.arch = probe.model();
  cfg.tasks = tasks.get();
  cfg.mount_uid = 0;
  cfg.mount_gid = 0;
  auto f = fs::make_filesystem(cfg);
  if (!f) {
    r.add("kernel", "private resctrl tree", Verdict::kNotChecked, "cannot create it");
    return;
  }
  fs::MountOptions private_opts = mo;
  private_opts.debug = true;  // ctrl_hw_id: which CLOSID each group got
  if (auto m = f->mount(private_opts); !m.ok()) {
    r.add("kernel", "mount options", Verdict::kDiffer,
          "resctrlfs cannot mount with the kernel's options: " + m.error().message);
    return;
  }
  r.add("kernel", "mount options", Verdict::kMatch,
        std::string("cdp=") + (mo.cdp ? "on" : "off") + " cdpl2=" + (mo.cdpl2 ? "on" : "off") +
            " mba_MBps=" + (mo.mba_mbps ? "on" : "off"));
  PrivateTree t(*f);
  for (auto rid : {hw::ResourceId::L3, hw::ResourceId::L2}) {
    auto cdp = probe.machine_cdp(rid);
    const hw::Resource& res = probe.model()->info().res(rid);
    if (!cdp && probe.machine_error().empty() && res.alloc_capable && res.is_bitmap() &&
        res.cache.cdp_capable && !res.ctrl_domains.empty()) {
      r.add("registers", std::string(hw::resource_name(rid)) + " CDP (QOS_CFG)",
            Verdict::kNotChecked, "the QOS_CFG register could not be read");
    }
    if (!cdp) continue;
    const bool want = rid == hw::ResourceId::L3 ? mo.cdp : mo.cdpl2;
    const std::string item = std::string(hw::resource_name(rid)) + " CDP (QOS_CFG)";
    r.add("registers", item, *cdp == want ? Verdict::kMatch : Verdict::kDiffer,
          std::string("machine ") + (*cdp ? "on" : "off") + ", mount " + (want ? "on" : "off"));
  }

  // The kernel's control groups, mirrored into the private tree.
  std::vector<Group> groups{{"", kpath}};
  std::error_code ec;
  std::vector<std::string> names;
  for (const auto& e : sfs::directory_iterator(kpath, ec)) {
    const std::string n = e.path().filename().string();
    if (n == "info" || n == "mon_groups" || n == "mon_data" || !e.is_directory(ec)) continue;
    if (!sfs::exists(e.path() / "schemata", ec)) continue;
    names.push_back(n);
  }
  std::sort(names.begin(), names.end());
  for (const auto& n : names) groups.push_back({n, kpath + "/" + n});
  auto rel = [](const Group& g, const std::string& file) {
    return g.name.empty() ? file : g.name + "/" + file;
  };
  std::vector<bool> mirrored(groups.size(), false);
  for (size_t i = 0; i < groups.size(); ++i) {
    const Group& g = groups[i];
    const std::string item = g.name.empty() ? "/" : g.name;
    FileText ks = read_kernel_file(g.dir + "/schemata");
    FileText mode = read_kernel_file(g.dir + "/mode");
    if (ks.err != 0) {
      r.add("schemata", item, Verdict::kNotChecked,
            std::string("kernel's schemata unreadable: ") + std::strerror(ks.err));
      continue;
    }
    if (mode.text.rfind("pseudo-locked", 0) == 0 || mode.text.rfind("pseudo-locksetup", 0) == 0) {
      r.add("schemata", item, Verdict::kNotChecked, "pseudo-locked groups are not mirrored");
      continue;
    }
    if (!g.name.empty()) {
      if (auto m = t.mkdir(g.name); !m.ok()) {
        r.add("schemata", item, Verdict::kDiffer,
              "resctrlfs refuses the group: " + m.error().message + " (" +
                  std::strerror(m.error().code) + ")");
        continue;
      }
    }
    if (auto w = t.write(rel(g, "schemata"), ks.text); !w.ok()) {
      r.add("schemata", item, Verdict::kDiffer,
            "resctrlfs refuses the kernel's schemata (" +
                std::string(std::strerror(w.error().code)) + "): " + t.lcs() +
                "; kernel: " + one_line(ks.text));
      continue;
    }
    mirrored[i] = true;
  }
  // Modes after every schemata: an exclusive group needs the others' final masks.
  for (size_t i = 1; i < groups.size(); ++i) {
    if (!mirrored[i]) continue;
    FileText mode = read_kernel_file(groups[i].dir + "/mode");
    if (mode.err == 0 && mode.text != "shareable\n") {
      if (auto w = t.write(rel(groups[i], "mode"), mode.text); !w.ok()) {
        r.add("schemata", groups[i].name + " mode", Verdict::kDiffer,
              "resctrlfs refuses mode " + one_line(mode.text) + ": " + t.lcs());
      }
    }
  }
  // The CLOSIDs each group may have on the machine (empty: not known).
  std::vector<std::vector<uint32_t>> hw_closids(groups.size());
  std::vector<std::string> hw_how(groups.size());
  hw_closids[0] = {0};
  hw_how[0] = " (the default group's)";
  for (size_t i = 1; i < groups.size(); ++i) {
    FileText kid = read_kernel_file(groups[i].dir + "/ctrl_hw_id");
    if (kid.err != 0) continue;
    hw_closids[i] = {static_cast<uint32_t>(std::strtoul(kid.text.c_str(), nullptr, 10))};
    hw_how[i] = " (the kernel's ctrl_hw_id)";
  }
  for (size_t i = 0; i < groups.size(); ++i) {
    if (!mirrored[i]) continue;
    const Group& g = groups[i];
    const std::string item = g.name.empty() ? "/" : g.name;
    FileText ks = read_kernel_file(g.dir + "/schemata");
    FileText ps = t.read(rel(g, "schemata"));
    if (ps.err == 0 && ps.text == ks.text) {
      r.add("schemata", item, Verdict::kMatch);
    } else {
      r.add("schemata", item, Verdict::kDiffer,
            "kernel: " + one_line(ks.text) + "; resctrlfs: " + one_line(ps.text));
    }
    // The registers resctrlfs would program for it against the machine's.
    if (!probe.machine_error().empty()) continue;
    uint32_t mc = 0;
    if (!g.name.empty()) {
      FileText id = t.read(rel(g, "ctrl_hw_id"));
      if (id.err != 0) continue;
      mc = static_cast<uint32_t>(std::strtoul(id.text.c_str(), nullptr, 10));
    }
    FileText kid = read_kernel_file(g.dir + "/ctrl_hw_id");
    if (kid.err == 0) {
      const auto hc = static_cast<uint32_t>(std::strtoul(kid.text.c_str(), nullptr, 10));
      compare_registers(r, probe, item, mc, hc, " (the kernel's ctrl_hw_id)");
      continue;
    }
    auto like = probe.machine_closids_like(mc);
    auto unsure = probe.machine_closids_unsure(mc);
    if (like.empty() && !unsure.empty()) {
      // A refused or failed read must not turn into "no CLOSID holds it".
      std::string list;
      for (uint32_t c : unsure) list += (list.empty() ? "" : ",") + std::to_string(c);
      r.add("registers", item, Verdict::kNotChecked,
            "CLOSID(s) " + list +
                " may hold the registers resctrlfs would program for this schemata, but some of "
                "their registers could not be read");
    } else if (like.empty()) {
      r.add("registers", item, Verdict::kDiffer,
            "no CLOSID on the machine holds the registers resctrlfs would program for this "
            "schemata (mount the kernel's resctrl with -o debug to compare by CLOSID)");
    } else {
      std::string list;
      for (uint32_t c : like) list += (list.empty() ? "" : ",") + std::to_string(c);
      if (i > 0) {
        hw_closids[i] = like;
        hw_how[i] = " (matched by value)";
      }
      r.add("registers", item, Verdict::kMatch,
            "held by CLOSID(s) " + list +
                " (matched by value; -o debug on the kernel's mount compares by CLOSID)");
    }
  }

  if (probe.machine_error().empty()) compare_cpus(r, probe, groups, hw_closids, hw_how);

  // Every info/ file (after the mirroring: bit_usage depends on the groups).
  std::vector<std::string> kfiles, pfiles;
  kernel_files(kpath, "info", kfiles);
  t.files("info", pfiles);
  std::sort(kfiles.begin(), kfiles.end());
  std::sort(pfiles.begin(), pfiles.end());
  for (const auto& p : kfiles) {
    if (p == "info/last_cmd_status") {
      r.add("info", p, Verdict::kNotChecked, "depends on the last command in each tree");
      continue;
    }
    if (!std::binary_search(pfiles.begin(), pfiles.end(), p)) {
      r.add("info", p, Verdict::kDiffer, "only in the kernel's tree");
      continue;
    }
    FileText k = read_kernel_file(kpath + "/" + p);
    FileText q = t.read(p);
    if (k.err == q.err && k.text == q.text) {
      r.add("info", p, Verdict::kMatch);
    } else {
      auto show = [](const FileText& x) {
        return x.err ? std::string("error ") + std::strerror(x.err) : one_line(x.text);
      };
      r.add("info", p, Verdict::kDiffer, "kernel: " + show(k) + "; resctrlfs: " + show(q));
    }
  }
  for (const auto& p : pfiles) {
    if (!std::binary_search(kfiles.begin(), kfiles.end(), p))
      r.add("info", p, Verdict::kDiffer, "only in resctrlfs's tree");
  }
  f->unmount();
}

}  // namespace

int run_self_check(const SelfCheckOptions& opts, std::string& out) {
  Report r;
  auto probe_or = hw::probe_hardware(opts.broker_socket, opts.rdt, opts.hw_root);
  if (!probe_or.ok()) {
    out =
        "resctrlfsd --self-check: cannot read the CPU topology: " + probe_or.error().message + "\n";
    return 2;
  }
  hw::HwProbe& probe = **probe_or;

  const auto diffs = probe.cpuid_differences();
  for (const auto& d : diffs) {
    if (d.rfind("not checked: ", 0) == 0) {
      r.add("cpuid", "every CPU", Verdict::kNotChecked, d.substr(13));
    } else {
      r.add("cpuid", "every CPU", Verdict::kDiffer, d);
    }
  }
  if (diffs.empty()) {
    r.add(
        "cpuid", "every CPU", Verdict::kMatch,
        "the RDT leaves of " + std::to_string(probe.cpus_checked()) + " online CPUs are the same");
  }
  if (!probe.model()) {
    r.add("resctrl", "tree for this CPUID", Verdict::kNotChecked, probe.model_error());
  }
  if (!probe.machine_error().empty()) {
    r.add("registers", "read through resctrl-msrd", Verdict::kNotChecked, probe.machine_error());
  } else if (probe.model()) {
    const auto unread = probe.unread_registers();
    if (unread.empty()) {
      r.add("registers", "read through resctrl-msrd", Verdict::kMatch,
            std::to_string(probe.machine_ops().first) + " reads, every one served");
    } else {
      r.add("registers", "read through resctrl-msrd", Verdict::kNotChecked,
            std::to_string(unread.size()) + " reads failed, first: " + unread.front());
    }
  }
  for (const hw::ProbeTelemetry& t : probe.telemetry()) {
    if (t.served) {
      r.add("telemetry", t.what, Verdict::kMatch,
            "a known per-RMID layout, read through resctrl-msrd");
    } else {
      r.add("telemetry", t.what, Verdict::kNotChecked, t.note);
    }
  }
  if (probe.model()) compare_with_kernel(r, probe, opts.kernel_resctrl);

  unsigned n[3] = {0, 0, 0};
  for (const auto& c : r.checks()) ++n[static_cast<int>(c.verdict)];
  const auto [reads, writes] = probe.machine_ops();
  if (opts.json) {
    nlohmann::json j;
    j["resctrlfs_self_check"] = 1;
    j["version"] = "0.1.0";
    j["cpu"] = {{"identity", probe.cpu_identity()},
                {"cpuid_flags", probe.cpuid_flags()},
                {"cpus_checked", probe.cpus_checked()}};
    j["kernel_resctrl"] = opts.kernel_resctrl;
    j["msr_reads"] = reads;
    j["msr_writes"] = writes;
    j["checks"] = nlohmann::json::array();
    for (const auto& c : r.checks()) {
      j["checks"].push_back({{"area", c.area},
                             {"item", c.item},
                             {"result", verdict_name(c.verdict)},
                             {"detail", c.detail}});
    }
    j["summary"] = {{"match", n[0]}, {"differ", n[1]}, {"not_checked", n[2]}};
    out = j.dump(2) + "\n";
  } else {
    std::ostringstream os;
    os << "resctrlfs self-check 0.1.0 (read-only: " << reads << " MSR reads, " << writes
       << " writes)\n";
    os << "CPU: " << probe.cpu_identity() << "; CPUID flags:";
    for (const auto& fl : probe.cpuid_flags()) os << " " << fl;
    os << "\n";
    for (const auto& c : r.checks()) {
      const char* tag = c.verdict == Verdict::kMatch    ? "MATCH      "
                        : c.verdict == Verdict::kDiffer ? "DIFFER     "
                                                        : "NOT CHECKED";
      os << tag << " " << c.area << ": " << c.item;
      if (!c.detail.empty()) os << ": " << c.detail;
      os << "\n";
    }
    os << "summary: " << n[0] << " match, " << n[1] << " differ, " << n[2] << " not checked\n";
    out = os.str();
  }
  return r.any_differ() ? 1 : 0;
}

}  // namespace resctrlfs::daemon
