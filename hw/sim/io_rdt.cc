// Implements the simulated machine's Intel I/O RDT (see machine.h): the
// IRDT table built from the profile, the MMIO tagging registers, and the
// device workloads' entities in the workload model.
#include <algorithm>
#include <cstdint>

#include "hw/sim/machine.h"
#include "hw/x86/registers.h"

namespace resctrlfs::hw::sim {

using namespace resctrlfs::hw::x86;  // NOLINT: register names

void SimMachine::init_io_rdt() {
  if (!profile_.io_rdt) return;
  const IoRdtProfile& io = *profile_.io_rdt;
  irdt_blob_ = build_irdt(io.irdt);
  // The profile parser checked that this table parses.
  auto t = parse_irdt(irdt_blob_, IrdtParseOptions{io.wide_reg_bytes});
  if (!t.ok()) {
    irdt_blob_.clear();
    return;
  }
  for (const IrdtRmud& rmud : io.irdt.rmuds) {
    for (const IrdtRcs& r : rmud.rcs) {
      const unsigned w = (r.flags & IRDT_RCS_REGW) ? 2 : io.wide_reg_bytes;
      for (unsigned ch = 0; ch < r.channel_count; ++ch) {
        io_regs_[r.mmio + r.clos_block_offset + uint64_t{ch} * w] =
            IoReg{false, (r.flags & IRDT_RCS_CTS) != 0, w, 0};
        io_regs_[r.mmio + r.rmid_block_offset + uint64_t{ch} * w] =
            IoReg{true, (r.flags & IRDT_RCS_RTS) != 0, w, 0};
      }
    }
  }
  io_pages_ = t->register_pages;
  for (const IoChannel& ch : t->channels) {
    IoChan c;
    c.ch = ch;
    const int pkg = ch.rmud < io.block_package.size() ? io.block_package[ch.rmud] : 0;
    // The first L3 domain with a CPU of the block's package.
    for (size_t i = 0; i < l3_.size() && c.l3 < 0; ++i)
      for (unsigned cpu : l3_[i].cpus)
        if (profile_.cpus[cpu].package == pkg) {
          c.l3 = static_cast<int>(i);
          break;
        }
    io_chans_.push_back(std::move(c));
  }
}

Result<uint64_t> SimMachine::mmio_read(uint64_t addr, unsigned width) {
  std::lock_guard lock(mu_);
  if (!std::binary_search(io_pages_.begin(), io_pages_.end(), addr & ~(IRDT_PAGE_SIZE - 1)))
    return Error::log_only(EIO, "no MMIO register page there");
  auto it = io_regs_.find(addr);
  if (it == io_regs_.end() || it->second.bytes != width) return uint64_t{0};  // reserved
  return it->second.value;
}

Result<void> SimMachine::mmio_write(uint64_t addr, unsigned width, uint64_t value) {
  std::lock_guard lock(mu_);
  if (!std::binary_search(io_pages_.begin(), io_pages_.end(), addr & ~(IRDT_PAGE_SIZE - 1)))
    return Error::log_only(EIO, "no MMIO register page there");
  auto it = io_regs_.find(addr);
  if (it == io_regs_.end() || it->second.bytes != width) return Ok();  // reserved: ignored
  // A link without this kind of tagging has no such field: the write is
  // to a reserved field, ignored (chapter 6), and the register reads 0.
  if (!it->second.tagging) return Ok();
  // Valid values are those of the CPU agents' CLOS / RMID fields; others
  // are ignored.
  const uint64_t limit = it->second.rmid ? phys_rmids_ : num_closid_any_;
  if (value >= limit) return Ok();
  settle_locked(now_us_locked());
  it->second.value = value;
  tracking_dirty_ = true;
  return Ok();
}

int SimMachine::io_node_index(const IoChan& c, int node) const {
  if (c.l3 < 0) return -1;
  for (unsigned cpu : l3_[static_cast<size_t>(c.l3)].cpus)
    if (cpus_[cpu].node == node) return cpus_[cpu].snc;
  return -1;
}

void SimMachine::io_entities_of(size_t dom, std::vector<Entity>& out) const {
  for (const auto& entry : chan_work_) {
    const uint32_t id = entry.first;
    const Workload& w = entry.second;
    auto c = std::find_if(io_chans_.begin(), io_chans_.end(),
                          [&](const IoChan& x) { return x.ch.id == id; });
    if (c == io_chans_.end() || c->l3 != static_cast<int>(dom)) continue;
    const L3Dom& d = l3_[dom];
    if (!any_online(d.cpus)) continue;
    uint32_t closid = 0;
    // Not counted: beyond every physical RMID (physical_rmid() drops it).
    uint32_t rmid = UINT32_MAX;
    if ((d.io_rdt_cfg & L3_IO_RDT_CFG_IRAE) && c->ch.clos_tagging) {
      auto r = io_regs_.find(c->ch.clos_addr);
      if (r != io_regs_.end()) closid = static_cast<uint32_t>(r->second.value);
    }
    if ((d.io_rdt_cfg & L3_IO_RDT_CFG_IRME) && c->ch.rmid_tagging) {
      auto r = io_regs_.find(c->ch.rmid_addr);
      if (r != io_regs_.end()) rmid = static_cast<uint32_t>(r->second.value);
    }
    // Under SNC the traffic belongs to the node its DMA targets (the
    // specification's advice, B.1.2.7, is to tag with an RMID of that node;
    // in the sharing mode Linux selects, any RMID counts there).
    const int snc = w.node >= 0 ? std::max(0, io_node_index(*c, w.node)) : 0;
    out.push_back(Entity{closid, rmid, static_cast<double>(w.cache_footprint_bytes),
                         w.bandwidth_mbps, w.local_fraction, snc, -1});
    out.back().write_fraction = w.write_fraction;
  }
}

}  // namespace resctrlfs::hw::sim
