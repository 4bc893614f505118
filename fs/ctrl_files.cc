// Implements the control files of CTRL_MON groups: schemata (through the
// schemata library plus a CbmPolicy holding the overlap rules), mode, size,
// mba_MBps_event and the debug id files, and the default allocation of a
// new group (§2.3-§2.5, §3.2, §3.5, §3.6, §4.3).
#include <bit>
#include <cerrno>

#include "fs/impl.h"

namespace resctrlfs::fs::internal {

using schemata::GroupMode;

namespace {

const char* mode_name(GroupMode m) {
  switch (m) {
    case GroupMode::SHAREABLE:
      return "shareable";
    case GroupMode::EXCLUSIVE:
      return "exclusive";
    case GroupMode::PSEUDO_LOCKSETUP:
      return "pseudo-locksetup";
    case GroupMode::PSEUDO_LOCKED:
      return "pseudo-locked";
  }
  return "shareable";
}

}  // namespace

// The group-dependent checks of a cache mask being written.
class GroupCbmPolicy final : public schemata::CbmPolicy {
 public:
  GroupCbmPolicy(FsImpl& fs, const Group& g) : fs_(fs), g_(g) {}
  std::optional<Error> check_locksetup_hierarchy(const schemata::Schema& s, int domain) override {
    // One region per cache hierarchy, counting the ones this write has
    // already asked for (the kernel marks the domain while parsing).
    if (fs_.locked_in_hierarchy(s.resource_index, domain, pending_))
      return Error::make(EINVAL, "Pseudo-locked region in hierarchy\n");
    return std::nullopt;
  }
  std::optional<Error> check_cbm(const schemata::Schema& s, int domain, uint32_t cbm) override {
    if ((g_.mode == GroupMode::SHAREABLE || g_.mode == GroupMode::EXCLUSIVE) &&
        (fs_.locked_cbm(s.resource_index, domain) & cbm) != 0)
      return Error::make(EINVAL, "CBM overlaps with pseudo-locked region\n");
    if (fs_.cbm_overlaps(s, domain, cbm, g_.closid, true))
      return Error::make(EINVAL, "Overlaps with exclusive group\n");
    if ((g_.mode == GroupMode::EXCLUSIVE || g_.mode == GroupMode::PSEUDO_LOCKSETUP) &&
        fs_.cbm_overlaps(s, domain, cbm, g_.closid, false))
      return Error::make(EINVAL, "Overlaps with other group\n");
    if (g_.mode == GroupMode::PSEUDO_LOCKSETUP)
      pending_.push_back({fs_.schemas_.find(s.name), domain, cbm});
    return std::nullopt;
  }
  // The region a successful write asks for: the last one staged.
  const FsImpl::PendingRegion* requested() const {
    return pending_.empty() ? nullptr : &pending_.back();
  }

 private:
  FsImpl& fs_;
  const Group& g_;
  std::vector<FsImpl::PendingRegion> pending_;
};

std::unique_ptr<schemata::CbmPolicy> FsImpl::cbm_policy(const Group& g) {
  return std::make_unique<GroupCbmPolicy>(*this, g);
}

const Group* FsImpl::ctrl_group_by_closid(uint32_t closid) const {
  // A pseudo-locked group's CLOSID is no longer its own.
  const Group* found = nullptr;
  any_ctrl_group([&](const Group& g) {
    if (g.type != GroupType::kCtrlMon || g.closid != closid || g.mode == GroupMode::PSEUDO_LOCKED)
      return false;
    found = &g;
    return true;
  });
  return found;
}

uint32_t FsImpl::ctrl_value(int schema, int domain, uint32_t closid) const {
  const schemata::Schema& s = schemas_.schemas[schema];
  if (s.mba_sc) {
    auto it = mbps_target_.find({domain, closid});
    return it == mbps_target_.end() ? UINT32_MAX : it->second;
  }
  return arch_->get_ctrl(rid_of(s), hw_type(s.conf_type), domain, closid);
}

bool FsImpl::cbm_overlaps(const schemata::Schema& s, int domain, uint32_t cbm, uint32_t closid,
                          bool exclusive_only) const {
  const hw::ResourceId rid = rid_of(s);
  if (!exclusive_only && (cbm & s.shareable_bits) != 0) return true;
  std::vector<hw::ConfType> types = {hw_type(s.conf_type)};
  if (s.conf_type == schemata::ConfType::CODE) types.push_back(hw::ConfType::DATA);
  if (s.conf_type == schemata::ConfType::DATA) types.push_back(hw::ConfType::CODE);
  for (uint32_t i = 0; i < closids_.size(); ++i) {
    if (i == closid || !closids_.allocated(i)) continue;
    const Group* other = ctrl_group_by_closid(i);
    GroupMode mode = other != nullptr ? other->mode : GroupMode::SHAREABLE;
    if (mode == GroupMode::PSEUDO_LOCKSETUP) continue;
    for (hw::ConfType t : types) {
      uint32_t ctrl = arch_->get_ctrl(rid, t, domain, i);
      if ((cbm & ctrl) == 0) continue;
      if (!exclusive_only) return true;
      if (mode == GroupMode::EXCLUSIVE) return true;
    }
  }
  return false;
}

std::optional<uint32_t> FsImpl::default_cbm(const schemata::Schema& s, int d,
                                            uint32_t closid) const {
  const hw::ResourceId rid = rid_of(s);
  const bool cdp = s.conf_type != schemata::ConfType::NONE;
  const hw::ConfType peer =
      s.conf_type == schemata::ConfType::CODE ? hw::ConfType::DATA : hw::ConfType::CODE;
  // A pseudo-locked region's bits are taken even though its CLOSID is free.
  uint32_t used = s.shareable_bits | locked_cbm(s.resource_index, d);
  uint32_t ctrl = s.shareable_bits;
  for (uint32_t i = 0; i < closids_.size(); ++i) {
    if (i == closid || !closids_.allocated(i)) continue;
    // A CLOSID without a group (io_alloc's) is used but never shared.
    const Group* other = ctrl_group_by_closid(i);
    if (other != nullptr && other->mode == GroupMode::PSEUDO_LOCKSETUP) continue;
    uint32_t peer_ctl = cdp ? arch_->get_ctrl(rid, peer, d, i) : 0;
    uint32_t val = arch_->get_ctrl(rid, hw_type(s.conf_type), d, i);
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

Result<void> FsImpl::init_alloc(Group* g) {
  std::vector<hw::CtrlUpdate> updates;
  for (size_t si = 0; si < schemas_.schemas.size(); ++si) {
    const schemata::Schema& s = schemas_.schemas[si];
    const hw::ResourceId rid = rid_of(s);
    if (s.kind == schemata::Kind::BANDWIDTH) {
      for (int d : s.domain_ids) {
        if (s.mba_sc) mbps_target_[{d, g->closid}] = UINT32_MAX;
        updates.push_back({rid, hw::ConfType::NONE, d, g->closid, arch_->default_ctrl(rid)});
      }
      continue;
    }
    for (int d : s.domain_ids) {
      std::optional<uint32_t> ctrl = default_cbm(s, d, g->closid);
      if (!ctrl) return fail(ENOSPC, "No space on " + s.name + ":" + std::to_string(d) + "\n");
      updates.push_back({rid, hw_type(s.conf_type), d, g->closid, *ctrl});
    }
  }
  Result<void> r = arch_->update_ctrls(updates);
  if (!r.ok()) return fail(r.error().code, "Failed to initialize allocations\n");
  return Ok();
}

// ---------------------------------------------------------------------------
// schemata

Result<std::string> FsImpl::show_schemata(const Node& n) {
  const Group* g = n.group;
  if (g->mode == GroupMode::PSEUDO_LOCKSETUP) return schemata::format_schemata_locksetup(schemas_);
  if (g->mode == GroupMode::PSEUDO_LOCKED && g->plr) {
    RESCTRLFS_RETURN_IF_ERROR(check_locked_domain(*g));
    return schemata::format_schemata_locked(schemas_.schemas[g->plr->schema], g->plr->domain,
                                            g->plr->cbm);
  }
  uint32_t closid = g->closid;
  return schemata::format_schemata(schemas_, closid, [this, closid](int schema, int domain) {
    return ctrl_value(schema, domain, closid);
  });
}

Result<void> FsImpl::write_schemata(Node& n, std::string_view data, const Caller&) {
  Group* g = n.group;
  if (schemata::rejected_before_lock(data)) return Error::make(EINVAL);
  lcs_.clear();
  GroupCbmPolicy policy(*this, *g);
  schemata::ParseResult pr = schemata::parse_schemata(data, schemas_, g->mode, policy);
  // MBps targets are stored while parsing, even when a later item fails.
  for (const schemata::StagedValue& v : pr.mba_sc_applied)
    mbps_target_[{v.domain_id, g->closid}] = v.value;
  if (!pr.status.ok()) {
    const Error& e = pr.status.error();
    lcs_.printf(e.message);
    return e;
  }
  std::vector<hw::CtrlUpdate> updates;
  for (const schemata::StagedValue& v : pr.staged) {
    const schemata::Schema& s = schemas_.schemas[v.schema];
    if (s.mba_sc) {
      mbps_target_[{v.domain_id, g->closid}] = v.value;
      continue;
    }
    updates.push_back({rid_of(s), hw_type(s.conf_type), v.domain_id, g->closid, v.value});
  }
  Result<void> r = arch_->update_ctrls(updates);
  if (!r.ok()) {
    lcs_.printf(r.error().message);
    return r;
  }
  // The mask is programmed for the group's CLOSID on the requested domain;
  // now lock it. On failure the group stays in pseudo-locksetup.
  if (g->mode == GroupMode::PSEUDO_LOCKSETUP && policy.requested() != nullptr)
    return pseudo_lock_create(g, *policy.requested());
  return Ok();
}

Result<std::string> FsImpl::show_size(const Node& n) {
  const Group* g = n.group;
  if (g->mode == GroupMode::PSEUDO_LOCKSETUP) return schemata::format_size_locksetup(schemas_);
  if (g->mode == GroupMode::PSEUDO_LOCKED && g->plr) {
    RESCTRLFS_RETURN_IF_ERROR(check_locked_domain(*g));
    return schemata::format_size_locked(schemas_, schemas_.schemas[g->plr->schema], g->plr->domain,
                                        g->plr->cbm);
  }
  uint32_t closid = g->closid;
  return schemata::format_size(schemas_, [this, closid](int schema, int domain) {
    return ctrl_value(schema, domain, closid);
  });
}

// ---------------------------------------------------------------------------
// mode (§3.5)

Result<std::string> FsImpl::show_mode(const Node& n) {
  return std::string(mode_name(n.group->mode)) + "\n";
}

Result<void> FsImpl::write_mode(Node& n, std::string_view data, const Caller&) {
  Group* g = n.group;
  lcs_.clear();
  if (data.empty() || data.back() != '\n') return fail(EINVAL, "mode: Invalid input\n");
  std::string_view buf = kstr_cut(data);
  GroupMode mode = g->mode;
  if (buf == mode_name(mode)) return Ok();
  if (mode == GroupMode::PSEUDO_LOCKED) return fail(EINVAL, "Cannot change pseudo-locked group\n");
  if (buf == "shareable") {
    if (mode == GroupMode::PSEUDO_LOCKSETUP) RESCTRLFS_RETURN_IF_ERROR(locksetup_exit(g));
    g->mode = GroupMode::SHAREABLE;
    return Ok();
  }
  if (buf == "exclusive") {
    bool has_cache = false;
    for (size_t si = 0; si < schemas_.schemas.size(); ++si) {
      const schemata::Schema& s = schemas_.schemas[si];
      if (s.kind != schemata::Kind::CACHE) continue;
      has_cache = true;
      for (int d : s.domain_ids) {
        uint32_t ctrl = ctrl_value(static_cast<int>(si), d, g->closid);
        if (cbm_overlaps(s, d, ctrl, g->closid, false)) return fail(EINVAL, "Schemata overlaps\n");
      }
    }
    if (!has_cache) return fail(EINVAL, "Cannot be exclusive without CAT/CDP\n");
    if (mode == GroupMode::PSEUDO_LOCKSETUP) RESCTRLFS_RETURN_IF_ERROR(locksetup_exit(g));
    g->mode = GroupMode::EXCLUSIVE;
    return Ok();
  }
  if (buf == "pseudo-locksetup") {
    RESCTRLFS_RETURN_IF_ERROR(locksetup_enter(g));
    g->mode = GroupMode::PSEUDO_LOCKSETUP;
    return Ok();
  }
  return fail(EINVAL, "Unknown or unsupported mode\n");
}

// ---------------------------------------------------------------------------
// mba_MBps_event (§3.6), debug ids (§2.8)

Result<std::string> FsImpl::show_mba_mbps_event(const Node& n) {
  return std::string(event_name(n.group->mba_event)) + "\n";
}

Result<void> FsImpl::write_mba_mbps_event(Node& n, std::string_view data, const Caller&) {
  if (data.empty() || data.back() != '\n') return Error::make(EINVAL);
  Group* g = n.group;
  lcs_.clear();
  std::string_view buf = kstr_cut(data);
  if (buf == "mbm_local_bytes" && event_enabled(hw::EventId::MBM_LOCAL)) {
    g->mba_event = hw::EventId::MBM_LOCAL;
  } else if (buf == "mbm_total_bytes" && event_enabled(hw::EventId::MBM_TOTAL)) {
    g->mba_event = hw::EventId::MBM_TOTAL;
  } else {
    return fail(EINVAL, "Unsupported event id '" + std::string(buf) + "'\n");
  }
  return Ok();
}

Result<std::string> FsImpl::show_ctrl_hw_id(const Node& n) {
  return std::to_string(n.group->closid) + "\n";
}

Result<std::string> FsImpl::show_mon_hw_id(const Node& n) {
  return std::to_string(n.group->rmid) + "\n";
}

}  // namespace resctrlfs::fs::internal
