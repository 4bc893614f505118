// Implements restore_state_json() of FsImpl (class StateRestore): a state document (see
// state.cc) applied to a freshly mounted model, in steps — settings, the
// groups with their MON groups, the controls, io_alloc, the threads. A
// document that fails any step leaves the fresh model as it was.
#include <algorithm>
#include <cerrno>
#include <charconv>
#include <map>
#include <nlohmann/json.hpp>

#include "base/json_input.h"
#include "fs/cpus.h"
#include "fs/impl.h"
#include "fs/io_channels.h"
#include "fs/parts.h"
#include "fs/settings.h"

namespace resctrlfs::fs::internal {

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

Error bad_state(const std::string& why) { return Error::log_only(EINVAL, "state: " + why); }
Error bad(const std::string& why) { return Error::log_only(EINVAL, why); }

// A domain id used as a JSON object key: decimal digits that fit an int.
Result<int> domain_key(const std::string& key) {
  int d = -1;
  const auto [end, ec] = std::from_chars(key.data(), key.data() + key.size(), d);
  if (key.empty() || ec != std::errc() || end != key.data() + key.size() || d < 0)
    return bad("bad domain key \"" + key + "\"");
  return d;
}

// A group or MON group directory name the document may give.
bool bad_dir_name(const std::string& name) {
  return name.empty() || name.size() > 255 || name.find('\n') != std::string::npos ||
         name.find('/') != std::string::npos || name == "." || name == "..";
}

}  // namespace

// Applies a state document to a freshly mounted model, one per restore.
class StateRestore final : public RootHelper {
 public:
  using RootHelper::RootHelper;
  // The document `text`; on any fault the model is the fresh one again.
  Result<void> restore_state_locked(const std::string& text);

 private:
  // What a failed restore puts back: the settings that survive an unmount
  // (with the RMID pool), last_cmd_status and the mount options.
  struct KeptState {
    MonSettings settings;
    LastCmdStatus lcs;
    MountOptions opts;
    uint32_t next_node_base;
  };
  struct DirFields {
    uint32_t mode;
    uid_t uid;
    gid_t gid;
    uint32_t node_base;  // 0: none journaled
  };
  // The counters a group had assigned, as (domain, event), checked.
  using Assigned = std::vector<std::pair<int, hw::EventId>>;
  KeptState keep_state() const;
  // Undoes a restore that failed part way: unmounts, puts `kept` back and
  // mounts afresh, so the model is the fresh one the restore started from.
  void back_to_fresh(const KeptState& kept);
  // The steps of a restore, in order; each returns the document's first
  // fault.
  Result<void> restore_steps(const JsonIn& j);
  Result<void> restore_settings(const JsonIn& j);
  Result<void> restore_group(const JsonIn& go, std::vector<hw::CtrlUpdate>& updates);
  // A CTRL_MON group other than the default one, with its directory.
  Result<Group*> restore_ctrl_group(const JsonIn& go, const std::string& name,
                                    const std::string& mode_s, const DirFields& dir);
  // A pseudo-locked group's region, checked.
  Result<Group::LockedRegion> restore_region(const JsonIn& go, uint32_t closid) const;
  Result<void> restore_schemata(const JsonIn& go, uint32_t closid,
                                std::vector<hw::CtrlUpdate>& updates);
  Result<void> restore_mon_group(Group* g, const JsonIn& mo);
  Result<void> restore_io_alloc_doc(const JsonIn& j);
  Result<void> restore_threads(const JsonIn& j);
  Result<void> restore_io_channels(const JsonIn& j);
  Result<CpuMask> restore_cpus(const JsonIn& o) const;
  Result<DirFields> restore_dir_fields(const JsonIn& o) const;
  void restore_dir(Group* g, Node* parent, const DirFields& f);
  static Result<Assigned> read_assigned(const JsonIn& o);
  void restore_assigned(Group* g, const Assigned& assigned);
};

Result<void> FsImpl::restore_state_json(const std::string& text) {
  CommandLock lock(*this);
  // The document is outside input (a file, via the journal): typed access
  // only (base/json_input.h); the try is the last guard of that rule.
  Result<void> r = Ok();
  try {
    r = StateRestore(m_, p_).restore_state_locked(text);
  } catch (const std::exception& e) {
    r = Error::log_only(EINVAL, e.what());
  }
  if (!r.ok()) return bad_state(r.error().message);
  return r;
}

Result<void> StateRestore::restore_state_locked(const std::string& text) {
  Result<json> parsed = parse_json(text);
  if (!parsed.ok()) return bad("not JSON: " + parsed.error().message);
  const JsonIn j(*parsed);
  if (!j.json().is_object()) return bad("not a JSON object");
  Result<int> version = j.int_or<int>("version", 0);
  if (!version.ok() || *version != 1) return bad("unknown version");
  if (!m_.mounted) return bad("not mounted");
  if (m_.groups.size() != 1) return bad("the model is not fresh");
  const KeptState kept = keep_state();
  Result<void> r = restore_steps(j);
  if (!r.ok()) back_to_fresh(kept);
  return r;
}

StateRestore::KeptState StateRestore::keep_state() const {
  return KeptState{p_.mon.settings(), m_.lcs, m_.opts, m_.nodes.next_base()};
}

void StateRestore::back_to_fresh(const KeptState& kept) {
  // The steps done so far are undone the way an unmount undoes them (the
  // hardware reset, locks released, threads untagged); then the settings
  // that survive an unmount come back and the model is mounted afresh.
  p_.groups.unmount_locked();
  // The hardware's mode first (a switch resets the settings), then every
  // setting as it was.
  if (p_.mon.mbm_event_mode() != kept.settings.mbm_event_mode)
    (void)p_.mon.set_assign_mode(kept.settings.mbm_event_mode);
  const bool mode = p_.mon.mbm_event_mode();  // what the hardware took
  p_.mon.settings() = kept.settings;
  p_.mon.settings().mbm_event_mode = mode;
  (void)p_.groups.mount_locked(kept.opts);
  m_.lcs = kept.lcs;
  // The groups restored before the failure are gone: their node bases
  // were never served.
  m_.nodes.set_next_base(kept.next_node_base);
}

Result<void> StateRestore::restore_steps(const JsonIn& j) {
  // Global settings first: a mode switch releases every counter.
  RESCTRLFS_RETURN_IF_ERROR(restore_settings(j));
  // Before the groups: one without a journaled node base takes the next.
  RESCTRLFS_ASSIGN_OR_RETURN(const uint32_t next_base,
                             j.int_or<uint32_t>("next_node_base", 1U, 1, NodeTable::kMaxBase));
  m_.nodes.note_next_base(next_base);
  std::vector<hw::CtrlUpdate> updates;
  RESCTRLFS_ASSIGN_OR_RETURN(const std::vector<JsonIn> group_list, j.elements_or_none("groups"));
  for (const JsonIn& go : group_list) RESCTRLFS_RETURN_IF_ERROR(restore_group(go, updates));
  // MON groups' CPUs must be within their parent's.
  for (auto& gp : m_.groups) {
    if (gp->type == GroupType::kMon) gp->cpus &= gp->parent->cpus;
  }
  RESCTRLFS_RETURN_IF_ERROR(m_.arch->update_ctrls(updates));
  // io_alloc after the groups: none of them may hold its CLOSID.
  RESCTRLFS_RETURN_IF_ERROR(restore_io_alloc_doc(j));
  RESCTRLFS_RETURN_IF_ERROR(restore_threads(j));
  RESCTRLFS_RETURN_IF_ERROR(restore_io_channels(j));
  p_.cpus.update_cpu_assoc();
  m_.changes.all();  // the journal takes a snapshot of what was restored
  return Ok();
}

Result<void> StateRestore::restore_settings(const JsonIn& j) {
  RESCTRLFS_ASSIGN_OR_RETURN(const std::optional<JsonIn> st, j.find("settings"));
  if (!st) return Ok();
  RESCTRLFS_ASSIGN_OR_RETURN(const CheckedSettings checked,
                             check_settings(m_, p_, kInJournal, *st));
  return apply_settings(m_, p_, checked);
}

Result<CpuMask> StateRestore::restore_cpus(const JsonIn& o) const {
  Result<std::string> list = o.string_or("cpus", std::string());
  if (!list.ok()) return bad(list.error().message);
  Result<CpuMask> m = parse_cpu_list(*list, m_.info.nr_cpus);
  if (!m.ok()) return bad(o.path() + ".cpus: bad cpu list");
  // A CPU that has gone offline since the state was saved has left
  // every group, as it would have if it had gone while we ran.
  *m &= m_.info.online;
  return m;
}

Result<StateRestore::DirFields> StateRestore::restore_dir_fields(const JsonIn& o) const {
  DirFields f{};
  RESCTRLFS_ASSIGN_OR_RETURN(f.mode, o.int_or<uint32_t>("dir_mode", 0755U, 0, 07777));
  RESCTRLFS_ASSIGN_OR_RETURN(f.uid, o.int_or<uid_t>("uid", m_.mount_uid));
  RESCTRLFS_ASSIGN_OR_RETURN(f.gid, o.int_or<gid_t>("gid", m_.mount_gid));
  RESCTRLFS_ASSIGN_OR_RETURN(f.node_base,
                             o.int_or<uint32_t>("node_base", 0U, 0, NodeTable::kMaxBase));
  return f;
}

void StateRestore::restore_dir(Group* g, Node* parent, const DirFields& f) {
  // A journal from before node bases: new numbers, as at mkdir.
  g->node_base = f.node_base != 0 ? f.node_base : m_.nodes.take_base();
  m_.nodes.note_next_base(g->node_base + 1);
  Node* dir = m_.nodes.add(parent, g->name, NodeKind::kGroupDir, S_IFDIR | f.mode, f.uid, f.gid,
                           m_.now_seconds(), g->node_base);
  p_.tree.build_group_dir(g, dir, f.mode, f.uid, f.gid);
  // After a takeover the group's counts go on from where its reader saw
  // them (the Arch kept them, with the same RMID); otherwise from now.
  if (!m_.arch->counters_carried_over()) p_.mon.reset_group_mbm(g);
}

Result<StateRestore::Assigned> StateRestore::read_assigned(const JsonIn& o) {
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
}

void StateRestore::restore_assigned(Group* g, const Assigned& assigned) {
  if (!p_.mon.mbm_event_mode()) return;
  for (const auto& [dom, e] : assigned) {
    if (!p_.mon.cntr_domain_online(dom)) continue;  // the domain is offline now
    (void)p_.mon.assign_cntr(g, dom, e);
  }
}

Result<void> StateRestore::restore_group(const JsonIn& go, std::vector<hw::CtrlUpdate>& updates) {
  RESCTRLFS_ASSIGN_OR_RETURN(const std::string name, go.string_or("name", std::string()));
  RESCTRLFS_ASSIGN_OR_RETURN(const std::string mode_s, go.string_or("mode", "shareable"));
  RESCTRLFS_ASSIGN_OR_RETURN(const DirFields dir, restore_dir_fields(go));
  RESCTRLFS_ASSIGN_OR_RETURN(const Assigned assigned, read_assigned(go));
  Group* g = m_.root;
  if (!name.empty()) {
    RESCTRLFS_ASSIGN_OR_RETURN(g, restore_ctrl_group(go, name, mode_s, dir));
  }
  bool ok = true;
  g->mode = mode_from(mode_s, ok);
  if (!ok || (name.empty() && g->mode != schemata::GroupMode::SHAREABLE &&
              g->mode != schemata::GroupMode::EXCLUSIVE))
    return bad("bad mode");
  RESCTRLFS_ASSIGN_OR_RETURN(const std::string ev, go.string_or("mba_event", std::string()));
  if (ev == "mbm_total_bytes" && m_.event_enabled(hw::EventId::MBM_TOTAL))
    g->mba_event = hw::EventId::MBM_TOTAL;
  if (ev == "mbm_local_bytes" && m_.event_enabled(hw::EventId::MBM_LOCAL))
    g->mba_event = hw::EventId::MBM_LOCAL;
  RESCTRLFS_RETURN_IF_ERROR(restore_schemata(go, g->closid, updates));
  if (!name.empty()) {
    RESCTRLFS_ASSIGN_OR_RETURN(CpuMask cpus, restore_cpus(go));
    for (auto& other : m_.groups)
      if (other.get() != g) other->cpus.subtract(cpus);
    g->cpus = cpus;
  }
  restore_assigned(g, assigned);
  RESCTRLFS_ASSIGN_OR_RETURN(const std::vector<JsonIn> mon_list, go.elements_or_none("mon_groups"));
  for (const JsonIn& mo : mon_list) RESCTRLFS_RETURN_IF_ERROR(restore_mon_group(g, mo));
  return Ok();
}

Result<Group*> StateRestore::restore_ctrl_group(const JsonIn& go, const std::string& name,
                                                const std::string& mode_s, const DirFields& dir) {
  if (bad_dir_name(name) || m_.nodes.child(m_.root_node, name) != nullptr)
    return bad("bad group name " + name);
  bool mode_ok = true;
  const schemata::GroupMode gm = mode_from(mode_s, mode_ok);
  if (!mode_ok) return bad("bad mode");
  // A locked group's CLOSID went back to the pool, a locksetup or
  // locked group's RMID too.
  const bool locked = gm == schemata::GroupMode::PSEUDO_LOCKED;
  const bool has_rmid = gm != schemata::GroupMode::PSEUDO_LOCKSETUP && !locked;
  if (gm != schemata::GroupMode::SHAREABLE && gm != schemata::GroupMode::EXCLUSIVE &&
      (!m_.info.pseudo_lock_capable || m_.opts.cdp || m_.opts.cdpl2))
    return bad("pseudo-locking is not available");
  RESCTRLFS_ASSIGN_OR_RETURN(const uint32_t closid, go.int_at<uint32_t>("closid"));
  RESCTRLFS_ASSIGN_OR_RETURN(const uint32_t rmid, go.int_or<uint32_t>("rmid", 0U));
  // The region of a locked group, read before anything is claimed.
  std::optional<Group::LockedRegion> region;
  if (locked) {
    RESCTRLFS_ASSIGN_OR_RETURN(region, restore_region(go, closid));
  }
  if (!locked && !m_.closids.claim(closid))
    return bad("CLOSID " + std::to_string(closid) + " unusable");
  if (m_.mon_capable() && has_rmid && !p_.mon.claim_rmid(closid, rmid)) {
    if (!locked) m_.closids.free(closid);
    return bad("RMID " + std::to_string(rmid) + " unusable");
  }
  Group* g = p_.groups.new_group();
  g->type = GroupType::kCtrlMon;
  g->name = name;
  g->closid = closid;
  g->rmid = m_.mon_capable() ? rmid : 0;
  restore_dir(g, m_.root_node, dir);
  if (!has_rmid) p_.plock.restrict_locksetup_files(g);
  if (region) {
    // Lock the region again: its mask goes into the old CLOSID, as when
    // it was first locked; a group that took the CLOSID over later in
    // the document reprograms it.
    const schemata::Schema& s = m_.schemas.schemas[region->schema];
    if (region->domain != kNoDomain)
      RESCTRLFS_RETURN_IF_ERROR(
          m_.arch->pseudo_lock(rid_of(s), region->domain, closid, region->cbm));
    g->plr = *region;
    for (const char* f : {"cpus", "cpus_list"}) p_.plock.set_child_mode(g, f, 0444);
  }
  return g;
}

Result<Group::LockedRegion> StateRestore::restore_region(const JsonIn& go, uint32_t closid) const {
  int dom = kNoDomain;
  uint32_t cbm = 0;
  RESCTRLFS_ASSIGN_OR_RETURN(const JsonIn rg, go.get("region"));
  RESCTRLFS_ASSIGN_OR_RETURN(const std::string schema, rg.string_at("schema"));
  RESCTRLFS_ASSIGN_OR_RETURN(dom, rg.int_at<int>("domain", kNoDomain));
  RESCTRLFS_ASSIGN_OR_RETURN(cbm, rg.int_at<uint32_t>("cbm"));
  const int si = m_.schemas.find(schema);
  if (si < 0 || m_.schemas.schemas[si].kind != schemata::Kind::CACHE)
    return bad("bad pseudo-locked region");
  const schemata::Schema& s = m_.schemas.schemas[si];
  bool dom_ok = dom == kNoDomain;  // lost with its cache: nothing to lock
  for (int d : s.domain_ids) dom_ok = dom_ok || d == dom;
  if (!dom_ok || cbm == 0 || (cbm & ~s.full_mask()) != 0 || closid >= s.num_closid ||
      p_.plock.locked_in_hierarchy(s.resource_index, dom, {}))
    return bad("bad pseudo-locked region");
  return Group::LockedRegion{si, dom, cbm};
}

Result<void> StateRestore::restore_schemata(const JsonIn& go, uint32_t closid,
                                            std::vector<hw::CtrlUpdate>& updates) {
  RESCTRLFS_ASSIGN_OR_RETURN(const std::optional<JsonIn> sch, go.find("schemata"));
  if (!sch) return Ok();
  RESCTRLFS_ASSIGN_OR_RETURN(const auto schema_list, sch->members());
  for (const auto& [sname, vals] : schema_list) {
    int si = m_.schemas.find(sname);
    if (si < 0) return bad("unknown schema " + sname);
    const schemata::Schema& s = m_.schemas.schemas[si];
    RESCTRLFS_ASSIGN_OR_RETURN(const auto dom_list, vals.members());
    for (const auto& [dom, v] : dom_list) {
      RESCTRLFS_ASSIGN_OR_RETURN(const int d, domain_key(dom));
      RESCTRLFS_ASSIGN_OR_RETURN(const uint32_t value, v.as_int<uint32_t>());
      // A domain that is offline now gets defaults when it returns,
      // whatever was saved for it.
      if (std::find(s.domain_ids.begin(), s.domain_ids.end(), d) == s.domain_ids.end()) continue;
      if (s.mba_sc) {
        p_.mon.set_mbps_target(d, closid, value);
      } else {
        updates.push_back({rid_of(s), hw_type(s.conf_type), d, closid, value});
      }
    }
  }
  return Ok();
}

Result<void> StateRestore::restore_mon_group(Group* g, const JsonIn& mo) {
  if (!m_.mon_capable()) return bad("MON groups without monitoring");
  RESCTRLFS_ASSIGN_OR_RETURN(const std::string mname, mo.string_or("name", std::string()));
  Node* mg = m_.nodes.get(g->mon_groups_dir);
  if (bad_dir_name(mname) || mname == "mon_groups" || mg == nullptr ||
      m_.nodes.child(mg, mname) != nullptr)
    return bad("bad MON group name " + mname);
  RESCTRLFS_ASSIGN_OR_RETURN(const uint32_t rmid, mo.int_at<uint32_t>("rmid"));
  RESCTRLFS_ASSIGN_OR_RETURN(const DirFields mdir, restore_dir_fields(mo));
  RESCTRLFS_ASSIGN_OR_RETURN(const Assigned massigned, read_assigned(mo));
  RESCTRLFS_ASSIGN_OR_RETURN(CpuMask mcpus, restore_cpus(mo));
  if (!p_.mon.claim_rmid(g->closid, rmid)) return bad("RMID " + std::to_string(rmid) + " unusable");
  Group* m = p_.groups.new_group();
  m->type = GroupType::kMon;
  m->name = mname;
  m->closid = g->closid;
  m->rmid = rmid;
  attach_mon(g, m);
  restore_dir(m, mg, mdir);
  m->cpus = mcpus;
  restore_assigned(m, massigned);
  return Ok();
}

Result<void> StateRestore::restore_io_alloc_doc(const JsonIn& j) {
  RESCTRLFS_ASSIGN_OR_RETURN(const std::optional<JsonIn> io, j.find("io_alloc"));
  if (!io) return Ok();
  RESCTRLFS_ASSIGN_OR_RETURN(const auto res_list, io->members());
  for (const auto& [res, vals] : res_list) {
    RESCTRLFS_ASSIGN_OR_RETURN(const auto dom_list, vals.members());
    std::map<int, uint32_t> cbm;
    for (const auto& [dom, v] : dom_list) {
      RESCTRLFS_ASSIGN_OR_RETURN(const int d, domain_key(dom));
      RESCTRLFS_ASSIGN_OR_RETURN(cbm[d], v.as_int<uint32_t>());
    }
    Result<void> r = p_.io_alloc.restore_io_alloc(res, cbm);
    if (!r.ok()) return bad("io_alloc on " + res + ": " + r.error().message);
  }
  return Ok();
}

Result<void> StateRestore::restore_io_channels(const JsonIn& j) {
  // Mounted without `iordt` the channels are in no group: nothing to do.
  if (!m_.opts.iordt) return Ok();
  RESCTRLFS_ASSIGN_OR_RETURN(const std::vector<JsonIn> list, j.elements_or_none("io_channels"));
  for (const JsonIn& c : list) {
    RESCTRLFS_ASSIGN_OR_RETURN(const JsonIn c0, c.element(0));
    RESCTRLFS_ASSIGN_OR_RETURN(const JsonIn c1, c.element(1));
    RESCTRLFS_ASSIGN_OR_RETURN(const JsonIn c2, c.element(2));
    RESCTRLFS_ASSIGN_OR_RETURN(const uint32_t id, c0.as_int<uint32_t>());
    RESCTRLFS_ASSIGN_OR_RETURN(const std::string ctrl, c1.as_string());
    RESCTRLFS_ASSIGN_OR_RETURN(const std::string mon, c2.as_string());
    const GroupKey key{ctrl, mon};
    Group* g = nullptr;
    for (auto& gp : m_.groups)
      if (group_key(*gp) == key) g = gp.get();
    if (g == nullptr) return bad("io_channels: no group \"" + ctrl + "\" \"" + mon + "\"");
    Result<void> r = p_.io_ch.restore(id, g);
    if (!r.ok()) return bad("io_channels: " + r.error().message);
  }
  return Ok();
}

Result<void> StateRestore::restore_threads(const JsonIn& j) {
  RESCTRLFS_ASSIGN_OR_RETURN(const std::vector<JsonIn> thread_list, j.elements_or_none("threads"));
  for (const JsonIn& t : thread_list) {
    RESCTRLFS_ASSIGN_OR_RETURN(const JsonIn t0, t.element(0));
    RESCTRLFS_ASSIGN_OR_RETURN(const JsonIn t1, t.element(1));
    RESCTRLFS_ASSIGN_OR_RETURN(const JsonIn t2, t.element(2));
    RESCTRLFS_ASSIGN_OR_RETURN(const pid_t tid, t0.as_int<pid_t>(1));
    RESCTRLFS_ASSIGN_OR_RETURN(const uint32_t closid, t1.as_int<uint32_t>());
    RESCTRLFS_ASSIGN_OR_RETURN(const uint32_t rmid, t2.as_int<uint32_t>());
    // Gone while the daemon was down. A thread whose lookup failed (EMFILE,
    // ...) keeps its tags: the listings and ticks look again (a zombie found
    // here is forgotten once reaped, see Groups::rescan_threads).
    if (m_.tasks != nullptr && m_.tasks->lookup(tid) == ESRCH) continue;
    bool known = false;
    for (auto& gp : m_.groups) known = known || (gp->closid == closid && gp->rmid == rmid);
    if (known) p_.groups.set_thread(tid, closid, rmid);
  }
  return Ok();
}

}  // namespace resctrlfs::fs::internal
