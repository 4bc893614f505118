// Implements the /proc text rewrites of proc_rewrite.h.
#include "sandbox/proc_rewrite.h"

#include <algorithm>
#include <cerrno>
#include <set>

namespace resctrlfs::sandbox {
namespace {

std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    if (nl == std::string_view::npos) {
      lines.push_back(text);
      break;
    }
    lines.push_back(text.substr(0, nl));
    text.remove_prefix(nl + 1);
  }
  return lines;
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (true) {
    size_t p = s.find(sep, start);
    if (p == std::string_view::npos) {
      out.push_back(s.substr(start));
      return out;
    }
    out.push_back(s.substr(start, p - start));
    start = p + 1;
  }
}

// Space-separated fields of a mounts/mountinfo line (no empty fields there).
std::vector<std::string_view> fields(std::string_view line) {
  std::vector<std::string_view> out;
  for (auto f : split(line, ' '))
    if (!f.empty()) out.push_back(f);
  return out;
}

std::string join(const std::vector<std::string_view>& parts, std::string_view sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i) out += sep;
    out += parts[i];
  }
  return out;
}

// The kernel escapes these characters in mount paths as \ooo.
std::string escape_path(std::string_view path) {
  std::string out;
  for (char c : path) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\\') {
      char buf[5];
      buf[0] = '\\';
      buf[1] = static_cast<char>('0' + ((c >> 6) & 7));
      buf[2] = static_cast<char>('0' + ((c >> 3) & 7));
      buf[3] = static_cast<char>('0' + (c & 7));
      buf[4] = 0;
      out += buf;
    } else {
      out += c;
    }
  }
  return out;
}

// escape_path() undone: each \ooo back to its byte.
std::string unescape_path(std::string_view esc) {
  auto octal = [](char c) { return c >= '0' && c <= '7'; };
  std::string out;
  for (size_t i = 0; i < esc.size(); ++i) {
    if (esc[i] == '\\' && i + 3 < esc.size() && esc[i + 1] >= '0' && esc[i + 1] <= '3' &&
        octal(esc[i + 2]) && octal(esc[i + 3])) {
      out +=
          static_cast<char>((esc[i + 1] - '0') * 64 + (esc[i + 2] - '0') * 8 + (esc[i + 3] - '0'));
      i += 3;
    } else {
      out += esc[i];
    }
  }
  return out;
}

// Options that the VFS shows for every mount (show_mnt_opts and the
// rw/ro + atime prefix); everything else in /proc/mounts comes from the
// filesystem's own show_options and is dropped for FUSE.
bool is_generic_mount_option(std::string_view opt) {
  static const std::set<std::string_view> kGeneric = {
      "rw",       "ro",          "nosuid",   "nodev",       "noexec",
      "sync",     "dirsync",     "mand",     "noatime",     "nodiratime",
      "relatime", "strictatime", "lazytime", "nosymfollow", "silent"};
  return kGeneric.count(opt) != 0;
}

std::string with_resctrl_opts(std::string base, const std::vector<std::string>& resctrl_opts) {
  for (const auto& o : resctrl_opts) {
    base += ',';
    base += o;
  }
  return base;
}

std::string join_lines(const std::vector<std::string>& lines, bool trailing_newline) {
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) {
    out += lines[i];
    if (i + 1 < lines.size() || trailing_newline) out += '\n';
  }
  return out;
}

}  // namespace

const std::vector<std::string>& rdt_cpuinfo_flags() {
  // The order the kernel prints them in; the last four are hidden by
  // current kernels but may show on others, so they are removed too. The
  // first is not RDT: AMD Lightweight Profiling, shown only when the
  // platform enumerates it (family 15h), never inherited from the host.
  static const std::vector<std::string> kFlags = {
      "lwp",  "cat_l3", "cat_l2",  "cdp_l3",        "cdp_l2",        "mba",
      "cqm",  "rdt_a",  "cqm_llc", "cqm_occup_llc", "cqm_mbm_total", "cqm_mbm_local",
      "smba", "bmec",   "abmc",    "sdciae"};
  return kFlags;
}

std::string rewrite_cpuinfo(std::string_view cpuinfo,
                            const std::vector<std::string>& platform_flags) {
  const auto& known = rdt_cpuinfo_flags();
  std::set<std::string_view> drop(known.begin(), known.end());
  for (const auto& f : platform_flags) drop.insert(f);
  std::vector<std::string> add;
  for (const auto& f : platform_flags)
    if (std::find(add.begin(), add.end(), f) == add.end()) add.push_back(f);

  std::vector<std::string> out;
  auto lines = split_lines(cpuinfo);
  for (auto line : lines) {
    size_t colon = line.find(':');
    bool is_flags = colon != std::string_view::npos && line.substr(0, 5) == "flags" &&
                    line.substr(5, colon - 5).find_first_not_of(" \t") == std::string_view::npos;
    if (!is_flags) {
      out.emplace_back(line);
      continue;
    }
    std::string head(line.substr(0, colon + 1));
    std::vector<std::string_view> kept;
    for (auto tok : fields(line.substr(colon + 1)))
      if (!drop.count(tok)) kept.push_back(tok);
    for (const auto& f : add) kept.push_back(f);
    std::string rebuilt = head;
    if (!kept.empty()) rebuilt += " " + join(kept, " ");
    out.push_back(std::move(rebuilt));
  }
  bool trailing = !cpuinfo.empty() && cpuinfo.back() == '\n';
  return join_lines(out, trailing);
}

namespace {

// The key of a "key\t: value" cpuinfo line ("" if it has no colon).
std::string_view cpuinfo_key(std::string_view line) {
  size_t colon = line.find(':');
  if (colon == std::string_view::npos) return {};
  std::string_view k = line.substr(0, colon);
  while (!k.empty() && (k.back() == ' ' || k.back() == '\t')) k.remove_suffix(1);
  return k;
}

// The unsigned number after a cpuinfo line's colon, or -1.
long cpuinfo_number(std::string_view line) {
  size_t colon = line.find(':');
  if (colon == std::string_view::npos) return -1;
  std::string_view v = line.substr(colon + 1);
  while (!v.empty() && v.front() == ' ') v.remove_prefix(1);
  long n = 0;
  if (v.empty() || v.front() < '0' || v.front() > '9') return -1;
  for (char c : v) {
    if (c < '0' || c > '9') break;
    n = n * 10 + (c - '0');
    if (n > (1L << 40)) return -1;
  }
  return n;
}

// The line with its value replaced, keeping "key<whitespace>: ".
std::string with_value(std::string_view line, const std::string& value) {
  size_t colon = line.find(':');
  return std::string(line.substr(0, colon + 1)) + " " + value;
}

}  // namespace

std::string rewrite_cpuinfo_topology(std::string_view cpuinfo, const std::vector<int>& packages,
                                     uint64_t cache_size_kb) {
  std::vector<std::string> out;
  auto lines = split_lines(cpuinfo);
  // One block per processor, separated by empty lines.
  size_t i = 0;
  while (i < lines.size()) {
    size_t end = i;
    while (end < lines.size() && !lines[end].empty()) ++end;
    int package = -1;
    long host_siblings = -1, host_cores = -1;
    bool has_cache = false;
    for (size_t k = i; k < end; ++k) {
      std::string_view key = cpuinfo_key(lines[k]);
      long v = cpuinfo_number(lines[k]);
      if (key == "processor" && v >= 0 && static_cast<size_t>(v) < packages.size())
        package = packages[static_cast<size_t>(v)];
      if (key == "siblings") host_siblings = v;
      if (key == "cpu cores") host_cores = v;
      if (key == "cache size") has_cache = true;
    }
    long siblings = 0;
    for (int p : packages)
      if (package >= 0 && p == package) ++siblings;
    const long threads = host_siblings > 0 && host_cores > 0 && host_siblings >= host_cores
                             ? host_siblings / host_cores
                             : 1;
    const std::string cache = std::to_string(cache_size_kb) + " KB";
    long cache_at = -1;  // where in `out` a missing "cache size" line goes
    for (size_t k = i; k < end; ++k) {
      std::string_view line = lines[k];
      std::string_view key = cpuinfo_key(line);
      if (package >= 0 && key == "physical id") {
        out.push_back(with_value(line, std::to_string(package)));
      } else if (package >= 0 && key == "siblings") {
        out.push_back(with_value(line, std::to_string(siblings)));
      } else if (package >= 0 && key == "cpu cores") {
        out.push_back(with_value(line, std::to_string(std::max(1L, siblings / threads))));
      } else if (cache_size_kb != 0 && key == "cache size") {
        out.push_back(with_value(line, cache));
      } else {
        out.emplace_back(line);
      }
      if (key == "cpu MHz" || (key == "stepping" && cache_at < 0))
        cache_at = static_cast<long>(out.size());
    }
    if (cache_size_kb != 0 && !has_cache && cache_at >= 0)
      out.insert(out.begin() + cache_at, "cache size\t: " + cache);
    // The empty separator lines.
    for (i = end; i < lines.size() && lines[i].empty(); ++i) out.emplace_back();
  }
  bool trailing = !cpuinfo.empty() && cpuinfo.back() == '\n';
  return join_lines(out, trailing);
}

std::string virtual_cpuinfo(std::string_view host_cpuinfo, const std::vector<int>& cores) {
  auto lines = split_lines(host_cpuinfo);
  size_t begin = 0;
  while (begin < lines.size() && cpuinfo_key(lines[begin]) != "processor") ++begin;
  size_t end = begin;
  while (end < lines.size() && !lines[end].empty()) ++end;
  if (begin == end) return "";
  std::string out;
  for (size_t cpu = 0; cpu < cores.size(); ++cpu) {
    const std::string n = std::to_string(cpu);
    for (size_t k = begin; k < end; ++k) {
      std::string_view key = cpuinfo_key(lines[k]);
      if (key == "processor" || key == "apicid" || key == "initial apicid")
        out += with_value(lines[k], n);
      else if (key == "core id")
        out += with_value(lines[k], std::to_string(cores[cpu]));
      else
        out += lines[k];
      out += '\n';
    }
    out += '\n';
  }
  return out;
}

std::string rewrite_cpuinfo_vendor(std::string_view cpuinfo, const std::string& vendor) {
  if (vendor.empty()) return std::string(cpuinfo);
  std::vector<std::string> out;
  for (auto line : split_lines(cpuinfo))
    out.push_back(cpuinfo_key(line) == "vendor_id" ? with_value(line, vendor) : std::string(line));
  bool trailing = !cpuinfo.empty() && cpuinfo.back() == '\n';
  return join_lines(out, trailing);
}

std::vector<std::string> resctrl_mount_points(std::string_view mountinfo) {
  std::vector<std::string> out;
  for (auto line : split_lines(mountinfo)) {
    auto f = fields(line);
    // ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER
    auto sep = std::find(f.begin(), f.end(), std::string_view("-"));
    if (f.size() < 5 || std::distance(sep, f.end()) < 2) continue;
    if (*(sep + 1) != "resctrl" && *(sep + 1) != "fuse.resctrl") continue;
    out.push_back(unescape_path(f[4]));
  }
  std::stable_sort(out.begin(), out.end(), [](const std::string& a, const std::string& b) {
    return std::count(a.begin(), a.end(), '/') > std::count(b.begin(), b.end(), '/');
  });
  return out;
}

std::string add_resctrl_filesystem(std::string_view filesystems) {
  for (auto line : split_lines(filesystems))
    if (line == "nodev\tresctrl") return std::string(filesystems);
  std::string out(filesystems);
  if (!out.empty() && out.back() != '\n') out += '\n';
  out += "nodev\tresctrl\n";
  return out;
}

std::vector<std::string> resctrl_mount_options(std::string_view o_options) {
  // The kernel's rdt_show_options order.
  static const std::vector<std::string> kOrder = {"cdp", "cdpl2", "mba_MBps", "debug"};
  std::set<std::string_view> given;
  for (auto o : split(o_options, ',')) given.insert(o);
  std::vector<std::string> out;
  for (const auto& o : kOrder)
    if (given.count(o)) out.push_back(o);
  return out;
}

namespace {

// The mounts line for fields `f` of a line at our mount.
std::string resctrl_mounts_line(const std::vector<std::string_view>& f,
                                const std::vector<std::string>& resctrl_opts) {
  std::vector<std::string_view> generic;
  for (auto o : split(f[3], ','))
    if (is_generic_mount_option(o)) generic.push_back(o);
  std::string opts = with_resctrl_opts(join(generic, ","), resctrl_opts);
  return "resctrl " + std::string(f[1]) + " resctrl " + opts + " 0 0";
}

// The mountinfo line for fields `f` of a line at our mount, or "" if the
// line is malformed.
std::string resctrl_mountinfo_line(const std::vector<std::string_view>& f,
                                   const std::vector<std::string>& resctrl_opts) {
  auto sep = std::find(f.begin(), f.end(), std::string_view("-"));
  if (sep == f.end() || std::distance(sep, f.end()) < 4) return "";
  std::vector<std::string_view> head(f.begin(), sep);
  std::string_view super = *(sep + 3);
  std::string_view rwro = super.substr(0, 2) == "ro" ? "ro" : "rw";
  return join(head, " ") + " - resctrl resctrl " +
         with_resctrl_opts(std::string(rwro), resctrl_opts);
}

}  // namespace

std::string rewrite_mounts(std::string_view mounts, std::string_view mountpoint,
                           const std::vector<std::string>& resctrl_opts) {
  const std::string mp = escape_path(mountpoint);
  auto lines = split_lines(mounts);
  int target = -1;
  for (size_t i = 0; i < lines.size(); ++i) {
    auto f = fields(lines[i]);
    if (f.size() >= 4 && f[1] == mp) target = static_cast<int>(i);
  }
  std::vector<std::string> out(lines.begin(), lines.end());
  if (target >= 0) out[target] = resctrl_mounts_line(fields(lines[target]), resctrl_opts);
  bool trailing = !mounts.empty() && mounts.back() == '\n';
  return join_lines(out, trailing);
}

std::string rewrite_mountinfo(std::string_view mountinfo, std::string_view mountpoint,
                              const std::vector<std::string>& resctrl_opts) {
  const std::string mp = escape_path(mountpoint);
  auto lines = split_lines(mountinfo);
  int target = -1;
  for (size_t i = 0; i < lines.size(); ++i) {
    auto f = fields(lines[i]);
    if (f.size() >= 10 && f[4] == mp) target = static_cast<int>(i);
  }
  std::vector<std::string> out(lines.begin(), lines.end());
  if (target >= 0) {
    std::string line = resctrl_mountinfo_line(fields(lines[target]), resctrl_opts);
    if (!line.empty()) out[target] = std::move(line);
  }
  bool trailing = !mountinfo.empty() && mountinfo.back() == '\n';
  return join_lines(out, trailing);
}

MountTableRewrite rewrite_mountinfo_of_device(std::string_view mountinfo, std::string_view device,
                                              const std::vector<std::string>& resctrl_opts) {
  return rewrite_mountinfo_of_devices(mountinfo,
                                      {ResctrlDevice{std::string(device), resctrl_opts}});
}

MountTableRewrite rewrite_mountinfo_of_devices(std::string_view mountinfo,
                                               const std::vector<ResctrlDevice>& devices) {
  MountTableRewrite r;
  auto lines = split_lines(mountinfo);
  std::vector<std::string> out(lines.begin(), lines.end());
  for (size_t i = 0; i < lines.size(); ++i) {
    auto f = fields(lines[i]);
    if (f.size() < 10) continue;
    auto d = std::find_if(devices.begin(), devices.end(),
                          [&](const ResctrlDevice& x) { return x.device == f[2]; });
    if (d == devices.end()) continue;
    std::string line = resctrl_mountinfo_line(f, d->options);
    if (line.empty()) continue;
    out[i] = std::move(line);
    r.lines.push_back(i);
    r.mountpoints.emplace_back(f[4]);
    r.options.push_back(d->options);
  }
  r.line_count = lines.size();
  bool trailing = !mountinfo.empty() && mountinfo.back() == '\n';
  r.text = join_lines(out, trailing);
  return r;
}

std::string rewrite_mounts_like(std::string_view mounts, const MountTableRewrite& mountinfo) {
  auto lines = split_lines(mounts);
  std::vector<std::string> out(lines.begin(), lines.end());
  // For each line of `mounts` to rewrite: the index of its mountinfo line.
  std::vector<long> hit(lines.size(), -1);
  if (lines.size() == mountinfo.line_count) {
    // Both tables list the same mounts in the same order.
    for (size_t k = 0; k < mountinfo.lines.size(); ++k)
      hit[mountinfo.lines[k]] = static_cast<long>(k);
  } else {
    // The table changed between the two reads: match by mount point, the
    // last line of each (the visible mount).
    for (size_t k = 0; k < mountinfo.mountpoints.size(); ++k) {
      for (size_t i = lines.size(); i-- > 0;) {
        auto f = fields(lines[i]);
        if (f.size() >= 4 && f[1] == mountinfo.mountpoints[k]) {
          hit[i] = static_cast<long>(k);
          break;
        }
      }
    }
  }
  static const std::vector<std::string> kNone;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (hit[i] < 0) continue;
    auto f = fields(lines[i]);
    size_t k = static_cast<size_t>(hit[i]);
    if (f.size() >= 4)
      out[i] = resctrl_mounts_line(f, k < mountinfo.options.size() ? mountinfo.options[k] : kNone);
  }
  bool trailing = !mounts.empty() && mounts.back() == '\n';
  return join_lines(out, trailing);
}

ResctrlMountData parse_resctrl_mount_data(std::string_view data, bool has_source) {
  // The VFS's superblock flags (common_set_sb_flag, common_clear_sb_flag).
  static const std::set<std::string_view> kSbFlags = {
      "dirsync", "lazytime", "mand", "ro", "sync", "async", "nolazytime", "nomand", "rw"};
  static const std::set<std::string_view> kResctrl = {"cdp", "cdpl2", "mba_MBps", "debug"};
  ResctrlMountData r;
  std::string given;
  for (auto item : split(data, ',')) {
    if (item.empty()) continue;
    size_t eq = item.find('=');
    std::string_view key = item.substr(0, eq);
    auto refuse = [&](const std::string& msg) {
      r.error = EINVAL;
      r.message = msg;
      r.options.clear();
      return r;
    };
    if (key.empty()) return refuse("Unnamed parameter");
    if (kSbFlags.count(key)) continue;
    if (kResctrl.count(key)) {
      if (eq != std::string_view::npos)
        return refuse("resctrl: Unexpected value for '" + std::string(key) + "'");
      given += std::string(key) + ",";
      continue;
    }
    if (key == "source") {
      if (has_source) return refuse("Multiple sources");
      has_source = true;
      continue;
    }
    return refuse("resctrl: Unknown parameter '" + std::string(key) + "'");
  }
  r.options = resctrl_mount_options(given);
  return r;
}

bool has_mount(std::string_view mountinfo, std::string_view mountpoint) {
  const std::string mp = escape_path(mountpoint);
  for (auto line : split_lines(mountinfo)) {
    auto f = fields(line);
    if (f.size() >= 5 && f[4] == mp) return true;
  }
  return false;
}

}  // namespace resctrlfs::sandbox
