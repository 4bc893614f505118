// Implements TreeReader (see tree.h) and the parsers of resctrl file formats
// it needs.
#include "exporter/tree.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace resctrlfs::exporter {

const char* omit_reason(ReadKind k) {
  switch (k) {
    case ReadKind::kValue:
      return "value";
    case ReadKind::kUnavailable:
      return "unavailable";
    case ReadKind::kUnassigned:
      return "unassigned";
    case ReadKind::kError:
      return "error";
    case ReadKind::kReadFailed:
      return "read_failed";
    case ReadKind::kMalformed:
      return "malformed";
  }
  return "malformed";
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\n')) {
    s.remove_prefix(1);
  }
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\n')) {
    s.remove_suffix(1);
  }
  return s;
}

bool parse_dec(std::string_view s, uint64_t& v) {
  s = trim(s);
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v, 10);
  return ec == std::errc() && p == s.data() + s.size();
}

bool parse_hex(std::string_view s, uint64_t& v) {
  s = trim(s);
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) s.remove_prefix(2);
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v, 16);
  return ec == std::errc() && p == s.data() + s.size();
}

MonRead parse_mon_value(std::string_view text) {
  MonRead r;
  std::string_view s = trim(text);
  if (s == "Unavailable") {
    r.kind = ReadKind::kUnavailable;
  } else if (s == "Unassigned") {
    r.kind = ReadKind::kUnassigned;
  } else if (s == "Error") {
    r.kind = ReadKind::kError;
  } else if (parse_dec(s, r.u)) {
    r.kind = ReadKind::kValue;
    r.d = static_cast<double>(r.u);
  } else {
    // Floating-point telemetry: <int>.<frac>, digits only.
    const size_t dot = s.find('.');
    uint64_t ip = 0;
    const std::string_view frac = dot == std::string_view::npos ? "" : s.substr(dot + 1);
    const bool digits = !frac.empty() && std::all_of(frac.begin(), frac.end(),
                                                     [](char c) { return c >= '0' && c <= '9'; });
    if (dot != std::string_view::npos && digits && parse_dec(s.substr(0, dot), ip)) {
      double d = 0;
      auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), d);
      if (ec == std::errc() && p == s.data() + s.size()) {
        r.kind = ReadKind::kValue;
        r.is_float = true;
        r.d = d;
        return r;
      }
    }
    r.kind = ReadKind::kMalformed;
  }
  return r;
}

std::vector<std::pair<unsigned, std::string>> parse_domain_list(std::string_view text) {
  std::vector<std::pair<unsigned, std::string>> out;
  std::string_view s = trim(text);
  while (!s.empty()) {
    const size_t semi = s.find(';');
    std::string_view item = trim(s.substr(0, semi));
    s = semi == std::string_view::npos ? std::string_view{} : s.substr(semi + 1);
    const size_t eq = item.find('=');
    uint64_t id = 0;
    if (eq == std::string_view::npos || !parse_dec(item.substr(0, eq), id) || id > UINT32_MAX) {
      continue;
    }
    out.emplace_back(static_cast<unsigned>(id), std::string(trim(item.substr(eq + 1))));
  }
  return out;
}

std::vector<SchemaLine> parse_schemata(std::string_view text) {
  std::vector<SchemaLine> out;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    std::string_view line = trim(text.substr(0, nl));
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0) continue;
    SchemaLine l;
    l.name = std::string(trim(line.substr(0, colon)));
    std::string_view rest = trim(line.substr(colon + 1));
    if (rest == "uninitialized") {
      l.uninitialized = true;
    } else {
      l.domains = parse_domain_list(rest);
    }
    out.push_back(std::move(l));
  }
  return out;
}

std::string mon_dir_resource(std::string_view name) {
  std::string_view s = name;
  if (s.rfind("mon_sub_", 0) == 0) {
    s.remove_prefix(8);
  } else if (s.rfind("mon_", 0) == 0) {
    s.remove_prefix(4);
  } else {
    return "";
  }
  const size_t us = s.rfind('_');
  if (us == std::string_view::npos || us == 0 || us + 1 == s.size()) return "";
  uint64_t id = 0;
  if (!parse_dec(s.substr(us + 1), id)) return "";
  return std::string(s.substr(0, us));
}

TreeReader::TreeReader(std::string root, ReaderOptions opts)
    : root_(std::move(root)), opts_(opts) {}

TreeReader::~TreeReader() { drop_all(); }

void TreeReader::drop_all() {
  for (auto& [_, s] : files_) ::close(s.fd);
  for (auto& [_, d] : dirs_) ::closedir(d.dir);
  files_.clear();
  dirs_.clear();
  group_ino_.clear();
  if (root_fd_ >= 0) ::close(root_fd_);
  root_fd_ = -1;
}

bool TreeReader::ensure_root(std::string& error) {
  struct stat st {};
  if (::stat(root_.c_str(), &st) != 0) {
    error = root_ + ": " + std::strerror(errno);
    drop_all();
    return false;
  }
  if (!S_ISDIR(st.st_mode)) {
    error = root_ + ": not a directory";
    drop_all();
    return false;
  }
  // A remount (or a daemon restart) puts a new tree at the same path.
  if (root_fd_ >= 0 && (st.st_dev != root_dev_ || st.st_ino != root_ino_)) drop_all();
  if (root_fd_ < 0) {
    root_fd_ = ::open(root_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (root_fd_ < 0) {
      error = root_ + ": " + std::strerror(errno);
      return false;
    }
    root_dev_ = st.st_dev;
    root_ino_ = st.st_ino;
    // Kernels before 6.14 have no mba_MBps_event file: the mount's options
    // tell then. A resctrl mount cannot be remounted with other options, so
    // once per mount is enough.
    mount_mba_mbps_ = false;
    std::string mountinfo;
    if (FILE* f = std::fopen("/proc/self/mountinfo", "re")) {
      char buf[4096];
      for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) mountinfo.append(buf, n);
      std::fclose(f);
      char* real = ::realpath(root_.c_str(), nullptr);
      mount_mba_mbps_ = mount_has_option(mountinfo, real ? real : root_, "mba_MBps");
      std::free(real);
    }
  }
  return true;
}

int TreeReader::pread_all(int fd, std::string& out) {
  out.clear();
  if (buf_.size() < 4096) buf_.resize(4096);
  size_t off = 0;
  for (;;) {
    if (off == buf_.size()) buf_.resize(buf_.size() * 2);
    ssize_t n = ::pread(fd, buf_.data() + off, buf_.size() - off, static_cast<off_t>(off));
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (n == 0) break;
    off += static_cast<size_t>(n);
    // A short read of a pseudo-file is its end; only a full buffer may have more.
    if (off < buf_.size()) break;
  }
  out.assign(buf_.data(), off);
  return 0;
}

void TreeReader::apply_budget() {
  size_t b = opts_.max_held_fds;
  if (b == 0) {
    rlimit rl{};
    b = ::getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY
            ? static_cast<size_t>(rl.rlim_cur / 2)
            : size_t{1} << 20;
  }
  budget_ = b;
  // The limit may have been lowered since the last pass.
  while (held_fds() > budget_ && !files_.empty()) {
    ::close(files_.begin()->second.fd);
    files_.erase(files_.begin());
  }
  while (held_fds() > budget_ && !dirs_.empty()) {
    ::closedir(dirs_.begin()->second.dir);
    dirs_.erase(dirs_.begin());
  }
}

void TreeReader::failed(const std::string& rel, int err) {
  const int saved = errno;
  if (pass_ != nullptr) ++pass_->read_errors;
  if (fail_log_.admit()) {
    const uint64_t more = fail_log_.take_suppressed();
    std::string line = "cannot read " + root_ + (rel.empty() ? "" : "/" + rel) + ": " +
                       std::strerror(err) + " (errno " + std::to_string(err) + ")";
    if (more != 0) line += "; " + std::to_string(more) + " more failed reads were not logged";
    log(line);
  }
  errno = saved;
}

void TreeReader::log(const std::string& line) {
  if (opts_.log) {
    opts_.log(line);
  } else {
    std::fprintf(stderr, "resctrlfs-exporter: %s\n", line.c_str());
    std::fflush(stderr);
  }
}

int TreeReader::read_file(const std::string& rel, std::string& out, bool may_be_absent) {
  const int err = read_file_once(rel, out);
  if (err != 0 && !(may_be_absent && err == ENOENT)) failed(rel, err);
  return err;
}

int TreeReader::read_file_once(const std::string& rel, std::string& out) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    auto it = files_.find(rel);
    if (it == files_.end()) {
      int fd = ::openat(root_fd_, rel.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) return errno;
      if (!can_hold()) {
        // Past the bound: read it and let it go; the next pass opens it again.
        const int err = pread_all(fd, out);
        ::close(fd);
        return err;
      }
      it = files_.emplace(rel, Slot{fd, gen_}).first;
    }
    it->second.gen = gen_;
    int err = pread_all(it->second.fd, out);
    if (err == 0) return 0;
    // The file behind the fd may be gone (its group removed, or removed and
    // made again): try the path once more.
    ::close(it->second.fd);
    files_.erase(it);
    if (attempt == 1 || (err != ENODEV && err != ENOENT && err != ESTALE && err != EBADF &&
                         err != ENOTCONN && err != EIO)) {
      return err;
    }
  }
  return EIO;
}

bool TreeReader::list_dir(const std::string& rel, std::vector<Entry>& out) {
  if (list_dir_once(rel, out)) return true;
  failed(rel, errno != 0 ? errno : EIO);
  return false;
}

bool TreeReader::list_dir_once(const std::string& rel, std::vector<Entry>& out) {
  out.clear();
  DIR* d = nullptr;
  bool held = true;
  auto it = dirs_.find(rel);
  if (it == dirs_.end()) {
    int fd =
        ::openat(root_fd_, rel.empty() ? "." : rel.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return false;
    d = ::fdopendir(fd);
    if (!d) {
      const int err = errno;
      ::close(fd);
      errno = err;
      return false;
    }
    // Past the bound the directory is listed and closed again.
    held = can_hold();
    if (held) it = dirs_.emplace(rel, DirSlot{d, gen_}).first;
  } else {
    d = it->second.dir;
    ::rewinddir(d);
    it->second.gen = gen_;
  }
  int err = 0;
  for (;;) {
    errno = 0;
    struct dirent* e = ::readdir(d);
    if (e == nullptr) {
      err = errno;
      break;
    }
    if (e->d_name[0] == '.' && (e->d_name[1] == 0 || (e->d_name[1] == '.' && e->d_name[2] == 0))) {
      continue;
    }
    bool dir = e->d_type == DT_DIR;
    if (e->d_type == DT_UNKNOWN) {
      struct stat st {};
      std::string p = rel.empty() ? e->d_name : rel + "/" + e->d_name;
      dir = ::fstatat(root_fd_, p.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
    }
    out.push_back({e->d_name, dir, e->d_ino});
  }
  if (err != 0 || !held) {
    ::closedir(d);
    if (held) dirs_.erase(it);
  }
  if (err != 0) {
    errno = err;
    return false;
  }
  std::sort(out.begin(), out.end(), [](const Entry& a, const Entry& b) { return a.name < b.name; });
  return true;
}

void TreeReader::sweep() {
  for (auto it = files_.begin(); it != files_.end();) {
    if (it->second.gen != gen_) {
      ::close(it->second.fd);
      it = files_.erase(it);
    } else {
      ++it;
    }
  }
  for (auto it = dirs_.begin(); it != dirs_.end();) {
    if (it->second.gen != gen_) {
      ::closedir(it->second.dir);
      it = dirs_.erase(it);
    } else {
      ++it;
    }
  }
  std::erase_if(group_ino_, [this](const auto& kv) { return kv.second.second != gen_; });
}

void TreeReader::check_identity(const std::string& prefix, ino_t ino) {
  auto [it, fresh] = group_ino_.try_emplace(prefix, ino, gen_);
  it->second.second = gen_;
  if (fresh || it->second.first == ino) return;
  it->second.first = ino;
  for (auto f = files_.begin(); f != files_.end();) {
    if (f->first.compare(0, prefix.size(), prefix) == 0) {
      ::close(f->second.fd);
      f = files_.erase(f);
    } else {
      ++f;
    }
  }
  for (auto d = dirs_.begin(); d != dirs_.end();) {
    if (d->first.compare(0, prefix.size(), prefix) == 0) {
      ::closedir(d->second.dir);
      d = dirs_.erase(d);
    } else {
      ++d;
    }
  }
}

std::vector<std::string> TreeReader::held_files() const {
  std::vector<std::string> out;
  out.reserve(files_.size());
  for (const auto& [path, _] : files_) out.push_back(path);
  std::sort(out.begin(), out.end());
  return out;
}

void TreeReader::read_info(Snapshot& s) {
  std::vector<Entry> res;
  if (!list_dir("info", res)) return;
  std::vector<Entry> files;
  std::string text;
  for (const Entry& r : res) {
    if (!r.dir) continue;
    const std::string dir = "info/" + r.name;
    if (!list_dir(dir, files)) continue;
    auto has = [&](const char* n) {
      return std::any_of(files.begin(), files.end(), [&](const Entry& e) { return e.name == n; });
    };
    auto num = [&](const char* n, bool hex) -> std::optional<uint64_t> {
      uint64_t v = 0;
      if (!has(n) || read_file(dir + "/" + n, text) != 0) return std::nullopt;
      if (hex ? parse_hex(text, v) : parse_dec(text, v)) return v;
      return std::nullopt;
    };
    if (r.name.size() > 4 && r.name.compare(r.name.size() - 4, 4, "_MON") == 0) {
      MonInfo m;
      m.resource = r.name.substr(0, r.name.size() - 4);
      m.num_rmids = num("num_rmids", false);
      if (has("mon_features") && read_file(dir + "/mon_features", text) == 0) {
        std::string_view v = text;
        while (!v.empty()) {
          const size_t nl = v.find('\n');
          std::string_view f = trim(v.substr(0, nl));
          v = nl == std::string_view::npos ? std::string_view{} : v.substr(nl + 1);
          if (!f.empty()) m.features.emplace_back(f);
        }
      }
      if (has("mbm_assign_mode") && read_file(dir + "/mbm_assign_mode", text) == 0) {
        const size_t a = text.find('['), b = text.find(']');
        if (a != std::string::npos && b != std::string::npos && b > a) {
          m.mbm_assign_mode = text.substr(a + 1, b - a - 1);
        }
      }
      auto counters = [&](const char* n, std::vector<std::pair<unsigned, uint64_t>>& out) {
        if (!has(n) || read_file(dir + "/" + n, text) != 0) return;
        for (auto& [id, v] : parse_domain_list(text)) {
          uint64_t x = 0;
          if (parse_dec(v, x)) out.emplace_back(id, x);
        }
      };
      counters("num_mbm_cntrs", m.num_mbm_cntrs);
      if (opts_.read_available_mbm_cntrs && m.mbm_assign_mode == "mbm_event") {
        counters("available_mbm_cntrs", m.available_mbm_cntrs);
      }
      s.mon.push_back(std::move(m));
      continue;
    }
    CtrlInfo c;
    c.schema = r.name;
    c.num_closids = num("num_closids", false);
    c.cbm_mask = num("cbm_mask", true);
    c.min_cbm_bits = num("min_cbm_bits", false);
    c.shareable_bits = num("shareable_bits", true);
    c.min_bandwidth = num("min_bandwidth", false);
    c.bandwidth_gran = num("bandwidth_gran", false);
    if (!c.cache()) {
      c.delay_linear = num("delay_linear", false);
      c.thread_throttle_mode = has("thread_throttle_mode");
    }
    if (has("bit_usage") && read_file(dir + "/bit_usage", text) == 0) {
      c.bit_usage = parse_domain_list(text);
    }
    if (has("io_alloc") && read_file(dir + "/io_alloc", text) == 0) {
      c.io_alloc = std::string(trim(text));
    }
    if (c.num_closids) s.ctrl.push_back(std::move(c));
  }
}

void TreeReader::read_group(Group& g, const std::string& prefix, bool ctrl) {
  if (!ctrl) return;
  std::string text;
  // A tree without control resources has neither file.
  if (read_file(prefix + "mode", text, true) == 0) g.mode = std::string(trim(text));
  if (read_file(prefix + "schemata", text, true) == 0) g.schemata = parse_schemata(text);
}

void TreeReader::read_mon(Group& g, const std::string& prefix, Snapshot& s) {
  std::string text;
  std::string path;
  for (const MonDir& d : mon_dirs_) {
    for (const std::string& ev : d.events) {
      path.assign(prefix).append("mon_data/").append(d.rel).append("/").append(ev);
      MonRead r;
      int err = read_file(path, text);
      if (err == 0) r = parse_mon_value(text);
      r.domain = d.name;
      r.resource = d.resource;
      r.event = ev;
      if (r.kind != ReadKind::kValue) ++s.omitted[r.kind];
      g.mon.push_back(std::move(r));
    }
  }
}

bool mount_has_option(std::string_view mountinfo, std::string_view mount_point,
                      std::string_view option) {
  auto fields = [](std::string_view line) {
    std::vector<std::string_view> out;
    size_t p = 0;
    while (p < line.size()) {
      const size_t e = std::min(line.find(' ', p), line.size());
      if (e > p) out.push_back(line.substr(p, e - p));
      p = e + 1;
    }
    return out;
  };
  auto unescape = [](std::string_view v) {
    std::string out;
    for (size_t i = 0; i < v.size(); ++i) {
      if (v[i] == '\\' && i + 3 < v.size() && v[i + 1] >= '0' && v[i + 1] <= '3' &&
          v[i + 2] >= '0' && v[i + 2] <= '7' && v[i + 3] >= '0' && v[i + 3] <= '7') {
        out.push_back(
            static_cast<char>((v[i + 1] - '0') * 64 + (v[i + 2] - '0') * 8 + (v[i + 3] - '0')));
        i += 3;
      } else {
        out.push_back(v[i]);
      }
    }
    return out;
  };
  while (!mountinfo.empty()) {
    const size_t nl = mountinfo.find('\n');
    const std::string_view line = mountinfo.substr(0, nl);
    mountinfo = nl == std::string_view::npos ? std::string_view{} : mountinfo.substr(nl + 1);
    const auto f = fields(line);
    // id parent major:minor root mount-point options [optional...] - type source super-options
    const auto sep = std::find(f.begin(), f.end(), std::string_view("-"));
    if (f.size() < 6 || sep == f.end() || f.end() - sep < 4) continue;
    if (sep[1] != "resctrl" || unescape(f[4]) != mount_point) continue;
    for (std::string_view opts : {f[5], sep[3]}) {
      while (!opts.empty()) {
        const size_t c = opts.find(',');
        if (opts.substr(0, c) == option) return true;
        opts = c == std::string_view::npos ? std::string_view{} : opts.substr(c + 1);
      }
    }
  }
  return false;
}

Snapshot TreeReader::read() {
  Snapshot s;
  ++gen_;
  apply_budget();
  pass_ = &s;
  struct EndPass {
    TreeReader& r;
    ~EndPass() {
      r.pass_ = nullptr;
      // The failures past the per-line budget, once per pass at most.
      if (r.fail_log_.suppressed() != 0 && r.summary_log_.admit()) {
        r.log(std::to_string(r.fail_log_.take_suppressed()) +
              " more failed reads were not logged one by one");
      }
    }
  } end_pass{*this};
  if (!ensure_root(s.error)) return s;
  std::vector<Entry> root;
  if (!list_dir_once("", root)) {
    s.error = root_ + ": cannot list: " + std::strerror(errno ? errno : EIO);
    sweep();
    return s;
  }
  // An unmounted mount point is an empty directory: not a resctrl tree.
  if (std::none_of(root.begin(), root.end(),
                   [](const Entry& e) { return e.dir && e.name == "info"; })) {
    s.error = root_ + ": not a resctrl tree (no info directory)";
    sweep();
    return s;
  }
  s.ok = true;
  s.mba_mbps = mount_mba_mbps_ || std::any_of(root.begin(), root.end(), [](const Entry& e) {
                 return !e.dir && e.name == "mba_MBps_event";
               });
  read_info(s);

  // The monitoring domains and their events, from the default group.
  mon_dirs_.clear();
  std::vector<Entry> doms, evs;
  const bool monitoring =
      std::any_of(root.begin(), root.end(), [](const Entry& e) { return e.name == "mon_data"; });
  if (monitoring && list_dir("mon_data", doms)) {
    for (const Entry& d : doms) {
      if (!d.dir) continue;
      const std::string res = mon_dir_resource(d.name);
      if (res.empty() || !list_dir("mon_data/" + d.name, evs)) continue;
      MonDir md{d.name, d.name, res, {}};
      std::vector<MonDir> subs;
      for (const Entry& e : evs) {
        if (!e.dir) {
          md.events.push_back(e.name);
        } else if (!mon_dir_resource(e.name).empty()) {
          subs.push_back({d.name + "/" + e.name, e.name, res, {}});
        }
      }
      mon_dirs_.push_back(std::move(md));
      for (MonDir& sub : subs) {
        std::vector<Entry> sevs;
        if (!list_dir("mon_data/" + sub.rel, sevs)) continue;
        for (const Entry& e : sevs) {
          if (!e.dir) sub.events.push_back(e.name);
        }
        mon_dirs_.push_back(std::move(sub));
      }
    }
  }

  std::vector<std::string> ctrl_names{""};
  for (const Entry& e : root) {
    if (e.dir && e.name != "info" && e.name != "mon_groups" && e.name != "mon_data") {
      ctrl_names.push_back(e.name);
      check_identity(e.name + "/", e.ino);
    }
  }
  std::vector<Entry> mons;
  for (const std::string& name : ctrl_names) {
    const std::string prefix = name.empty() ? "" : name + "/";
    Group g;
    g.name = name;
    read_group(g, prefix, true);
    // A pseudo-locked group (and one being set up) gives its RMID back and
    // has no monitoring.
    const bool mon = monitoring && g.mode.rfind("pseudo-lock", 0) != 0;
    if (mon) read_mon(g, prefix, s);
    s.groups.push_back(std::move(g));
    if (!mon || !list_dir(prefix + "mon_groups", mons)) continue;
    for (const Entry& m : mons) {
      if (!m.dir) continue;
      check_identity(prefix + "mon_groups/" + m.name + "/", m.ino);
      Group mg;
      mg.name = name;
      mg.mon_group = m.name;
      read_mon(mg, prefix + "mon_groups/" + m.name + "/", s);
      s.groups.push_back(std::move(mg));
    }
  }
  sweep();
  return s;
}

namespace {

constexpr long kRdtgroupSuperMagic = 0x7655821;  // the kernel's resctrl
constexpr long kFuseSuperMagic = 0x65735546;     // resctrlfs, outside the sandbox

}  // namespace

Result<void> check_resctrl_root(const std::string& root) {
  const std::string what = "--root " + root;
  const std::string todo =
      ": point --root at a resctrl mount (resctrlfsd's, e.g. resctrlfsd --platform intel-2s "
      "/sys/fs/resctrl, or the kernel's: mount -t resctrl resctrl /sys/fs/resctrl)";
  struct stat st;
  if (::stat(root.c_str(), &st) != 0) {
    const int err = errno;
    return Error::make(err, what + ": " + std::strerror(err) + todo);
  }
  if (!S_ISDIR(st.st_mode)) return Error::make(ENOTDIR, what + " is not a directory" + todo);
  for (const char* f : {"info/last_cmd_status", "tasks"}) {
    if (::access((root + "/" + f).c_str(), F_OK) != 0) {
      const int err = errno;
      return Error::make(err, what + " is not a resctrl tree (no " + f + ")" + todo);
    }
  }
  struct statfs sf;
  if (::statfs(root.c_str(), &sf) != 0) {
    const int err = errno;
    return Error::make(err, what + ": statfs: " + std::strerror(err));
  }
  const long type = static_cast<long>(sf.f_type);
  if (type != kRdtgroupSuperMagic && type != kFuseSuperMagic) {
    char hex[32];
    std::snprintf(hex, sizeof(hex), "0x%lx", static_cast<unsigned long>(type));
    return Error::make(EINVAL, what + " is not a resctrl tree (a filesystem of type " + hex +
                                   ", not resctrl's)" + todo);
  }
  return {};
}

}  // namespace resctrlfs::exporter
