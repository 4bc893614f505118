// Implements make_filesystem(), status_json() and the journal hooks
// save_state_json()/take_state_*() of FsImpl, which StateWriter serves.
#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>

#include "base/json_input.h"
#include "fs/cpus.h"
#include "fs/events.h"
#include "fs/impl.h"
#include "fs/io_channels.h"
#include "fs/settings.h"
#include "fs/state_replay.h"

namespace resctrlfs::fs {

namespace internal {

namespace {

std::string group_path(const Group& g) {
  if (g.type == GroupType::kMon) {
    std::string p = g.parent->name.empty() ? "" : "/" + g.parent->name;
    return p + "/mon_groups/" + g.name;
  }
  return g.name.empty() ? "/" : "/" + g.name;
}

// The mount options as the documents give them (kMountOptions): the
// kernel's always, ours only when on.
nlohmann::json options_json(const MountOptions& opts) {
  nlohmann::json j = nlohmann::json::object();
  for (const MountOptionRow& r : kMountOptions)
    if (r.kind == MountOptionKind::kKernel || opts.*(r.flag)) j[r.name] = opts.*(r.flag);
  return j;
}

}  // namespace

std::string FsImpl::status_json() {
  std::lock_guard<OwnedMutex> lock(mu_);
  nlohmann::json j;
  j["platform"] = {{"nr_cpus", m_.info.nr_cpus}};  // the daemon adds the CPU's identity
  j["mounted"] = m_.mounted;
  j["options"] = options_json(m_.opts);
  nlohmann::json groups = nlohmann::json::array();
  for (auto& g : m_.groups) {
    groups.push_back({{"path", group_path(*g)},
                      {"type", g->type == GroupType::kCtrlMon ? "ctrl_mon" : "mon"},
                      {"closid", g->closid},
                      {"rmid", g->rmid},
                      {"mode", schemata::group_mode_name(g->mode)},
                      {"cpus_list", format_cpu_list(g->cpus)}});
  }
  j["groups"] = groups;
  j["closids"] = {{"usable", m_.closids.size()}, {"free", m_.closids.free_count()}};
  nlohmann::json limbo = nlohmann::json::object();
  for (int d : p_.mon.rmids().domains()) limbo[std::to_string(d)] = p_.mon.rmids().busy_in(d);
  j["rmids"] = {{"num_rmids", p_.mon.rmids().num_rmids()},
                {"free", p_.mon.rmids().free_list().size()},
                {"limbo", p_.mon.rmids().limbo_count()},
                {"busy_per_domain", limbo}};
  get_settings(m_, p_, kInStatus, j);
  j["tagged_threads"] = m_.threads.size();
  // Where the tasks files come from: the thread table kept from events, or a
  // walk of the TaskSource at each open.
  j["tasks_listing"] = m_.live.tracking() ? "thread table" : "proc walk";
  j["live_threads"] = m_.live.size();
  j["thread_table_rescans"] = m_.live.rescans();
  j["thread_table_rescan_failures"] = m_.live.rescan_failures();
  j["nodes"] = m_.nodes.size();
  // Ours: CPUs whose tags could not be programmed (the kernel cannot fail
  // there, so its files say nothing of it).
  j["cpu_association"] = {{"writes_failed", cpus_.assoc_writes_failed()},
                          {"failing_cpus", format_cpu_list(cpus_.assoc_failing_cpus())}};
  return j.dump();
}

std::vector<std::string> FsImpl::take_hw_write_failures() {
  std::lock_guard<OwnedMutex> lock(mu_);
  return cpus_.take_assoc_failures();
}

// Appends text to a string in place. std::string's append is out of line:
// callgrind put a record piece at ~110 instructions, and a group's record
// has about forty of them. The string is grown ahead (doubling) and
// trimmed to what was written when the TextOut goes.
class TextOut {
 public:
  TextOut(std::string& s, size_t hint) : s_(s), n_(s.size()) { s_.resize(n_ + hint); }
  ~TextOut() { s_.resize(n_); }
  TextOut(const TextOut&) = delete;
  TextOut& operator=(const TextOut&) = delete;
  // A literal's length is known here: no strlen.
  template <size_t N>
  TextOut& operator+=(const char (&lit)[N]) {
    put(lit, N - 1);
    return *this;
  }
  TextOut& operator+=(std::string_view v) {
    put(v.data(), v.size());
    return *this;
  }
  TextOut& operator+=(char c) {
    room(1);
    s_[n_++] = c;
    return *this;
  }
  // The decimal digits of `v`.
  template <typename T>
  void num(T v) {
    room(24);
    char* at = s_.data() + n_;
    n_ = static_cast<size_t>(std::to_chars(at, at + 24, v).ptr - s_.data());
  }

 private:
  void room(size_t k) {
    if (n_ + k > s_.size()) s_.resize(std::max(2 * s_.size(), n_ + k));
  }
  void put(const char* p, size_t k) {
    room(k);
    std::memcpy(s_.data() + n_, p, k);
    n_ += k;
  }
  std::string& s_;
  size_t n_;
};

namespace {

using nlohmann::json;

// Appends `s` as a JSON string; through dump() only when it needs escaping.
// The state is written as text directly, not as a json DOM: a journaled
// command serialises a group, and building and dumping a DOM took most of
// that command's time.
void write_json_string(std::string_view s, TextOut& out) {
  for (unsigned char c : s) {
    if (c < 0x20 || c >= 0x80 || c == '"' || c == '\\') {
      // A name that is not UTF-8 (the kernel takes any bytes) cannot be a
      // JSON string: its bad bytes are saved as U+FFFD rather than failing.
      out += json(std::string(s)).dump(-1, ' ', false, json::error_handler_t::replace);
      return;
    }
  }
  out += '"';
  out += s;
  out += '"';
}

void write_assigned(const Group& g, TextOut& out) {
  out += '[';
  bool first = true;
  for (auto& [key, id] : g.cntrs) {
    if (!first) out += ',';
    first = false;
    out += '[';
    out.num(key.first);
    out += ",\"";
    out += event_name(key.second);
    out += "\"]";
  }
  out += ']';
}

}  // namespace

// Writes the state document (or the parts of it a delta needs) from the
// model: one per call, holding nothing of its own.
class StateWriter final : public RootHelper {
 public:
  using RootHelper::RootHelper;
  std::string save_state_locked();
  Group* group_by_key(const GroupKey& k);
  // One group's object of the state document, appended to `out`; a
  // CTRL_MON group with or without its "mon_groups".
  void save_ctrl_state(const Group& g, bool with_mons, TextOut& out);
  void save_mon_state(const Group& m, TextOut& out);

 private:
  void save_dir_fields(const Group& g, TextOut& out);
};

// The journal document (version 1; deltas to it: fs/state_replay.h):
//   {"version": 1, "options": {...},
//    "settings": {"<key>": value}   (the settings table's kInJournal rows: settings.cc),
//    "next_node_base": n,   (the node base the next new group takes: fs/node_table.h)
//    "groups": [{"name", "closid", "rmid", "mode", "cpus", "mba_event", "dir_mode",
//                "uid", "gid", "node_base", "schemata": {"<schema>": {"<domain>": value}},
//                "region": {"schema", "domain", "cbm"}  (pseudo-locked groups, which
//                          have no "schemata": their old CLOSID may be another's),
//                "assigned": [[domain, "event"]],
//                "mon_groups": [{"name", "rmid", "cpus", "dir_mode", "uid", "gid", "node_base",
//                                "assigned"}]}],   (the default group first, name "")
//    "threads": [[tid, closid, rmid]],
//    "io_alloc": {"<resource>": {"<domain>": mask}},   (only while enabled)
//    "io_channels": [[channel, "<CTRL_MON name>", "<MON name>"]]}   (ours: the
//                   I/O RDT channels outside the default group; only with them)
void StateWriter::save_dir_fields(const Group& g, TextOut& out) {
  if (const Node* d = m_.nodes.get(g.dir)) {
    out += ",\"dir_mode\":";
    out.num(d->mode & 07777);
    out += ",\"uid\":";
    out.num(d->uid);
    out += ",\"gid\":";
    out.num(d->gid);
  }
  if (g.node_base != 0) {
    out += ",\"node_base\":";
    out.num(g.node_base);
  }
}

void StateWriter::save_ctrl_state(const Group& g, bool with_mons, TextOut& out) {
  out += "{\"name\":";
  write_json_string(g.name, out);
  out += ",\"closid\":";
  out.num(g.closid);
  out += ",\"rmid\":";
  out.num(g.rmid);
  out += ",\"mode\":\"";
  out += schemata::group_mode_name(g.mode);
  out += "\",\"cpus\":\"";
  out += format_cpu_list(g.cpus);
  out += "\",\"mba_event\":\"";
  out += event_name(g.mba_event);
  out += "\",\"assigned\":";
  write_assigned(g, out);
  save_dir_fields(g, out);
  if (g.mode == schemata::GroupMode::PSEUDO_LOCKED && g.plr) {
    // A locked group owns no CLOSID: its region is all there is to keep.
    out += ",\"region\":{\"schema\":";
    write_json_string(m_.schemas.schemas[g.plr->schema].name, out);
    out += ",\"domain\":";
    out.num(g.plr->domain);
    out += ",\"cbm\":";
    out.num(g.plr->cbm);
    out += "}}";
    return;
  }
  out += ",\"schemata\":{";
  for (size_t si = 0; si < m_.schemas.schemas.size(); ++si) {
    const schemata::Schema& s = m_.schemas.schemas[si];
    if (si != 0) out += ',';
    write_json_string(s.name, out);
    out += ":{";
    bool first = true;
    for (int d : s.domain_ids) {
      if (!first) out += ',';
      first = false;
      out += '"';
      out.num(d);
      out += "\":";
      out.num(p_.ctrl.ctrl_value(static_cast<int>(si), d, g.closid));
    }
    out += '}';
  }
  out += '}';
  if (with_mons) {
    out += ",\"mon_groups\":[";
    bool first = true;
    for (const Group* m : g.mon_children) {
      if (!first) out += ',';
      first = false;
      save_mon_state(*m, out);
    }
    out += ']';
  }
  out += '}';
}

void StateWriter::save_mon_state(const Group& m, TextOut& out) {
  out += "{\"name\":";
  write_json_string(m.name, out);
  out += ",\"rmid\":";
  out.num(m.rmid);
  out += ",\"cpus\":\"";
  out += format_cpu_list(m.cpus);
  out += "\",\"assigned\":";
  write_assigned(m, out);
  save_dir_fields(m, out);
  out += '}';
}

std::string StateWriter::save_state_locked() {
  const nlohmann::json options = options_json(m_.opts);
  json settings = json::object();
  get_settings(m_, p_, kInJournal, settings);
  std::string text;
  {
    TextOut out(text, 1024 + 768 * m_.groups.size() + 24 * m_.threads.size());
    out += "{\"version\":1,\"mounted\":";
    out += m_.mounted ? "true" : "false";
    out += ",\"next_node_base\":";
    out.num(m_.nodes.next_base());
    out += ",\"options\":";
    out += options.dump();
    out += ",\"settings\":";
    out += settings.dump();
    out += ",\"groups\":[";
    if (m_.mounted) {
      bool first = true;
      for (auto& gp : m_.groups) {
        if (gp->type != GroupType::kCtrlMon) continue;
        if (!first) out += ',';
        first = false;
        save_ctrl_state(*gp, /*with_mons=*/true, out);
      }
    }
    out += "],\"threads\":[";
    std::map<pid_t, std::pair<uint32_t, uint32_t>> sorted(m_.threads.all().begin(),
                                                          m_.threads.all().end());
    bool first = true;
    for (auto& [tid, tags] : sorted) {
      if (!first) out += ',';
      first = false;
      out += '[';
      out.num(tid);
      out += ',';
      out.num(tags.first);
      out += ',';
      out.num(tags.second);
      out += ']';
    }
    out += ']';
    if (m_.mounted) {
      json io = json::object();
      for (const auto& [res, doms] : p_.io_alloc.io_alloc_state()) {
        json vals = json::object();
        for (auto [d, v] : doms) vals[std::to_string(d)] = v;
        io[res] = vals;
      }
      if (!io.empty()) {
        out += ",\"io_alloc\":";
        out += io.dump();
      }
      json chans = json::array();
      for (const auto& [id, g] : p_.io_ch.assignments()) {
        const GroupKey k = group_key(*g);
        chans.push_back(json::array({id, k.first, k.second}));
      }
      if (!chans.empty()) {
        out += ",\"io_channels\":";
        out += chans.dump();
      }
    }
    out += '}';
  }
  return text;
}

std::string FsImpl::save_state_json() {
  std::lock_guard<OwnedMutex> lock(mu_);
  return StateWriter(m_, p_).save_state_locked();
}

// ---------------------------------------------------------------------------
// Journal deltas

Group* StateWriter::group_by_key(const GroupKey& k) {
  Node* cd = k.first.empty() ? m_.root_node : m_.nodes.child(m_.root_node, k.first);
  if (cd == nullptr || cd->kind != NodeKind::kGroupDir || cd->group == nullptr) return nullptr;
  Group* g = cd->group;
  if (k.second.empty()) return g;
  Node* mg = m_.nodes.get(g->mon_groups_dir);
  Node* md = mg != nullptr ? m_.nodes.child(mg, k.second) : nullptr;
  if (md == nullptr || md->kind != NodeKind::kGroupDir || md->group == nullptr) return nullptr;
  return md->group;
}

std::string FsImpl::take_state_snapshot_json() {
  std::lock_guard<OwnedMutex> lock(mu_);
  m_.changes.reset();
  m_.journaled_next_base = m_.nodes.next_base();
  return StateWriter(m_, p_).save_state_locked();
}

std::optional<std::string> FsImpl::take_state_delta_json() {
  StateWriter w(m_, p_);
  std::lock_guard<OwnedMutex> lock(mu_);
  if (m_.changes.full() || !m_.mounted) return std::nullopt;
  const bool new_base = m_.nodes.next_base() != m_.journaled_next_base;
  if (m_.changes.empty() && !new_base) return std::string();
  std::string text;
  {
    // Room for all of it at once: a group is a few hundred bytes.
    TextOut out(text, 64 + 512 * m_.changes.groups().size() + 64 * m_.changes.removed().size() +
                          24 * m_.changes.threads().size());
    out += "{\"version\":1";
    if (new_base) {
      // Also when the group that took it is gone again: its node ids
      // are never given again.
      out += ",\"next_node_base\":";
      out.num(m_.nodes.next_base());
      m_.journaled_next_base = m_.nodes.next_base();
    }
    if (!m_.changes.removed().empty()) {
      out += ",\"del\":[";
      bool first = true;
      for (const GroupKey& k : m_.changes.removed()) {
        if (!first) out += ',';
        first = false;
        out += '[';
        write_json_string(k.first, out);
        out += ',';
        write_json_string(k.second, out);
        out += ']';
      }
      out += ']';
    }
    bool first_set = true;
    for (const GroupKey& k : m_.changes.groups()) {
      const Group* g = w.group_by_key(k);
      if (g == nullptr) continue;  // made and removed again since the last take
      out += first_set ? ",\"set\":[" : ",";
      first_set = false;
      out += "{\"ctrl\":";
      write_json_string(k.first, out);
      out += ",\"mon\":";
      write_json_string(k.second, out);
      out += ",\"group\":";
      if (k.second.empty()) {
        w.save_ctrl_state(*g, /*with_mons=*/false, out);
      } else {
        w.save_mon_state(*g, out);
      }
      out += '}';
    }
    if (!first_set) out += ']';
    if (!m_.changes.threads().empty()) {
      std::vector<pid_t> tids(m_.changes.threads().begin(), m_.changes.threads().end());
      std::sort(tids.begin(), tids.end());
      out += ",\"threads\":[";
      bool first = true;
      for (pid_t tid : tids) {
        if (!first) out += ',';
        first = false;
        out += '[';
        out.num(tid);
        auto it = m_.threads.all().find(tid);
        if (it != m_.threads.all().end()) {
          out += ',';
          out.num(it->second.first);
          out += ',';
          out.num(it->second.second);
        }
        out += ']';
      }
      out += ']';
    }
    out += '}';
  }
  m_.changes.reset();
  return text;
}

void FsImpl::set_command_status(std::string_view text) {
  std::lock_guard<OwnedMutex> lock(mu_);
  m_.lcs.clear();
  m_.lcs.puts(text);
}

}  // namespace internal

std::unique_ptr<Filesystem> make_filesystem(const FilesystemConfig& cfg) {
  if (cfg.arch == nullptr) return nullptr;
  return std::make_unique<internal::FsImpl>(cfg);
}

}  // namespace resctrlfs::fs
