// Implements the x86 Arch's device channels (Intel I/O RDT, ours): the
// channel list from the ACPI IRDT table, a channel's tags written to its
// IO_PQR_CLOSn / IO_PQR_RMIDn registers through the MmioDevice (CLOS first,
// then RMID, one batch), and IA32_L3_IO_QOS_CFG (0xC83, IRAE/IRME) written
// on one CPU of every L3 domain (its scope is the die; every L3 of a die
// must hold the same value), restoring the domains already written when
// one fails. After the MsrDevice reconnected (a restarted broker), resync()
// writes the enable bits and every channel's tags again.
#include <algorithm>

#include "hw/x86/arch_x86.h"
#include "hw/x86/registers.h"

namespace resctrlfs::hw::x86 {

namespace {

Error io_write_failed() { return Error::make(EIO, kHwWriteFailed); }

}  // namespace

Result<void> X86Arch::attach_io_rdt(IrdtTable table, std::shared_ptr<MmioDevice> mmio) {
  if (!limits_.io_rdt_alloc && !limits_.io_rdt_mon)
    return Error::make(ENODEV, "the CPU enumerates no I/O RDT");
  if (!mmio) return Error::make(EINVAL, "no device for the I/O RDT registers");
  irdt_ = std::move(table);
  mmio_ = std::move(mmio);
  io_tags_.clear();
  return Ok();
}

IoTagCaps X86Arch::io_tag_caps() const {
  if (!irdt_) return {};
  return IoTagCaps{limits_.io_rdt_alloc, limits_.io_rdt_mon};
}

std::vector<IoChannelInfo> X86Arch::io_channels() const {
  std::vector<IoChannelInfo> out;
  if (!irdt_) return out;
  for (const IoChannel& c : irdt_->channels) {
    IoChannelInfo i;
    i.id = c.id;
    i.link = io_link_name(c.link);
    i.clos_tagging = c.clos_tagging;
    i.rmid_tagging = c.rmid_tagging;
    for (const IoDevice& d : c.devices)
      i.devices.push_back(IoChannelDevice{d.bdf(), d.vc, d.shared});
    out.push_back(std::move(i));
  }
  return out;
}

const IoChannel* X86Arch::io_channel(uint32_t id) const {
  if (!irdt_) return nullptr;
  for (const IoChannel& c : irdt_->channels)
    if (c.id == id) return &c;
  return nullptr;
}

Result<void> X86Arch::set_io_channel_tags(uint32_t id, uint32_t closid, uint32_t rmid) {
  if (!irdt_) return Error::make(ENODEV);
  const IoChannel* c = io_channel(id);
  if (c == nullptr) return Error::make(EINVAL);
  // The hardware ignores values beyond the CPU agents' fields: refuse them
  // here rather than believe a write that did nothing.
  unsigned num_closid = 0;
  for (const Resource& r : info_.resources)
    if (r.alloc_capable) num_closid = std::max(num_closid, r.num_closid);
  if (c->clos_tagging && closid >= std::max(num_closid, 1u)) return Error::make(EINVAL);
  if (c->rmid_tagging && rmid >= std::max(info_.res(ResourceId::L3).mon.num_rmids, 1u))
    return Error::make(EINVAL);
  RESCTRLFS_RETURN_IF_ERROR(resync());
  std::vector<MmioOp> ops;
  if (c->clos_tagging) ops.push_back(MmioOp{c->clos_addr, c->reg_bytes, closid, true});
  if (c->rmid_tagging) ops.push_back(MmioOp{c->rmid_addr, c->reg_bytes, rmid, true});
  mmio_->run(ops);
  for (const MmioOp& op : ops) {
    if (op.err != 0) {
      io_tags_.erase(id);
      return io_write_failed();
    }
  }
  io_tags_[id] = {closid, rmid};
  return Ok();
}

std::vector<unsigned> X86Arch::io_cfg_cpus() const {
  // From the L3 controls, or the monitoring domains when L3 has no
  // allocation (under SNC several of one L3: the same value again).
  std::vector<unsigned> cpus;
  const Resource& l3 = info_.res(ResourceId::L3);
  if (l3.alloc_capable) {
    for (const auto& d : l3.ctrl_domains)
      if (!d.cpus.empty()) cpus.push_back(d.cpus.first());
  } else {
    for (const auto& d : info_.res(ResourceId::L3).mon.mon_domains)
      if (!d.cpus.empty()) cpus.push_back(d.cpus.first());
  }
  return cpus;
}

Result<void> X86Arch::rewrite_io_tags() {
  if (!irdt_ || io_tags_.empty()) return Ok();
  std::vector<MmioOp> ops;
  for (const auto& [id, tags] : io_tags_) {
    const IoChannel* c = io_channel(id);
    if (c == nullptr) continue;
    if (c->clos_tagging) ops.push_back(MmioOp{c->clos_addr, c->reg_bytes, tags.first, true});
    if (c->rmid_tagging) ops.push_back(MmioOp{c->rmid_addr, c->reg_bytes, tags.second, true});
  }
  mmio_->run(ops);
  for (const MmioOp& op : ops)
    if (op.err != 0) return io_write_failed();
  return Ok();
}

Result<std::pair<uint32_t, uint32_t>> X86Arch::io_channel_tags(uint32_t id) const {
  if (!irdt_) return Error::make(ENODEV);
  auto it = io_tags_.find(id);
  if (it == io_tags_.end()) return Error::make(EINVAL);
  return it->second;
}

Result<void> X86Arch::set_io_tagging(bool alloc, bool mon) {
  if (!irdt_) return Error::make(ENODEV);
  if ((alloc && !limits_.io_rdt_alloc) || (mon && !limits_.io_rdt_mon)) return Error::make(EINVAL);
  RESCTRLFS_RETURN_IF_ERROR(resync());
  const uint64_t v = (alloc ? L3_IO_RDT_CFG_IRAE : 0) | (mon ? L3_IO_RDT_CFG_IRME : 0);
  const uint64_t old =
      (io_tagging_.alloc ? L3_IO_RDT_CFG_IRAE : 0) | (io_tagging_.mon ? L3_IO_RDT_CFG_IRME : 0);
  const std::vector<unsigned> cpus = io_cfg_cpus();
  RESCTRLFS_RETURN_IF_ERROR(write_on(cpus, IA32_L3_IO_RDT_CFG, v, old));
  io_tagging_ = IoTagCaps{alloc, mon};
  return Ok();
}

}  // namespace resctrlfs::hw::x86
