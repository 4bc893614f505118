// Implements io_alloc (AMD SDCIAE), the IoAlloc part: the info/<cache>/io_alloc and
// io_alloc_cbm files (the kernel's Documentation/filesystems/resctrl.rst,
// "Info directory"), the reservation of the highest
// CLOSID while it is enabled, and its save/restore.
//
// The enabled flag lives in the hardware layer (Arch::io_alloc_enabled), as
// CDP's does; fs/ keeps the CLOSID allocated in its pool so that mkdir skips
// it, and the CLOSID's mask is an ordinary control value of the resource.
#include <cerrno>

#include "fs/file_rows.h"
#include "fs/kstr.h"
#include "fs/parts.h"

namespace resctrlfs::fs::internal {

namespace {

std::string not_supported(const schemata::Schema& s) {
  return "io_alloc is not supported on " + s.name + "\n";
}

}  // namespace

bool IoAlloc::cond_io_alloc() const {
  // The files appear in every cache info dir as soon as L3 is capable.
  const hw::Resource& l3 = m_.info.res(hw::ResourceId::L3);
  return l3.alloc_capable && l3.cache.io_alloc_capable;
}

bool IoAlloc::io_alloc_capable(const schemata::Schema& s) const {
  return s.kind == schemata::Kind::CACHE && m_.info.res(rid_of(s)).cache.io_alloc_capable;
}

bool IoAlloc::io_alloc_on(const schemata::Schema& s) const {
  return io_alloc_capable(s) && m_.arch->io_alloc_enabled(rid_of(s));
}

uint32_t IoAlloc::io_alloc_closid(const schemata::Schema& s) const {
  // The resource's highest CLOSID; num_closid is already halved under CDP.
  return s.num_closid == 0 ? 0 : s.num_closid - 1;
}

Result<std::string> IoAlloc::show_io_alloc(const Node& n) {
  const schemata::Schema& s = m_.schemas.schemas[n.schema];
  if (!io_alloc_capable(s)) return std::string("not supported\n");
  return std::string(io_alloc_on(s) ? "enabled\n" : "disabled\n");
}

Result<void> IoAlloc::write_io_alloc(Node& n, std::string_view data, const Caller&) {
  bool enable = false;
  (void)kstr::kstrtobool(kstr::c_string(data), enable);  // checked before the lock
  const schemata::Schema& s = m_.schemas.schemas[n.schema];
  if (!io_alloc_capable(s)) return fail(ENODEV, not_supported(s));
  const hw::ResourceId rid = rid_of(s);
  if (m_.arch->io_alloc_enabled(rid) == enable) return Ok();
  const uint32_t closid = io_alloc_closid(s);
  if (closid >= m_.closids.size())
    return fail(EINVAL,
                "io_alloc CLOSID (ctrl_hw_id) " + std::to_string(closid) + " is not available\n");
  if (!enable) {
    RESCTRLFS_RETURN_IF_ERROR(set_io_alloc(rid, false));
    m_.closids.free(closid);
    return Ok();
  }
  if (!m_.closids.claim(closid)) {
    const Group* owner = ctrl_.ctrl_group_by_closid(closid);
    return fail(ENOSPC, "CLOSID (ctrl_hw_id) " + std::to_string(closid) +
                            " for io_alloc is used by " +
                            (owner != nullptr ? owner->name : std::string("another")) + " group\n");
  }
  // The mask starts as a new group's would, computed for the schema written
  // through and, with CDP, copied to its peer so that CODE and DATA agree.
  std::vector<hw::CtrlUpdate> updates;
  for (int d : s.domain_ids) {
    std::optional<uint32_t> cbm = ctrl_.default_cbm(s, d, closid);
    if (!cbm) {
      m_.closids.free(closid);
      // The kernel prints the first line and puts the second; from a
      // cleared status both always fit, so one printf leaves the same bytes.
      return fail(ENOSPC, "No space on " + s.name + ":" + std::to_string(d) +
                              "\nFailed to initialize io_alloc allocations\n");
    }
    for (hw::ConfType t : io_alloc_types(s)) updates.push_back({rid, t, d, closid, *cbm});
  }
  Result<void> r = m_.arch->update_ctrls(updates);
  if (!r.ok()) {
    m_.closids.free(closid);
    return fail(r.error().code, "Failed to initialize io_alloc allocations\n");
  }
  r = set_io_alloc(rid, true);
  if (!r.ok()) m_.closids.free(closid);
  return r;
}

Result<std::string> IoAlloc::show_io_alloc_cbm(const Node& n) {
  const schemata::Schema& s = m_.schemas.schemas[n.schema];
  if (!io_alloc_capable(s)) return fail(ENODEV, not_supported(s));
  if (!io_alloc_on(s)) return fail(EINVAL, "io_alloc is not enabled on " + s.name + "\n");
  const uint32_t closid = io_alloc_closid(s);
  return schemata::format_io_alloc_cbm(
      s, [&](int d) { return m_.arch->get_ctrl(rid_of(s), hw_type(s.conf_type), d, closid); });
}

Result<void> IoAlloc::write_io_alloc_cbm(Node& n, std::string_view data, const Caller&) {
  const schemata::Schema& s = m_.schemas.schemas[n.schema];
  if (!io_alloc_capable(s)) return fail(ENODEV, not_supported(s));
  if (!io_alloc_on(s)) return fail(EINVAL, "io_alloc is not enabled on " + s.name + "\n");
  // Validated as the mask of a shareable group holding the io_alloc CLOSID.
  Group as_group;
  as_group.closid = io_alloc_closid(s);
  std::unique_ptr<schemata::CbmPolicy> policy = ctrl_.cbm_policy(as_group);
  schemata::ParseResult pr = schemata::parse_io_alloc_cbm(data, m_.schemas, n.schema, *policy);
  if (!pr.status.ok()) return pr.status.error();
  return ctrl_.apply_staged(pr.staged, as_group.closid);
}

std::vector<hw::ConfType> IoAlloc::io_alloc_types(const schemata::Schema& s) const {
  if (s.conf_type == schemata::ConfType::NONE) return {hw::ConfType::NONE};
  return {hw::ConfType::CODE, hw::ConfType::DATA};
}

Result<void> IoAlloc::set_io_alloc(hw::ResourceId rid, bool enable) {
  return m_.arch->set_io_alloc_enabled(rid, enable);
}

void IoAlloc::reset_io_alloc() {
  for (const hw::Resource& r : m_.info.resources) {
    if (r.alloc_capable && r.cache.io_alloc_capable && m_.arch->io_alloc_enabled(r.rid))
      (void)m_.arch->set_io_alloc_enabled(r.rid, false);
  }
}

std::map<std::string, std::map<int, uint32_t>> IoAlloc::io_alloc_state() const {
  std::map<std::string, std::map<int, uint32_t>> out;
  for (const schemata::Schema& s : m_.schemas.schemas) {
    if (!io_alloc_on(s) || out.count(s.resource_name) != 0) continue;
    auto& doms = out[s.resource_name];
    for (int d : s.domain_ids)
      doms[d] = m_.arch->get_ctrl(rid_of(s), hw_type(s.conf_type), d, io_alloc_closid(s));
  }
  return out;
}

Result<void> IoAlloc::restore_io_alloc(const std::string& resource,
                                       const std::map<int, uint32_t>& cbm) {
  const schemata::Schema* s = nullptr;
  for (const schemata::Schema& c : m_.schemas.schemas)
    if (c.resource_name == resource && s == nullptr) s = &c;
  if (s == nullptr || !io_alloc_capable(*s) || io_alloc_on(*s))
    return Error::make(EINVAL, "not io_alloc capable or already enabled");
  const uint32_t closid = io_alloc_closid(*s);
  if (closid >= m_.closids.size() || !m_.closids.claim(closid))
    return Error::make(EINVAL, "CLOSID " + std::to_string(closid) + " unusable");
  std::vector<hw::CtrlUpdate> updates;
  for (auto [d, v] : cbm) {
    for (hw::ConfType t : io_alloc_types(*s)) updates.push_back({rid_of(*s), t, d, closid, v});
  }
  Result<void> r = m_.arch->update_ctrls(updates);
  if (r.ok()) r = m_.arch->set_io_alloc_enabled(rid_of(*s), true);
  if (!r.ok()) m_.closids.free(closid);
  return r;
}

// The rows of info/<cache>: io_alloc and io_alloc_cbm.
FileRows io_alloc_file_rows() {
  static const FileRow kRows[] = {
      {.name = "io_alloc",
       .mode = 0644,
       .flags = kInfoCache,
       .show = show_fn<&IoAlloc::show_io_alloc>,
       .write = write_fn<&IoAlloc::write_io_alloc>,
       .cond = cond_fn<&IoAlloc::cond_io_alloc>,
       .refuse_unlocked = refuse_not_bool},
      {.name = "io_alloc_cbm",
       .mode = 0644,
       .flags = kInfoCache,
       .show = show_fn<&IoAlloc::show_io_alloc_cbm>,
       .write = write_fn<&IoAlloc::write_io_alloc_cbm>,
       .cond = cond_fn<&IoAlloc::cond_io_alloc>,
       .read_status = true,
       .refuse_unlocked = refuse_schemata},
  };
  return kRows;
}

}  // namespace resctrlfs::fs::internal
