// Implements the info/ files of allocation (the InfoFiles part):
// last_cmd_status and the per-schema control info (bit_usage included): the
// kernel's Documentation/filesystems/resctrl.rst, "Info directory". The
// monitoring info files (info/L3_MON, info/PERF_PKG_MON) are the Monitor
// part's (monitor_info.cc).
#include <cerrno>
#include <cstdio>

#include "fs/parts.h"

namespace resctrlfs::fs::internal {

using schemata::GroupMode;

namespace {

std::string u(uint64_t v) { return std::to_string(v) + "\n"; }

std::string hex(uint32_t v) {
  char b[16];
  std::snprintf(b, sizeof(b), "%x\n", v);
  return b;
}

}  // namespace

bool InfoFiles::cond_throttle_mode() const {
  // The kernel shows the file (in every bandwidth resource's info
  // directory) when MB's throttle mode is defined (Intel's max or
  // per-thread; AMD's is undefined). CB (ours) is throttled per logical
  // processor wherever it exists, so a mount with CB has the file too, also
  // on a machine whose MB is absent (rdt=!mba) or undefined.
  for (const hw::Resource& r : m_.info.resources) {
    if (r.rid == hw::ResourceId::CB && !in_mount(r, m_.opts)) continue;
    if (r.alloc_capable && !r.is_bitmap() && r.membw.throttle_mode != hw::ThrottleMode::UNDEFINED)
      return true;
  }
  return false;
}

Result<std::string> InfoFiles::show_last_cmd_status(const Node&) { return m_.lcs.show(); }

Result<std::string> InfoFiles::show_num_closids(const Node& n) {
  return u(m_.schemas.schemas[n.schema].num_closid);
}

Result<std::string> InfoFiles::show_cbm_mask(const Node& n) {
  return hex(m_.schemas.schemas[n.schema].full_mask());
}

Result<std::string> InfoFiles::show_min_cbm_bits(const Node& n) {
  return u(m_.schemas.schemas[n.schema].min_cbm_bits);
}

Result<std::string> InfoFiles::show_shareable_bits(const Node& n) {
  return hex(m_.schemas.schemas[n.schema].shareable_bits);
}

Result<std::string> InfoFiles::show_sparse_masks(const Node& n) {
  return u(m_.schemas.schemas[n.schema].sparse_masks ? 1 : 0);
}

Result<std::string> InfoFiles::show_bit_usage(const Node& n) {
  const schemata::Schema& s = m_.schemas.schemas[n.schema];
  const hw::ResourceId rid = rid_of(s);
  // The io_alloc CLOSID is not a group: its mask counts as hardware-shared.
  const bool io_on = p_.io_alloc.io_alloc_on(s);
  const uint32_t io_closid = p_.io_alloc.io_alloc_closid(s);
  std::string out;
  bool sep = false;
  for (int d : s.domain_ids) {
    if (sep) out += ';';
    sep = true;
    uint32_t sw_shareable = 0, exclusive = 0;
    uint32_t hw_shareable = s.shareable_bits;
    if (io_on) hw_shareable |= m_.arch->get_ctrl(rid, hw_type(s.conf_type), d, io_closid);
    for (uint32_t i = 0; i < m_.closids.size(); ++i) {
      if (!m_.closids.allocated(i) || (io_on && i == io_closid)) continue;
      const Group* g = p_.ctrl.ctrl_group_by_closid(i);
      GroupMode mode = g != nullptr ? g->mode : GroupMode::SHAREABLE;
      uint32_t val = m_.arch->get_ctrl(rid, hw_type(s.conf_type), d, i);
      if (mode == GroupMode::SHAREABLE) sw_shareable |= val;
      if (mode == GroupMode::EXCLUSIVE) exclusive |= val;
    }
    const uint32_t locked = p_.plock.locked_cbm(s.resource_index, d);
    out += std::to_string(d) + "=";
    for (int b = static_cast<int>(s.cbm_len) - 1; b >= 0; --b) {
      bool hwb = (hw_shareable >> b) & 1U;
      bool swb = (sw_shareable >> b) & 1U;
      bool excl = (exclusive >> b) & 1U;
      bool psl = (locked >> b) & 1U;
      out += hwb && swb ? 'X' : hwb ? 'H' : swb ? 'S' : excl ? 'E' : psl ? 'P' : '0';
    }
  }
  out += '\n';
  return out;
}

Result<std::string> InfoFiles::show_min_bandwidth(const Node& n) {
  return u(m_.schemas.schemas[n.schema].min_bw);
}

Result<std::string> InfoFiles::show_bandwidth_gran(const Node& n) {
  return u(m_.schemas.schemas[n.schema].bw_gran);
}

Result<std::string> InfoFiles::show_delay_linear(const Node& n) {
  return u(m_.schemas.schemas[n.schema].delay_linear ? 1 : 0);
}

Result<std::string> InfoFiles::show_thread_throttle_mode(const Node& n) {
  const schemata::Schema& s = m_.schemas.schemas[n.schema];
  const hw::Resource& r = m_.info.res(rid_of(s));
  switch (r.membw.throttle_mode) {
    case hw::ThrottleMode::MAX:
      return std::string("max\n");
    case hw::ThrottleMode::PER_THREAD:
      return std::string("per-thread\n");
    default:
      return std::string("undefined\n");
  }
}

}  // namespace resctrlfs::fs::internal
