// Implements the LWP enumeration decoder (see lwp_cpuid.h).
#include "hw/x86/lwp_cpuid.h"

#include "hw/x86/cpuid_decode.h"
#include "hw/x86/registers.h"

namespace resctrlfs::hw::x86 {

namespace {

constexpr bool bit(uint32_t v, unsigned b) { return ((v >> b) & 1U) != 0; }
constexpr uint32_t field(uint32_t v, unsigned lo, unsigned width) {
  return (v >> lo) & ((1U << width) - 1U);
}

}  // namespace

// The bit of each named feature in the layout of `g` (`caps`: the
// proposal's EDX); -1: the layout has none.
struct BitMap {
  int avail, val, ire, bre, dme, cnh, rnh, cont, ptsc, interrupt, extension;
};
constexpr BitMap kShippedBits = {0, 1, 2, 3, 4, 5, 6, 29, 30, 31, -1};
constexpr BitMap kProposalMaskBits = {0, -1, 1, 2, 3, -1, -1, -1, -1, 31, 30};
constexpr BitMap kProposalCapsBits = {0, -1, 2, 3, 4, -1, -1, -1, -1, 1, -1};

const BitMap& bits_of(lwp::Generation g, bool caps) {
  if (g == lwp::Generation::kShipped) return kShippedBits;
  return caps ? kProposalCapsBits : kProposalMaskBits;
}

LwpFeatureBits LwpFeatureBits::decode(uint32_t v, lwp::Generation g, bool caps_layout) {
  const BitMap& m = bits_of(g, caps_layout);
  auto at = [&](int b) { return b >= 0 && bit(v, static_cast<unsigned>(b)); };
  LwpFeatureBits f;
  f.avail = at(m.avail);
  f.val = at(m.val);
  f.ire = at(m.ire);
  f.bre = at(m.bre);
  f.dme = at(m.dme);
  f.cnh = at(m.cnh);
  f.rnh = at(m.rnh);
  f.cont = at(m.cont);
  f.ptsc = at(m.ptsc);
  f.interrupt = at(m.interrupt);
  f.extension = at(m.extension);
  f.raw = v;
  f.gen = g;
  f.caps_layout = g == lwp::Generation::kProposal && caps_layout;
  return f;
}

namespace {
uint32_t encode_with(const LwpFeatureBits& f, const BitMap& m) {
  auto put = [](bool on, int b) { return on && b >= 0 ? 1U << b : 0U; };
  return put(f.avail, m.avail) | put(f.val, m.val) | put(f.ire, m.ire) | put(f.bre, m.bre) |
         put(f.dme, m.dme) | put(f.cnh, m.cnh) | put(f.rnh, m.rnh) | put(f.cont, m.cont) |
         put(f.ptsc, m.ptsc) | put(f.interrupt, m.interrupt) | put(f.extension, m.extension);
}
}  // namespace

uint32_t LwpFeatureBits::encode() const { return encode_with(*this, bits_of(gen, caps_layout)); }

uint32_t LwpFeatureBits::mask() const { return encode_with(*this, bits_of(gen, false)); }

bool LwpFeatureBits::event(unsigned id) const {
  switch (lwp::event_of(gen, static_cast<uint8_t>(id))) {
    case lwp::Event::kValue:
      return val;
    case lwp::Event::kInstructions:
      return ire;
    case lwp::Event::kBranches:
      return bre;
    case lwp::Event::kDcache:
      return dme;
    default:
      if (gen == lwp::Generation::kShipped && id == lwp::kCoreClocksNotHalted) return cnh;
      if (gen == lwp::Generation::kShipped && id == lwp::kRefClocksNotHalted) return rnh;
      return false;
  }
}

CpuidRegs LwpCaps::encode() const {
  CpuidRegs r;
  r.eax = enabled.encode();
  r.edx = supported.encode();
  if (generation == lwp::Generation::kProposal) {
    r.ebx = (cb_size_bytes & 0xFF) | ((event_size & 0xFF) << 8) | ((max_events & 0xFF) << 16) |
            ((version & 0xFF) << 24);
    r.ecx = (latency_max_bits & 0x1F) | (data_address ? 1U << 5 : 0) |
            (cache_levels ? 1U << 30 : 0) | (cache_latency ? 1U << 31 : 0);
    return r;
  }
  r.ebx = ((cb_size_bytes / 8) & 0xFF) | ((event_size & 0xFF) << 8) | ((max_events & 0xFF) << 16) |
          ((event_offset & 0xFF) << 24);
  r.ecx = (latency_max_bits & 0x1F) | (data_address ? 1U << 5 : 0) |
          ((latency_rnd_bits & 0x7) << 6) | ((version & 0x7F) << 9) |
          (((min_buffer_records / 32) & 0xFF) << 16) | (branch_prediction ? 1U << 28 : 0) |
          (ip_filtering ? 1U << 29 : 0) | (cache_levels ? 1U << 30 : 0) |
          (cache_latency ? 1U << 31 : 0);
  return r;
}

LwpCaps decode_lwp(const CpuidSource& src, unsigned cpu) {
  LwpCaps c;
  const std::string vendor = cpuid_vendor(src, cpu);
  if (vendor != "AuthenticAMD") return c;
  const uint32_t max_ext = src.cpuid(cpu, CPUID_LEAF_EXT_MAX, 0).eax;
  if (max_ext < CPUID_LEAF_AMD_LWP) return c;
  if ((src.cpuid(cpu, CPUID_LEAF_AMD_EXT_FEATURES, 0).ecx & CPUID_80000001_ECX_LWP) == 0) return c;
  const CpuidRegs r = src.cpuid(cpu, CPUID_LEAF_AMD_LWP, 0);
  c.present = true;
  c.raw = r;
  const unsigned top = field(r.ebx, 24, 8);
  if (top >= 1 && top < lwp::kLwpcbHeaderSize) {
    c.generation = lwp::Generation::kProposal;
    c.enabled = LwpFeatureBits::decode(r.eax, c.generation);
    c.supported = LwpFeatureBits::decode(r.edx, c.generation, true);
    c.cb_size_bytes = field(r.ebx, 0, 8);
    c.event_size = field(r.ebx, 8, 8);
    c.max_events = field(r.ebx, 16, 8);
    c.event_offset = lwp::kLwpcbHeaderSize;
    c.version = top;
    c.latency_max_bits = field(r.ecx, 0, 5);
    c.data_address = bit(r.ecx, 5);
    // The proposal has no CPUID bit for it: its branch records say in their
    // own bit 29 whether the prediction bit is valid.
    c.branch_prediction = true;
    c.cache_levels = bit(r.ecx, 30);
    c.cache_latency = bit(r.ecx, 31);
    return c;
  }
  c.enabled = LwpFeatureBits::decode(r.eax);
  c.supported = LwpFeatureBits::decode(r.edx);
  c.cb_size_bytes = field(r.ebx, 0, 8) * 8;
  c.event_size = field(r.ebx, 8, 8);
  c.max_events = field(r.ebx, 16, 8);
  c.event_offset = field(r.ebx, 24, 8);
  c.latency_max_bits = field(r.ecx, 0, 5);
  c.data_address = bit(r.ecx, 5);
  c.latency_rnd_bits = field(r.ecx, 6, 3);
  c.version = field(r.ecx, 9, 7);
  c.min_buffer_records = field(r.ecx, 16, 8) * 32;
  c.branch_prediction = bit(r.ecx, 28);
  c.ip_filtering = bit(r.ecx, 29);
  c.cache_levels = bit(r.ecx, 30);
  c.cache_latency = bit(r.ecx, 31);
  return c;
}

}  // namespace resctrlfs::hw::x86
