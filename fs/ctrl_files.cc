// Implements the control files of CTRL_MON groups (the CtrlFiles part): schemata (through the
// schemata library plus a CbmPolicy holding the overlap rules), mode, size,
// mba_MBps_event and the debug id files, and the default allocation of a
// new group (the kernel's Documentation/filesystems/resctrl.rst, "Resource
// alloc and monitor groups" and "Schemata files - general concepts").
#include <bit>
#include <cerrno>

#include "fs/events.h"
#include "fs/file_rows.h"
#include "fs/parts.h"

namespace resctrlfs::fs::internal {

using schemata::group_mode_name;
using schemata::GroupMode;

// The group-dependent checks of a cache mask being written.
class GroupCbmPolicy final : public schemata::CbmPolicy {
 public:
  GroupCbmPolicy(Model& m, CtrlFiles& ctrl, PseudoLock& plock, const Group& g)
      : m_(m), ctrl_(ctrl), plock_(plock), g_(g) {}
  std::optional<Error> check_locksetup_hierarchy(const schemata::Schema& s, int domain) override {
    // One region per cache hierarchy, counting the ones this write has
    // already asked for (the kernel marks the domain while parsing).
    if (plock_.locked_in_hierarchy(s.resource_index, domain, pending_))
      return Error::make(EINVAL, "Pseudo-locked region in hierarchy\n");
    return std::nullopt;
  }
  std::optional<Error> check_cbm(const schemata::Schema& s, int domain, uint32_t cbm) override {
    if ((g_.mode == GroupMode::SHAREABLE || g_.mode == GroupMode::EXCLUSIVE) &&
        (plock_.locked_cbm(s.resource_index, domain) & cbm) != 0)
      return Error::make(EINVAL, "CBM overlaps with pseudo-locked region\n");
    if (ctrl_.cbm_overlaps(s, domain, cbm, g_.closid, true))
      return Error::make(EINVAL, "Overlaps with exclusive group\n");
    if ((g_.mode == GroupMode::EXCLUSIVE || g_.mode == GroupMode::PSEUDO_LOCKSETUP) &&
        ctrl_.cbm_overlaps(s, domain, cbm, g_.closid, false))
      return Error::make(EINVAL, "Overlaps with other group\n");
    if (g_.mode == GroupMode::PSEUDO_LOCKSETUP)
      pending_.push_back({m_.schemas.find(s.name), domain, cbm});
    return std::nullopt;
  }
  // The region a successful write asks for: the last one staged.
  const PseudoLock::PendingRegion* requested() const {
    return pending_.empty() ? nullptr : &pending_.back();
  }

 private:
  Model& m_;
  CtrlFiles& ctrl_;
  PseudoLock& plock_;
  const Group& g_;
  std::vector<PseudoLock::PendingRegion> pending_;
};

std::unique_ptr<schemata::CbmPolicy> CtrlFiles::cbm_policy(const Group& g) {
  return std::make_unique<GroupCbmPolicy>(m_, *this, plock_, g);
}

const Group* CtrlFiles::ctrl_group_by_closid(uint32_t closid) const {
  // A pseudo-locked group's CLOSID is no longer its own.
  const Group* found = nullptr;
  m_.any_ctrl_group([&](const Group& g) {
    if (g.type != GroupType::kCtrlMon || g.closid != closid || g.mode == GroupMode::PSEUDO_LOCKED)
      return false;
    found = &g;
    return true;
  });
  return found;
}

uint32_t CtrlFiles::ctrl_value(int schema, int domain, uint32_t closid) const {
  const schemata::Schema& s = m_.schemas.schemas[schema];
  if (s.mba_sc) {
    return mon_.mbps_target(domain, closid);
  }
  return m_.arch->get_ctrl(rid_of(s), hw_type(s.conf_type), domain, closid);
}

bool CtrlFiles::cbm_overlaps(const schemata::Schema& s, int domain, uint32_t cbm, uint32_t closid,
                             bool exclusive_only) const {
  const hw::ResourceId rid = rid_of(s);
  if (!exclusive_only && (cbm & s.shareable_bits) != 0) return true;
  std::vector<hw::ConfType> types = {hw_type(s.conf_type)};
  if (s.conf_type == schemata::ConfType::CODE) types.push_back(hw::ConfType::DATA);
  if (s.conf_type == schemata::ConfType::DATA) types.push_back(hw::ConfType::CODE);
  for (uint32_t i = 0; i < m_.closids.size(); ++i) {
    if (i == closid || !m_.closids.allocated(i)) continue;
    const Group* other = ctrl_group_by_closid(i);
    GroupMode mode = other != nullptr ? other->mode : GroupMode::SHAREABLE;
    if (mode == GroupMode::PSEUDO_LOCKSETUP) continue;
    for (hw::ConfType t : types) {
      uint32_t ctrl = m_.arch->get_ctrl(rid, t, domain, i);
      if ((cbm & ctrl) == 0) continue;
      if (!exclusive_only) return true;
      if (mode == GroupMode::EXCLUSIVE) return true;
    }
  }
  return false;
}

std::optional<uint32_t> CtrlFiles::default_cbm(const schemata::Schema& s, int d,
                                               uint32_t closid) const {
  const hw::ResourceId rid = rid_of(s);
  const bool cdp = s.conf_type != schemata::ConfType::NONE;
  const hw::ConfType peer =
      s.conf_type == schemata::ConfType::CODE ? hw::ConfType::DATA : hw::ConfType::CODE;
  // A pseudo-locked region's bits are taken even though its CLOSID is free.
  uint32_t used = s.shareable_bits | plock_.locked_cbm(s.resource_index, d);
  uint32_t ctrl = s.shareable_bits;
  for (uint32_t i = 0; i < m_.closids.size(); ++i) {
    if (i == closid || !m_.closids.allocated(i)) continue;
    // A CLOSID without a group (io_alloc's) is used but never shared.
    const Group* other = ctrl_group_by_closid(i);
    if (other != nullptr && other->mode == GroupMode::PSEUDO_LOCKSETUP) continue;
    uint32_t peer_ctl = cdp ? m_.arch->get_ctrl(rid, peer, d, i) : 0;
    uint32_t val = m_.arch->get_ctrl(rid, hw_type(s.conf_type), d, i);
    used |= val | peer_ctl;
    if (other != nullptr && other->mode == GroupMode::SHAREABLE) ctrl |= val | peer_ctl;
  }
  const uint32_t full = s.full_mask();
  ctrl |= (used ^ full) & full;
  if (!s.sparse_masks && ctrl != 0) {
    // Keep only the lowest contiguous run of set bits.
    unsigned first = static_cast<unsigned>(std::countr_zero(ctrl));
    uint32_t shifted = ctrl >> first;
    unsigned run = static_cast<unsigned>(std::countr_one(shifted));
    ctrl = run >= 32 ? ctrl : (((1U << run) - 1U) << first);
  }
  if (static_cast<unsigned>(std::popcount(ctrl)) < s.min_cbm_bits) return std::nullopt;
  return ctrl;
}

Result<void> CtrlFiles::init_alloc(Group* g) {
  std::vector<hw::CtrlUpdate> updates;
  for (size_t si = 0; si < m_.schemas.schemas.size(); ++si) {
    const schemata::Schema& s = m_.schemas.schemas[si];
    const hw::ResourceId rid = rid_of(s);
    if (s.kind == schemata::Kind::BANDWIDTH) {
      for (int d : s.domain_ids) {
        if (s.mba_sc) mon_.set_mbps_target(d, g->closid, UINT32_MAX);
        updates.push_back({rid, hw::ConfType::NONE, d, g->closid, m_.arch->default_ctrl(rid)});
      }
      continue;
    }
    for (int d : s.domain_ids) {
      std::optional<uint32_t> ctrl = default_cbm(s, d, g->closid);
      if (!ctrl) return fail(ENOSPC, "No space on " + s.name + ":" + std::to_string(d) + "\n");
      updates.push_back({rid, hw_type(s.conf_type), d, g->closid, *ctrl});
    }
  }
  m_.assert_command_locked();
  Result<void> r = m_.arch->update_ctrls(updates);
  if (!r.ok()) return fail(r.error().code, "Failed to initialize allocations\n");
  return Ok();
}

// ---------------------------------------------------------------------------
// schemata

Result<std::string> CtrlFiles::show_schemata(const Node& n) {
  const Group* g = n.group;
  if (g->mode == GroupMode::PSEUDO_LOCKSETUP)
    return schemata::format_schemata_locksetup(m_.schemas);
  if (g->mode == GroupMode::PSEUDO_LOCKED && g->plr) {
    RESCTRLFS_RETURN_IF_ERROR(plock_.check_locked_domain(*g));
    return schemata::format_schemata_locked(m_.schemas.schemas[g->plr->schema], g->plr->domain,
                                            g->plr->cbm);
  }
  uint32_t closid = g->closid;
  return schemata::format_schemata(m_.schemas, closid, [this, closid](int schema, int domain) {
    return ctrl_value(schema, domain, closid);
  });
}

Result<void> CtrlFiles::apply_staged(const std::vector<schemata::StagedValue>& staged,
                                     uint32_t closid) {
  std::vector<hw::CtrlUpdate> updates;
  for (const schemata::StagedValue& v : staged) {
    const schemata::Schema& s = m_.schemas.schemas[v.schema];
    if (s.mba_sc) {
      mon_.set_mbps_target(v.domain_id, closid, v.value);
      continue;
    }
    updates.push_back({rid_of(s), hw_type(s.conf_type), v.domain_id, closid, v.value});
  }
  m_.assert_command_locked();
  return m_.arch->update_ctrls(updates);
}

Result<void> CtrlFiles::write_schemata(Node& n, std::string_view data, const Caller&) {
  Group* g = n.group;
  GroupCbmPolicy policy(m_, *this, plock_, *g);
  schemata::ParseResult pr = schemata::parse_schemata(data, m_.schemas, g->mode, policy);
  // MBps targets are stored while parsing, even when a later item fails.
  for (const schemata::StagedValue& v : pr.mba_sc_applied)
    mon_.set_mbps_target(v.domain_id, g->closid, v.value);
  if (!pr.status.ok()) return pr.status.error();
  RESCTRLFS_RETURN_IF_ERROR(apply_staged(pr.staged, g->closid));
  // The mask is programmed for the group's CLOSID on the requested domain;
  // now lock it. On failure the group stays in pseudo-locksetup.
  if (g->mode == GroupMode::PSEUDO_LOCKSETUP && policy.requested() != nullptr)
    return plock_.pseudo_lock_create(g, *policy.requested());
  return Ok();
}

Result<std::string> CtrlFiles::show_size(const Node& n) {
  const Group* g = n.group;
  if (g->mode == GroupMode::PSEUDO_LOCKSETUP) return schemata::format_size_locksetup(m_.schemas);
  if (g->mode == GroupMode::PSEUDO_LOCKED && g->plr) {
    RESCTRLFS_RETURN_IF_ERROR(plock_.check_locked_domain(*g));
    return schemata::format_size_locked(m_.schemas, m_.schemas.schemas[g->plr->schema],
                                        g->plr->domain, g->plr->cbm);
  }
  uint32_t closid = g->closid;
  return schemata::format_size(m_.schemas, [this, closid](int schema, int domain) {
    return ctrl_value(schema, domain, closid);
  });
}

// ---------------------------------------------------------------------------
// mode

Result<std::string> CtrlFiles::show_mode(const Node& n) {
  return std::string(group_mode_name(n.group->mode)) + "\n";
}

Result<void> CtrlFiles::write_mode(Node& n, std::string_view data, const Caller&) {
  Group* g = n.group;
  if (data.empty() || data.back() != '\n') return fail(EINVAL, "mode: Invalid input\n");
  std::string_view buf = kstr_cut(data);
  GroupMode mode = g->mode;
  const std::optional<GroupMode> want = schemata::group_mode_from_name(buf);
  if (want == mode) return Ok();
  if (mode == GroupMode::PSEUDO_LOCKED) return fail(EINVAL, "Cannot change pseudo-locked group\n");
  if (want == GroupMode::SHAREABLE) {
    if (mode == GroupMode::PSEUDO_LOCKSETUP) RESCTRLFS_RETURN_IF_ERROR(plock_.locksetup_exit(g));
    g->mode = GroupMode::SHAREABLE;
    return Ok();
  }
  if (want == GroupMode::EXCLUSIVE) {
    bool has_cache = false;
    for (size_t si = 0; si < m_.schemas.schemas.size(); ++si) {
      const schemata::Schema& s = m_.schemas.schemas[si];
      if (s.kind != schemata::Kind::CACHE) continue;
      has_cache = true;
      for (int d : s.domain_ids) {
        uint32_t ctrl = ctrl_value(static_cast<int>(si), d, g->closid);
        if (cbm_overlaps(s, d, ctrl, g->closid, false)) return fail(EINVAL, "Schemata overlaps\n");
      }
    }
    if (!has_cache) return fail(EINVAL, "Cannot be exclusive without CAT/CDP\n");
    if (mode == GroupMode::PSEUDO_LOCKSETUP) RESCTRLFS_RETURN_IF_ERROR(plock_.locksetup_exit(g));
    g->mode = GroupMode::EXCLUSIVE;
    return Ok();
  }
  if (want == GroupMode::PSEUDO_LOCKSETUP) {
    RESCTRLFS_RETURN_IF_ERROR(plock_.locksetup_enter(g));
    g->mode = GroupMode::PSEUDO_LOCKSETUP;
    return Ok();
  }
  return fail(EINVAL, "Unknown or unsupported mode\n");
}

// ---------------------------------------------------------------------------
// mba_MBps_event, debug ids (ctrl_hw_id, mon_hw_id with the debug mount option)

Result<std::string> CtrlFiles::show_mba_mbps_event(const Node& n) {
  return std::string(event_name(n.group->mba_event)) + "\n";
}

Result<void> CtrlFiles::write_mba_mbps_event(Node& n, std::string_view data, const Caller&) {
  Group* g = n.group;
  std::string_view buf = kstr_cut(data);
  if (buf == "mbm_local_bytes" && m_.event_enabled(hw::EventId::MBM_LOCAL)) {
    g->mba_event = hw::EventId::MBM_LOCAL;
  } else if (buf == "mbm_total_bytes" && m_.event_enabled(hw::EventId::MBM_TOTAL)) {
    g->mba_event = hw::EventId::MBM_TOTAL;
  } else {
    return fail(EINVAL, "Unsupported event id '" + std::string(buf) + "'\n");
  }
  return Ok();
}

Result<std::string> CtrlFiles::show_ctrl_hw_id(const Node& n) {
  return std::to_string(n.group->closid) + "\n";
}

Result<std::string> CtrlFiles::show_mon_hw_id(const Node& n) {
  return std::to_string(n.group->rmid) + "\n";
}

// The rows of group directories for control.
FileRows ctrl_file_rows() {
  static const FileRow kRows[] = {
      {.name = "schemata",
       .mode = 0644,
       .flags = kBase | kCtrl,
       .show = show_fn<&CtrlFiles::show_schemata>,
       .write = write_fn<&CtrlFiles::write_schemata>,
       .read_status = true,
       .refuse_unlocked = refuse_schemata,
       .changes = Changes::kGroup},
      {.name = "mode",
       .mode = 0644,
       .flags = kBase | kCtrl,
       .show = show_fn<&CtrlFiles::show_mode>,
       .write = write_fn<&CtrlFiles::write_mode>,
       .read_status = true,
       .changes = Changes::kGroup},
      {.name = "size",
       .mode = 0444,
       .flags = kBase | kCtrl,
       .show = show_fn<&CtrlFiles::show_size>,
       .read_status = true},
      {.name = "mba_MBps_event",
       .mode = 0644,
       .flags = kBase | kCtrl | kMon,
       .show = show_fn<&CtrlFiles::show_mba_mbps_event>,
       .write = write_fn<&CtrlFiles::write_mba_mbps_event>,
       .cond = cond_fn<&InfoFiles::cond_mba_sc>,
       .read_status = true,
       .refuse_unlocked = refuse_no_newline,
       .changes = Changes::kGroup},
  };
  return kRows;
}

// The rows of group directories in a mount with the debug option.
FileRows debug_file_rows() {
  static const FileRow kRows[] = {
      {.name = "ctrl_hw_id",
       .mode = 0444,
       .flags = kBase | kCtrl | kDebug,
       .show = show_fn<&CtrlFiles::show_ctrl_hw_id>,
       .read_status = true},
      {.name = "mon_hw_id",
       .mode = 0444,
       .flags = kBase | kMon | kDebug,
       .show = show_fn<&CtrlFiles::show_mon_hw_id>,
       .read_status = true},
  };
  return kRows;
}

}  // namespace resctrlfs::fs::internal
