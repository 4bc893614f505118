// Implements make_filesystem(), status_json() and the journal hooks
// save_state_json()/restore_state_json() of FsImpl.
#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>

#include "base/json_input.h"
#include "fs/cpus.h"
#include "fs/impl.h"
#include "fs/state_replay.h"

namespace resctrlfs::fs {

namespace internal {

namespace {

const char* mode_str(schemata::GroupMode m) {
  switch (m) {
    case schemata::GroupMode::SHAREABLE:
      return "shareable";
    case schemata::GroupMode::EXCLUSIVE:
      return "exclusive";
    case schemata::GroupMode::PSEUDO_LOCKSETUP:
      return "pseudo-locksetup";
    case schemata::GroupMode::PSEUDO_LOCKED:
      return "pseudo-locked";
  }
  return "shareable";
}

std::string group_path(const Group& g) {
  if (g.type == GroupType::kMon) {
    std::string p = g.parent->name.empty() ? "" : "/" + g.parent->name;
    return p + "/mon_groups/" + g.name;
  }
  return g.name.empty() ? "/" : "/" + g.name;
}

}  // namespace

std::string FsImpl::status_json() {
  std::lock_guard<std::mutex> lock(mu_);
  nlohmann::json j;
  j["platform"] = {{"vendor", info_.vendor},
                   {"family", info_.family},
                   {"model", info_.model},
                   {"nr_cpus", info_.nr_cpus}};
  j["mounted"] = mounted_;
  j["options"] = {{"cdp", opts_.cdp},
                  {"cdpl2", opts_.cdpl2},
                  {"mba_MBps", opts_.mba_mbps},
                  {"debug", opts_.debug}};
  nlohmann::json groups = nlohmann::json::array();
  for (auto& g : groups_) {
    groups.push_back({{"path", group_path(*g)},
                      {"type", g->type == GroupType::kCtrlMon ? "ctrl_mon" : "mon"},
                      {"closid", g->closid},
                      {"rmid", g->rmid},
                      {"mode", mode_str(g->mode)},
                      {"cpus_list", format_cpu_list(g->cpus)}});
  }
  j["groups"] = groups;
  j["closids"] = {{"usable", closids_.size()}, {"free", closids_.free_count()}};
  nlohmann::json limbo = nlohmann::json::object();
  for (int d : rmids_.domains()) limbo[std::to_string(d)] = rmids_.busy_in(d);
  j["rmids"] = {{"num_rmids", rmids_.num_rmids()},
                {"free", rmids_.free_list().size()},
                {"limbo", rmids_.limbo_count()},
                {"busy_per_domain", limbo}};
  j["max_threshold_occupancy"] = threshold_;
  j["mbm_assign_mode"] = mbm_event_mode_ ? "mbm_event" : "default";
  j["tagged_threads"] = thread_tags_.size();
  j["nodes"] = nodes_.size();
  return j.dump();
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

schemata::GroupMode mode_from(const std::string& s, bool& ok) {
  ok = true;
  if (s == "shareable") return schemata::GroupMode::SHAREABLE;
  if (s == "exclusive") return schemata::GroupMode::EXCLUSIVE;
  if (s == "pseudo-locksetup") return schemata::GroupMode::PSEUDO_LOCKSETUP;
  if (s == "pseudo-locked") return schemata::GroupMode::PSEUDO_LOCKED;
  ok = false;
  return schemata::GroupMode::SHAREABLE;
}

Error bad_state(const std::string& why) { return Error::make(EINVAL, "state: " + why); }
Error bad(const std::string& why) { return Error::make(EINVAL, why); }

// A domain id used as a JSON object key: decimal digits that fit an int.
Result<int> domain_key(const std::string& key) {
  int d = -1;
  const auto [end, ec] = std::from_chars(key.data(), key.data() + key.size(), d);
  if (key.empty() || ec != std::errc() || end != key.data() + key.size() || d < 0)
    return bad("bad domain key \"" + key + "\"");
  return d;
}

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

// The journal document (version 1; deltas to it: fs/state_replay.h):
//   {"version": 1, "options": {...},
//    "settings": {"max_threshold_occupancy", "mbm_assign_mode", "mbm_assign_on_mkdir",
//                 "event_filter": {"mbm_total_bytes", "mbm_local_bytes"}},
//    "groups": [{"name", "closid", "rmid", "mode", "cpus", "mba_event", "dir_mode",
//                "uid", "gid", "schemata": {"<schema>": {"<domain>": value}},
//                "region": {"schema", "domain", "cbm"}  (pseudo-locked groups, which
//                          have no "schemata": their old CLOSID may be another's),
//                "assigned": [[domain, "event"]],
//                "mon_groups": [{"name", "rmid", "cpus", "dir_mode", "uid", "gid",
//                                "assigned"}]}],   (the default group first, name "")
//    "threads": [[tid, closid, rmid]],
//    "io_alloc": {"<resource>": {"<domain>": mask}}}   (only while enabled)
void FsImpl::save_dir_fields(const Group& g, TextOut& out) {
  if (const Node* d = node(g.dir)) {
    out += ",\"dir_mode\":";
    out.num(d->mode & 07777);
    out += ",\"uid\":";
    out.num(d->uid);
    out += ",\"gid\":";
    out.num(d->gid);
  }
}

void FsImpl::save_ctrl_state(const Group& g, bool with_mons, TextOut& out) {
  out += "{\"name\":";
  write_json_string(g.name, out);
  out += ",\"closid\":";
  out.num(g.closid);
  out += ",\"rmid\":";
  out.num(g.rmid);
  out += ",\"mode\":\"";
  out += mode_str(g.mode);
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
    write_json_string(schemas_.schemas[g.plr->schema].name, out);
    out += ",\"domain\":";
    out.num(g.plr->domain);
    out += ",\"cbm\":";
    out.num(g.plr->cbm);
    out += "}}";
    return;
  }
  out += ",\"schemata\":{";
  for (size_t si = 0; si < schemas_.schemas.size(); ++si) {
    const schemata::Schema& s = schemas_.schemas[si];
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
      out.num(ctrl_value(static_cast<int>(si), d, g.closid));
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

void FsImpl::save_mon_state(const Group& m, TextOut& out) {
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

std::string FsImpl::save_state_locked() {
  json options = {{"cdp", opts_.cdp},
                  {"cdpl2", opts_.cdpl2},
                  {"mba_MBps", opts_.mba_mbps},
                  {"debug", opts_.debug}};
  json settings = {
      {"max_threshold_occupancy", threshold_},
      {"mbm_assign_mode", mbm_event_mode_ ? "mbm_event" : "default"},
      {"mbm_assign_on_mkdir", assign_on_mkdir_},
      {"event_filter",
       {{"mbm_total_bytes", event_filter_total_}, {"mbm_local_bytes", event_filter_local_}}}};
  std::string text;
  {
    TextOut out(text, 1024 + 768 * groups_.size() + 24 * thread_tags_.size());
    out += "{\"version\":1,\"mounted\":";
    out += mounted_ ? "true" : "false";
    out += ",\"options\":";
    out += options.dump();
    out += ",\"settings\":";
    out += settings.dump();
    out += ",\"groups\":[";
    if (mounted_) {
      bool first = true;
      for (auto& gp : groups_) {
        if (gp->type != GroupType::kCtrlMon) continue;
        if (!first) out += ',';
        first = false;
        save_ctrl_state(*gp, /*with_mons=*/true, out);
      }
    }
    out += "],\"threads\":[";
    std::map<pid_t, std::pair<uint32_t, uint32_t>> sorted(thread_tags_.begin(), thread_tags_.end());
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
    if (mounted_) {
      json io = json::object();
      for (const auto& [res, doms] : io_alloc_state()) {
        json vals = json::object();
        for (auto [d, v] : doms) vals[std::to_string(d)] = v;
        io[res] = vals;
      }
      if (!io.empty()) {
        out += ",\"io_alloc\":";
        out += io.dump();
      }
    }
    out += '}';
  }
  return text;
}

std::string FsImpl::save_state_json() {
  std::lock_guard<std::mutex> lock(mu_);
  return save_state_locked();
}

// ---------------------------------------------------------------------------
// Journal deltas

namespace {
// Past this many marks a delta is no smaller than a snapshot is costly:
// the journal writes a snapshot instead.
constexpr size_t kMaxDeltaThreads = 1024;
constexpr size_t kMaxDeltaGroups = 64;
}  // namespace

FsImpl::GroupKey FsImpl::group_key(const Group& g) {
  if (g.type == GroupType::kMon) return {g.parent->name, g.name};
  return {g.name, std::string()};
}

void FsImpl::jr_group(const Group* g) {
  if (jr_full_ || g == nullptr) return;
  GroupKey k = group_key(*g);
  if (jr_set_seen_.count(k) != 0) return;
  if (jr_set_.size() >= kMaxDeltaGroups) {
    jr_full_ = true;
    return;
  }
  jr_set_seen_.insert(k);
  jr_set_.push_back(std::move(k));
}

void FsImpl::jr_gone(const GroupKey& k) {
  if (jr_full_) return;
  if (jr_del_.size() >= kMaxDeltaGroups) {
    jr_full_ = true;
    return;
  }
  jr_del_.insert(k);
}

void FsImpl::jr_after_write(const Node& n) {
  if (jr_full_) return;
  const WriteFn w = n.row != nullptr ? n.row->write : nullptr;
  // Thread moves are marked thread by thread (set_thread).
  if (w == &FsImpl::write_tasks) return;
  // Files whose writes change their own group and nothing else.
  if (n.group != nullptr &&
      (w == &FsImpl::write_schemata || w == &FsImpl::write_mode ||
       w == &FsImpl::write_mba_mbps_event || w == &FsImpl::write_mbm_l3_assignments)) {
    jr_group(n.group);
    return;
  }
  // cpus and cpus_list mark every group whose CPUs they changed (the
  // written one, the ones that gave CPUs up, MON groups cleared).
  if (w == &FsImpl::write_cpus || w == &FsImpl::write_cpus_list) return;
  // Info settings and whatever is added later: a snapshot is always right.
  jr_all();
}

void FsImpl::jr_thread(pid_t tid) {
  if (jr_full_) return;
  if (jr_threads_.size() >= kMaxDeltaThreads) {
    jr_full_ = true;
    return;
  }
  jr_threads_.insert(tid);
}

void FsImpl::jr_reset() {
  jr_full_ = false;
  jr_set_.clear();
  jr_set_seen_.clear();
  jr_del_.clear();
  jr_threads_.clear();
}

Group* FsImpl::group_by_key(const GroupKey& k) {
  Node* cd = k.first.empty() ? root_node_ : child(root_node_, k.first);
  if (cd == nullptr || cd->kind != NodeKind::kGroupDir || cd->group == nullptr) return nullptr;
  Group* g = cd->group;
  if (k.second.empty()) return g;
  Node* mg = node(g->mon_groups_dir);
  Node* md = mg != nullptr ? child(mg, k.second) : nullptr;
  if (md == nullptr || md->kind != NodeKind::kGroupDir || md->group == nullptr) return nullptr;
  return md->group;
}

std::string FsImpl::take_state_snapshot_json() {
  std::lock_guard<std::mutex> lock(mu_);
  jr_reset();
  return save_state_locked();
}

std::optional<std::string> FsImpl::take_state_delta_json() {
  std::lock_guard<std::mutex> lock(mu_);
  if (jr_full_ || !mounted_) return std::nullopt;
  if (jr_set_.empty() && jr_del_.empty() && jr_threads_.empty()) return std::string();
  std::string text;
  {
    // Room for all of it at once: a group is a few hundred bytes.
    TextOut out(text, 64 + 512 * jr_set_.size() + 64 * jr_del_.size() + 24 * jr_threads_.size());
    out += "{\"version\":1";
    if (!jr_del_.empty()) {
      out += ",\"del\":[";
      bool first = true;
      for (const GroupKey& k : jr_del_) {
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
    for (const GroupKey& k : jr_set_) {
      const Group* g = group_by_key(k);
      if (g == nullptr) continue;  // made and removed again since the last take
      out += first_set ? ",\"set\":[" : ",";
      first_set = false;
      out += "{\"ctrl\":";
      write_json_string(k.first, out);
      out += ",\"mon\":";
      write_json_string(k.second, out);
      out += ",\"group\":";
      if (k.second.empty()) {
        save_ctrl_state(*g, /*with_mons=*/false, out);
      } else {
        save_mon_state(*g, out);
      }
      out += '}';
    }
    if (!first_set) out += ']';
    if (!jr_threads_.empty()) {
      std::vector<pid_t> tids(jr_threads_.begin(), jr_threads_.end());
      std::sort(tids.begin(), tids.end());
      out += ",\"threads\":[";
      bool first = true;
      for (pid_t tid : tids) {
        if (!first) out += ',';
        first = false;
        out += '[';
        out.num(tid);
        auto it = thread_tags_.find(tid);
        if (it != thread_tags_.end()) {
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
  jr_reset();
  return text;
}

Result<void> FsImpl::restore_state_json(const std::string& text) {
  std::lock_guard<std::mutex> lock(mu_);
  // The document is outside input (a file, via the journal): typed access
  // only (base/json_input.h); the try is the last guard of that rule.
  Result<void> r = Ok();
  try {
    r = restore_state_locked(text);
  } catch (const std::exception& e) {
    r = Error::make(EINVAL, e.what());
  }
  if (!r.ok()) return bad_state(r.error().message);
  return r;
}

Result<void> FsImpl::restore_state_locked(const std::string& text) {
  Result<json> parsed = parse_json(text);
  if (!parsed.ok()) return bad("not JSON: " + parsed.error().message);
  const JsonIn j(*parsed);
  if (!j.json().is_object()) return bad("not a JSON object");
  Result<int> version = j.int_or<int>("version", 0);
  if (!version.ok() || *version != 1) return bad("unknown version");
  if (!mounted_) return bad("not mounted");
  if (groups_.size() != 1) return bad("the model is not fresh");
  // Global settings first: a mode switch releases every counter.
  RESCTRLFS_ASSIGN_OR_RETURN(const std::optional<JsonIn> st, j.find("settings"));
  if (st) {
    RESCTRLFS_ASSIGN_OR_RETURN(const uint32_t thr,
                               st->int_or<uint32_t>("max_threshold_occupancy", threshold_));
    if (thr <= info_.mon.l3_cache_size_bytes || !mon_capable()) threshold_ = thr;
    RESCTRLFS_ASSIGN_OR_RETURN(const std::string mode, st->string_or("mbm_assign_mode", "default"));
    const bool want_event = mode == "mbm_event";
    if (info_.mon.abmc && want_event != mbm_event_mode_)
      RESCTRLFS_RETURN_IF_ERROR(set_assign_mode(want_event));
    RESCTRLFS_ASSIGN_OR_RETURN(const std::optional<JsonIn> ef, st->find("event_filter"));
    if (ef) {
      const uint32_t mask = info_.mon.bmec_supported_mask;
      RESCTRLFS_ASSIGN_OR_RETURN(const uint32_t total,
                                 ef->int_or<uint32_t>("mbm_total_bytes", event_filter_total_));
      RESCTRLFS_ASSIGN_OR_RETURN(const uint32_t local,
                                 ef->int_or<uint32_t>("mbm_local_bytes", event_filter_local_));
      event_filter_total_ = total & mask;
      event_filter_local_ = local & mask;
    }
    RESCTRLFS_ASSIGN_OR_RETURN(const bool on_mkdir,
                               st->bool_or("mbm_assign_on_mkdir", assign_on_mkdir_));
    if (mbm_event_mode_) assign_on_mkdir_ = on_mkdir;
  }
  auto parse_cpus = [this](const JsonIn& o) -> Result<CpuMask> {
    Result<std::string> list = o.string_or("cpus", std::string());
    if (!list.ok()) return bad(list.error().message);
    Result<CpuMask> m = parse_cpu_list(*list, info_.nr_cpus);
    if (!m.ok()) return bad(o.path() + ".cpus: bad cpu list");
    // A CPU that has gone offline since the state was saved has left
    // every group, as it would have if it had gone while we ran.
    *m &= info_.online;
    return m;
  };
  struct DirFields {
    uint32_t mode;
    uid_t uid;
    gid_t gid;
  };
  auto dir_fields = [this](const JsonIn& o) -> Result<DirFields> {
    DirFields f{};
    RESCTRLFS_ASSIGN_OR_RETURN(f.mode, o.int_or<uint32_t>("dir_mode", 0755U, 0, 07777));
    RESCTRLFS_ASSIGN_OR_RETURN(f.uid, o.int_or<uid_t>("uid", mount_uid_));
    RESCTRLFS_ASSIGN_OR_RETURN(f.gid, o.int_or<gid_t>("gid", mount_gid_));
    return f;
  };
  auto make_dir = [this](Group* g, Node* parent, const DirFields& f) {
    Node* dir = add_node(parent, g->name, NodeKind::kGroupDir, S_IFDIR | f.mode, f.uid, f.gid);
    build_group_dir(g, dir, f.mode, f.uid, f.gid);
    reset_group_mbm(g);
  };
  // The counters a group had assigned, as (domain, event), checked.
  using Assigned = std::vector<std::pair<int, hw::EventId>>;
  auto read_assigned = [](const JsonIn& o) -> Result<Assigned> {
    Assigned out;
    RESCTRLFS_ASSIGN_OR_RETURN(std::optional<JsonIn> list, o.find("assigned"));
    if (!list) return out;
    RESCTRLFS_ASSIGN_OR_RETURN(std::vector<JsonIn> entries, list->elements());
    for (const JsonIn& a : entries) {
      RESCTRLFS_ASSIGN_OR_RETURN(JsonIn d, a.element(0));
      RESCTRLFS_ASSIGN_OR_RETURN(const int dom, d.as_int<int>(0));
      RESCTRLFS_ASSIGN_OR_RETURN(JsonIn e, a.element(1));
      RESCTRLFS_ASSIGN_OR_RETURN(const std::string ev, e.as_string());
      if (ev != "mbm_local_bytes" && ev != "mbm_total_bytes") return e.error("unknown event");
      out.emplace_back(dom,
                       ev == "mbm_local_bytes" ? hw::EventId::MBM_LOCAL : hw::EventId::MBM_TOTAL);
    }
    return out;
  };
  auto restore_assigned = [this](Group* g, const Assigned& assigned) {
    if (!mbm_event_mode_) return;
    for (const auto& [dom, e] : assigned) {
      if (cntr_owner_.count(dom) == 0) continue;  // the domain is offline now
      (void)assign_cntr(g, dom, e);
    }
  };
  std::vector<hw::CtrlUpdate> updates;
  RESCTRLFS_ASSIGN_OR_RETURN(const std::vector<JsonIn> group_list, j.elements_or_none("groups"));
  for (const JsonIn& go : group_list) {
    RESCTRLFS_ASSIGN_OR_RETURN(const std::string name, go.string_or("name", std::string()));
    RESCTRLFS_ASSIGN_OR_RETURN(const std::string mode_s, go.string_or("mode", "shareable"));
    RESCTRLFS_ASSIGN_OR_RETURN(const DirFields dir, dir_fields(go));
    RESCTRLFS_ASSIGN_OR_RETURN(const Assigned assigned, read_assigned(go));
    Group* g = nullptr;
    if (name.empty()) {
      g = root_;
    } else {
      if (name.size() > 255 || name.find('\n') != std::string::npos ||
          name.find('/') != std::string::npos || name == "." || name == ".." ||
          child(root_node_, name) != nullptr)
        return bad("bad group name " + name);
      bool mode_ok = true;
      const schemata::GroupMode gm = mode_from(mode_s, mode_ok);
      if (!mode_ok) return bad("bad mode");
      // A locked group's CLOSID went back to the pool, a locksetup or
      // locked group's RMID too.
      const bool locked = gm == schemata::GroupMode::PSEUDO_LOCKED;
      const bool has_rmid = gm != schemata::GroupMode::PSEUDO_LOCKSETUP && !locked;
      if (gm != schemata::GroupMode::SHAREABLE && gm != schemata::GroupMode::EXCLUSIVE &&
          (!info_.pseudo_lock_capable || opts_.cdp || opts_.cdpl2))
        return bad("pseudo-locking is not available");
      RESCTRLFS_ASSIGN_OR_RETURN(const uint32_t closid, go.int_at<uint32_t>("closid"));
      RESCTRLFS_ASSIGN_OR_RETURN(const uint32_t rmid, go.int_or<uint32_t>("rmid", 0U));
      // The region of a locked group, read before anything is claimed.
      int si = -1, dom = kNoDomain;
      uint32_t cbm = 0;
      if (locked) {
        RESCTRLFS_ASSIGN_OR_RETURN(const JsonIn rg, go.get("region"));
        RESCTRLFS_ASSIGN_OR_RETURN(const std::string schema, rg.string_at("schema"));
        RESCTRLFS_ASSIGN_OR_RETURN(dom, rg.int_at<int>("domain", kNoDomain));
        RESCTRLFS_ASSIGN_OR_RETURN(cbm, rg.int_at<uint32_t>("cbm"));
        si = schemas_.find(schema);
        if (si < 0 || schemas_.schemas[si].kind != schemata::Kind::CACHE)
          return bad("bad pseudo-locked region");
        const schemata::Schema& s = schemas_.schemas[si];
        bool dom_ok = dom == kNoDomain;  // lost with its cache: nothing to lock
        for (int d : s.domain_ids) dom_ok = dom_ok || d == dom;
        if (!dom_ok || cbm == 0 || (cbm & ~s.full_mask()) != 0 || closid >= s.num_closid ||
            locked_in_hierarchy(s.resource_index, dom, {}))
          return bad("bad pseudo-locked region");
      }
      if (!locked && !closids_.claim(closid))
        return bad("CLOSID " + std::to_string(closid) + " unusable");
      if (mon_capable() && has_rmid && !rmids_.claim(rmid)) {
        if (!locked) closids_.free(closid);
        return bad("RMID " + std::to_string(rmid) + " unusable");
      }
      g = new_group();
      g->type = GroupType::kCtrlMon;
      g->name = name;
      g->closid = closid;
      g->rmid = mon_capable() ? rmid : 0;
      make_dir(g, root_node_, dir);
      if (!has_rmid) restrict_locksetup_files(g);
      if (locked) {
        // Lock the region again: its mask goes into the old CLOSID, as when
        // it was first locked; a group that took the CLOSID over later in
        // the document reprograms it below.
        const schemata::Schema& s = schemas_.schemas[si];
        if (dom != kNoDomain)
          RESCTRLFS_RETURN_IF_ERROR(arch_->pseudo_lock(rid_of(s), dom, closid, cbm));
        g->plr = Group::LockedRegion{si, dom, cbm};
        for (const char* f : {"cpus", "cpus_list"}) set_child_mode(g, f, 0444);
      }
    }
    bool ok = true;
    g->mode = mode_from(mode_s, ok);
    if (!ok || (name.empty() && g->mode != schemata::GroupMode::SHAREABLE &&
                g->mode != schemata::GroupMode::EXCLUSIVE))
      return bad("bad mode");
    RESCTRLFS_ASSIGN_OR_RETURN(const std::string ev, go.string_or("mba_event", std::string()));
    if (ev == "mbm_total_bytes" && event_enabled(hw::EventId::MBM_TOTAL))
      g->mba_event = hw::EventId::MBM_TOTAL;
    if (ev == "mbm_local_bytes" && event_enabled(hw::EventId::MBM_LOCAL))
      g->mba_event = hw::EventId::MBM_LOCAL;
    RESCTRLFS_ASSIGN_OR_RETURN(const std::optional<JsonIn> sch, go.find("schemata"));
    if (sch) {
      RESCTRLFS_ASSIGN_OR_RETURN(const auto schema_list, sch->members());
      for (const auto& [sname, vals] : schema_list) {
        int si = schemas_.find(sname);
        if (si < 0) return bad("unknown schema " + sname);
        const schemata::Schema& s = schemas_.schemas[si];
        RESCTRLFS_ASSIGN_OR_RETURN(const auto dom_list, vals.members());
        for (const auto& [dom, v] : dom_list) {
          RESCTRLFS_ASSIGN_OR_RETURN(const int d, domain_key(dom));
          RESCTRLFS_ASSIGN_OR_RETURN(const uint32_t value, v.as_int<uint32_t>());
          // A domain that is offline now gets defaults when it returns,
          // whatever was saved for it.
          if (std::find(s.domain_ids.begin(), s.domain_ids.end(), d) == s.domain_ids.end())
            continue;
          if (s.mba_sc) {
            mbps_target_[{d, g->closid}] = value;
          } else {
            updates.push_back({rid_of(s), hw_type(s.conf_type), d, g->closid, value});
          }
        }
      }
    }
    if (!name.empty()) {
      RESCTRLFS_ASSIGN_OR_RETURN(CpuMask cpus, parse_cpus(go));
      for (auto& other : groups_)
        if (other.get() != g) other->cpus.subtract(cpus);
      g->cpus = cpus;
    }
    restore_assigned(g, assigned);
    RESCTRLFS_ASSIGN_OR_RETURN(const std::vector<JsonIn> mon_list,
                               go.elements_or_none("mon_groups"));
    for (const JsonIn& mo : mon_list) {
      if (!mon_capable()) return bad("MON groups without monitoring");
      RESCTRLFS_ASSIGN_OR_RETURN(const std::string mname, mo.string_or("name", std::string()));
      Node* mg = node(g->mon_groups_dir);
      if (mname.empty() || mname == "mon_groups" || mname == "." || mname == ".." ||
          mname.size() > 255 || mname.find('/') != std::string::npos ||
          mname.find('\n') != std::string::npos || mg == nullptr || child(mg, mname) != nullptr)
        return bad("bad MON group name " + mname);
      RESCTRLFS_ASSIGN_OR_RETURN(const uint32_t rmid, mo.int_at<uint32_t>("rmid"));
      RESCTRLFS_ASSIGN_OR_RETURN(const DirFields mdir, dir_fields(mo));
      RESCTRLFS_ASSIGN_OR_RETURN(const Assigned massigned, read_assigned(mo));
      RESCTRLFS_ASSIGN_OR_RETURN(CpuMask mcpus, parse_cpus(mo));
      if (!rmids_.claim(rmid)) return bad("RMID " + std::to_string(rmid) + " unusable");
      Group* m = new_group();
      m->type = GroupType::kMon;
      m->name = mname;
      m->parent = g;
      m->closid = g->closid;
      m->rmid = rmid;
      g->mon_children.push_back(m);
      make_dir(m, mg, mdir);
      m->cpus = mcpus;
      restore_assigned(m, massigned);
    }
  }
  // MON groups' CPUs must be within their parent's.
  for (auto& gp : groups_) {
    if (gp->type == GroupType::kMon) gp->cpus &= gp->parent->cpus;
  }
  RESCTRLFS_RETURN_IF_ERROR(arch_->update_ctrls(updates));
  // io_alloc after the groups: none of them may hold its CLOSID.
  RESCTRLFS_ASSIGN_OR_RETURN(const std::optional<JsonIn> io, j.find("io_alloc"));
  if (io) {
    RESCTRLFS_ASSIGN_OR_RETURN(const auto res_list, io->members());
    for (const auto& [res, vals] : res_list) {
      RESCTRLFS_ASSIGN_OR_RETURN(const auto dom_list, vals.members());
      std::map<int, uint32_t> cbm;
      for (const auto& [dom, v] : dom_list) {
        RESCTRLFS_ASSIGN_OR_RETURN(const int d, domain_key(dom));
        RESCTRLFS_ASSIGN_OR_RETURN(cbm[d], v.as_int<uint32_t>());
      }
      Result<void> r = restore_io_alloc(res, cbm);
      if (!r.ok()) return bad("io_alloc on " + res + ": " + r.error().message);
    }
  }
  RESCTRLFS_ASSIGN_OR_RETURN(const std::vector<JsonIn> thread_list, j.elements_or_none("threads"));
  for (const JsonIn& t : thread_list) {
    RESCTRLFS_ASSIGN_OR_RETURN(const JsonIn t0, t.element(0));
    RESCTRLFS_ASSIGN_OR_RETURN(const JsonIn t1, t.element(1));
    RESCTRLFS_ASSIGN_OR_RETURN(const JsonIn t2, t.element(2));
    RESCTRLFS_ASSIGN_OR_RETURN(const pid_t tid, t0.as_int<pid_t>(1));
    RESCTRLFS_ASSIGN_OR_RETURN(const uint32_t closid, t1.as_int<uint32_t>());
    RESCTRLFS_ASSIGN_OR_RETURN(const uint32_t rmid, t2.as_int<uint32_t>());
    if (tasks_ != nullptr && !tasks_->exists(tid)) continue;
    bool known = false;
    for (auto& gp : groups_) known = known || (gp->closid == closid && gp->rmid == rmid);
    if (known) set_thread(tid, closid, rmid);
  }
  update_cpu_assoc();
  jr_all();  // the journal takes a snapshot of what was restored
  return Ok();
}

}  // namespace internal

std::unique_ptr<Filesystem> make_filesystem(const FilesystemConfig& cfg) {
  if (cfg.arch == nullptr) return nullptr;
  return std::make_unique<internal::FsImpl>(cfg);
}

}  // namespace resctrlfs::fs
