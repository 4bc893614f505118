// Implements the IRDT parser and builder (see irdt.h).
#include "hw/x86/irdt.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

namespace resctrlfs::hw::x86 {

namespace {

// Little-endian reads from a span whose bounds the caller has checked.
uint16_t le16(std::span<const uint8_t> b, size_t off) {
  return static_cast<uint16_t>(b[off] | (b[off + 1] << 8));
}
uint32_t le32(std::span<const uint8_t> b, size_t off) {
  return uint32_t{le16(b, off)} | (uint32_t{le16(b, off + 2)} << 16);
}
uint64_t le64(std::span<const uint8_t> b, size_t off) {
  return uint64_t{le32(b, off)} | (uint64_t{le32(b, off + 4)} << 32);
}

void put(std::vector<uint8_t>& out, uint64_t v, unsigned bytes) {
  // Fields wider than 8 bytes (reserved ones) get zeros past v's bytes.
  for (unsigned i = 0; i < bytes; ++i)
    out.push_back(i < 8 ? static_cast<uint8_t>(v >> (8 * i)) : uint8_t{0});
}

Error bad(size_t off, const std::string& what) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "IRDT: offset %zu: ", off);
  return Error::make(EINVAL, buf + what);
}

std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "%#llx", static_cast<unsigned long long>(v));
  return buf;
}

Result<IrdtRcs> parse_rcs(std::span<const uint8_t> e, size_t off) {
  if (e.size() != IRDT_RCS_SIZE)
    return bad(
        off, "RCS length " + std::to_string(e.size()) + " is not " + std::to_string(IRDT_RCS_SIZE));
  IrdtRcs r;
  const uint16_t link = le16(e, 4);
  if (link > 1)
    return bad(off + 4, "RCS link interface type " + std::to_string(link) + " is reserved");
  r.link = static_cast<IoLinkType>(link);
  r.id = e[6];
  r.channel_count = e[7];
  r.flags = le16(e, 8);
  r.rmid_block_offset = le16(e, 10);
  r.clos_block_offset = le16(e, 12);
  r.mmio = le64(e, 32);
  if (r.channel_count == 0) return bad(off + 7, "RCS " + std::to_string(r.id) + " has no channels");
  if (r.channel_count > IRDT_CHMS_CHANNEL + 1)
    return bad(off + 7, "RCS " + std::to_string(r.id) + " has " + std::to_string(r.channel_count) +
                            " channels, more than 64");
  // A CXL link has only CLOS0 and RMID0 (specification chapter 6).
  if (r.link == IoLinkType::kCxlCache && r.channel_count != 1)
    return bad(off + 7, "CXL.Cache RCS " + std::to_string(r.id) + " has " +
                            std::to_string(r.channel_count) + " channels, not 1");
  if (r.mmio == 0) return bad(off + 32, "RCS " + std::to_string(r.id) + " has no MMIO location");
  return r;
}

Result<IrdtDss> parse_dss(std::span<const uint8_t> e, size_t off) {
  if (e.size() < IRDT_DSS_SIZE || (e.size() - IRDT_DSS_SIZE) % IRDT_CHMS_SIZE != 0)
    return bad(off, "DSS length " + std::to_string(e.size()) + " is not 8 + 16 x n");
  IrdtDss d;
  const uint8_t type = e[4];
  if (type != 1 && type != 2)
    return bad(off + 4, "DSS device type " + std::to_string(type) + " is reserved");
  d.type = static_cast<IoDeviceType>(type);
  d.bdf = le16(e, 5);
  for (size_t p = IRDT_DSS_SIZE; p < e.size(); p += IRDT_CHMS_SIZE) {
    IrdtChms c;
    c.rcs_id = e[p];
    for (size_t v = 0; v < 8; ++v) c.vc[v] = e[p + 1 + v];
    d.chms.push_back(c);
  }
  return d;
}

}  // namespace

std::string IoDevice::bdf() const {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%04x:%02x:%02x.%x", segment, bus, device, function);
  return buf;
}

const char* io_link_name(IoLinkType t) { return t == IoLinkType::kCxlCache ? "cxl.cache" : "pcie"; }

Result<IrdtTable> parse_irdt(std::span<const uint8_t> b, const IrdtParseOptions& opt) {
  if (opt.wide_reg_bytes != 4 && opt.wide_reg_bytes != 8)
    return Error::make(EINVAL, "IRDT: register width " + std::to_string(opt.wide_reg_bytes) +
                                   " is neither 4 nor 8");
  if (b.size() < IRDT_HEADER_SIZE)
    return bad(0, "table of " + std::to_string(b.size()) + " bytes is shorter than its header");
  if (!std::equal(b.begin(), b.begin() + 4, "IRDT")) return bad(0, "signature is not IRDT");
  const uint32_t length = le32(b, 4);
  if (length != b.size())
    return bad(4, "length " + std::to_string(length) + " is not the table's " +
                      std::to_string(b.size()) + " bytes");
  uint8_t sum = 0;
  for (uint8_t c : b) sum = static_cast<uint8_t>(sum + c);
  if (sum != 0) return bad(9, "checksum does not sum to 0 (off by " + std::to_string(sum) + ")");
  IrdtTable t;
  t.wide_reg_bytes = opt.wide_reg_bytes;
  t.desc.revision = b[8];
  if (t.desc.revision != IRDT_REVISION)
    return bad(8, "revision " + std::to_string(t.desc.revision) + " is not supported (only 1)");
  t.desc.oem_id.assign(b.begin() + 10, b.begin() + 16);
  t.desc.io_flags = le16(b, 36);
  t.desc.cache_flags = le16(b, 38);

  size_t off = IRDT_HEADER_SIZE;
  while (off < b.size()) {
    if (b.size() - off < IRDT_RMUD_SIZE)
      return bad(off, "RMUD truncated: " + std::to_string(b.size() - off) + " bytes left");
    if (b[off] != 0) return bad(off, "type " + std::to_string(b[off]) + " is not an RMUD (0)");
    const uint32_t rlen = le32(b, off + 4);
    if (rlen < IRDT_RMUD_SIZE || rlen > b.size() - off)
      return bad(off + 4, "RMUD length " + std::to_string(rlen) + " does not fit the table");
    const unsigned rmud_index = static_cast<unsigned>(t.desc.rmuds.size());
    if (rmud_index > 0xffff) return bad(off, "more than 65536 RMUDs");
    IrdtRmud rmud;
    rmud.segment = le16(b, off + 8);
    const size_t end = off + rlen;
    size_t p = off + IRDT_RMUD_SIZE;
    std::vector<size_t> dss_offsets;
    while (p < end) {
      if (end - p < 4) return bad(p, "entry header truncated inside its RMUD");
      const uint16_t type = le16(b, p);
      const uint16_t elen = le16(b, p + 2);
      if (elen < 4 || elen > end - p)
        return bad(p + 2, "entry length " + std::to_string(elen) + " does not fit its RMUD");
      auto e = b.subspan(p, elen);
      if (type == 0) {
        RESCTRLFS_ASSIGN_OR_RETURN(IrdtDss d, parse_dss(e, p));
        rmud.dss.push_back(std::move(d));
        dss_offsets.push_back(p);
      } else if (type == 1) {
        RESCTRLFS_ASSIGN_OR_RETURN(IrdtRcs r, parse_rcs(e, p));
        for (const IrdtRcs& o : rmud.rcs)
          if (o.id == r.id)
            return bad(p + 6, "RCS enumeration id " + std::to_string(r.id) + " is not unique");
        rmud.rcs.push_back(r);
      } else {
        return bad(p, "entry type " + std::to_string(type) + " is neither DSS (0) nor RCS (1)");
      }
      p += elen;
    }
    // Register blocks: inside the address space, CLOS and RMID apart.
    for (const IrdtRcs& r : rmud.rcs) {
      const unsigned w = (r.flags & IRDT_RCS_REGW) ? 2 : opt.wide_reg_bytes;
      const uint64_t span = uint64_t{r.channel_count} * w;
      const std::string name = "RCS " + std::to_string(r.id) + " at " + hex(r.mmio);
      for (uint16_t bo : {r.clos_block_offset, r.rmid_block_offset})
        if (r.mmio > UINT64_MAX - bo - span)
          return bad(off, name + ": register block beyond the address space");
      const uint64_t c = r.clos_block_offset, m = r.rmid_block_offset;
      if (c < m + span && m < c + span) return bad(off, name + ": CLOS and RMID blocks overlap");
    }
    // CHMS entries name RCSes of this RMUD and channels they have.
    for (size_t i = 0; i < rmud.dss.size(); ++i) {
      const IrdtDss& d = rmud.dss[i];
      for (size_t k = 0; k < d.chms.size(); ++k) {
        const IrdtChms& c = d.chms[k];
        const size_t at = dss_offsets[i] + IRDT_DSS_SIZE + k * IRDT_CHMS_SIZE;
        auto rit = std::find_if(rmud.rcs.begin(), rmud.rcs.end(),
                                [&](const IrdtRcs& r) { return r.id == c.rcs_id; });
        if (rit == rmud.rcs.end())
          return bad(at, "CHMS names RCS " + std::to_string(c.rcs_id) + ", not in its RMUD");
        // Only the first Channel Count bytes are meaningful (a CXL link uses
        // VC0 only); later ones are ignored.
        const size_t meaningful = std::min<size_t>(8, rit->channel_count);
        for (size_t v = 0; v < meaningful; ++v) {
          if (!(c.vc[v] & IRDT_CHMS_VALID)) continue;
          const unsigned ch = c.vc[v] & IRDT_CHMS_CHANNEL;
          if (ch >= rit->channel_count)
            return bad(at + 1 + v, "VC" + std::to_string(v) + " maps to channel " +
                                       std::to_string(ch) + " of RCS " + std::to_string(c.rcs_id) +
                                       ", which has " + std::to_string(rit->channel_count));
        }
      }
    }
    t.desc.rmuds.push_back(std::move(rmud));
    off = end;
  }

  // The channel list.
  std::map<uint32_t, IoChannel> channels;
  std::set<uint64_t> pages;
  for (unsigned ri = 0; ri < t.desc.rmuds.size(); ++ri) {
    const IrdtRmud& rmud = t.desc.rmuds[ri];
    for (const IrdtRcs& r : rmud.rcs) {
      const unsigned w = (r.flags & IRDT_RCS_REGW) ? 2 : opt.wide_reg_bytes;
      for (uint64_t base : {r.mmio + r.clos_block_offset, r.mmio + r.rmid_block_offset}) {
        const uint64_t last = base + uint64_t{r.channel_count} * w - 1;
        // A block that wraps around the end of the address space is no
        // block (and stepping by pages up to it would wrap for ever).
        if (r.mmio + r.clos_block_offset < r.mmio || r.mmio + r.rmid_block_offset < r.mmio ||
            last < base)
          return Error::make(EINVAL, "IRDT: RCS " + std::to_string(r.id) +
                                         "'s register block wraps around the end of the "
                                         "address space");
        // By page number: last / page size + 1 cannot overflow.
        for (uint64_t n = base / IRDT_PAGE_SIZE; n <= last / IRDT_PAGE_SIZE; ++n)
          pages.insert(n * IRDT_PAGE_SIZE);
      }
    }
    for (const IrdtDss& d : rmud.dss) {
      for (const IrdtChms& c : d.chms) {
        const IrdtRcs& r = *std::find_if(rmud.rcs.begin(), rmud.rcs.end(),
                                         [&](const IrdtRcs& x) { return x.id == c.rcs_id; });
        const unsigned w = (r.flags & IRDT_RCS_REGW) ? 2 : opt.wide_reg_bytes;
        const size_t meaningful = std::min<size_t>(8, r.channel_count);
        for (size_t v = 0; v < meaningful; ++v) {
          if (!(c.vc[v] & IRDT_CHMS_VALID)) continue;
          const unsigned idx = c.vc[v] & IRDT_CHMS_CHANNEL;
          const uint32_t id = (ri << 16) | (uint32_t{r.id} << 8) | idx;
          auto [it, fresh] = channels.try_emplace(id);
          IoChannel& ch = it->second;
          if (fresh) {
            ch.id = id;
            ch.rmud = ri;
            ch.rcs_id = r.id;
            ch.index = idx;
            ch.link = r.link;
            ch.reg_bytes = w;
            ch.rmid_tagging = r.flags & IRDT_RCS_RTS;
            ch.clos_tagging = r.flags & IRDT_RCS_CTS;
            ch.clos_addr = r.mmio + r.clos_block_offset + uint64_t{idx} * w;
            ch.rmid_addr = r.mmio + r.rmid_block_offset + uint64_t{idx} * w;
          }
          IoDevice dev;
          dev.segment = rmud.segment;
          dev.bus = static_cast<uint8_t>(d.bdf >> 8);
          dev.device = (d.bdf >> 3) & 0x1f;
          dev.function = d.bdf & 7;
          dev.vc = static_cast<uint8_t>(v);
          dev.type = d.type;
          dev.shared = c.vc[v] & IRDT_CHMS_SHARED;
          ch.devices.push_back(dev);
        }
      }
    }
  }
  for (auto& [id, ch] : channels) t.channels.push_back(std::move(ch));
  t.register_pages.assign(pages.begin(), pages.end());
  return t;
}

std::vector<IrdtRegisterBlock> IrdtTable::register_blocks() const {
  std::vector<IrdtRegisterBlock> out;
  for (const IrdtRmud& rmud : desc.rmuds) {
    for (const IrdtRcs& r : rmud.rcs) {
      const unsigned w = (r.flags & IRDT_RCS_REGW) ? 2 : wide_reg_bytes;
      out.push_back(IrdtRegisterBlock{r.mmio + r.clos_block_offset, r.channel_count, w});
      out.push_back(IrdtRegisterBlock{r.mmio + r.rmid_block_offset, r.channel_count, w});
    }
  }
  return out;
}

std::vector<uint8_t> build_irdt(const IrdtDesc& desc) {
  std::vector<uint8_t> out;
  out.insert(out.end(), {'I', 'R', 'D', 'T'});
  put(out, 0, 4);  // length, below
  out.push_back(desc.revision);
  out.push_back(0);  // checksum, below
  std::string oem = desc.oem_id;
  oem.resize(6, ' ');
  out.insert(out.end(), oem.begin(), oem.end());
  for (char c : std::string("RCTLIRDT")) out.push_back(static_cast<uint8_t>(c));
  put(out, 1, 4);                                                             // OEM revision
  for (char c : std::string("RCFS")) out.push_back(static_cast<uint8_t>(c));  // creator id
  put(out, 1, 4);                                                             // creator revision
  put(out, desc.io_flags, 2);
  put(out, desc.cache_flags, 2);
  put(out, 0, 8);
  for (const IrdtRmud& rmud : desc.rmuds) {
    const size_t start = out.size();
    put(out, 0, 4);  // type 0, reserved
    put(out, 0, 4);  // length, below
    put(out, rmud.segment, 2);
    put(out, 0, 3);
    for (const IrdtRcs& r : rmud.rcs) {
      put(out, 1, 2);
      put(out, IRDT_RCS_SIZE, 2);
      put(out, static_cast<uint8_t>(r.link), 2);
      out.push_back(r.id);
      out.push_back(r.channel_count);
      put(out, r.flags, 2);
      put(out, r.rmid_block_offset, 2);
      put(out, r.clos_block_offset, 2);
      put(out, 0, 18);
      put(out, r.mmio, 8);
    }
    for (const IrdtDss& d : rmud.dss) {
      put(out, 0, 2);
      put(out, IRDT_DSS_SIZE + IRDT_CHMS_SIZE * d.chms.size(), 2);
      out.push_back(static_cast<uint8_t>(d.type));
      put(out, d.bdf, 2);
      out.push_back(0);
      for (const IrdtChms& c : d.chms) {
        out.push_back(c.rcs_id);
        out.insert(out.end(), c.vc.begin(), c.vc.end());
        put(out, 0, 7);
      }
    }
    const uint32_t rlen = static_cast<uint32_t>(out.size() - start);
    for (unsigned i = 0; i < 4; ++i) out[start + 4 + i] = static_cast<uint8_t>(rlen >> (8 * i));
  }
  const uint32_t len = static_cast<uint32_t>(out.size());
  for (unsigned i = 0; i < 4; ++i) out[4 + i] = static_cast<uint8_t>(len >> (8 * i));
  uint8_t sum = 0;
  for (uint8_t c : out) sum = static_cast<uint8_t>(sum + c);
  out[9] = static_cast<uint8_t>(-sum);
  return out;
}

}  // namespace resctrlfs::hw::x86
