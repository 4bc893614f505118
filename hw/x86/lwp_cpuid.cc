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

LwpFeatureBits LwpFeatureBits::decode(uint32_t v) {
  LwpFeatureBits f;
  f.avail = bit(v, 0);
  f.val = bit(v, 1);
  f.ire = bit(v, 2);
  f.bre = bit(v, 3);
  f.dme = bit(v, 4);
  f.cnh = bit(v, 5);
  f.rnh = bit(v, 6);
  f.cont = bit(v, 29);
  f.ptsc = bit(v, 30);
  f.interrupt = bit(v, 31);
  f.raw = v;
  return f;
}

uint32_t LwpFeatureBits::encode() const {
  return (avail ? 1U << 0 : 0) | (val ? 1U << 1 : 0) | (ire ? 1U << 2 : 0) | (bre ? 1U << 3 : 0) |
         (dme ? 1U << 4 : 0) | (cnh ? 1U << 5 : 0) | (rnh ? 1U << 6 : 0) | (cont ? 1U << 29 : 0) |
         (ptsc ? 1U << 30 : 0) | (interrupt ? 1U << 31 : 0);
}

bool LwpFeatureBits::event(unsigned id) const {
  switch (id) {
    case 1:
      return val;
    case 2:
      return ire;
    case 3:
      return bre;
    case 4:
      return dme;
    case 5:
      return cnh;
    case 6:
      return rnh;
    default:
      return false;
  }
}

CpuidRegs LwpCaps::encode() const {
  CpuidRegs r;
  r.eax = enabled.encode();
  r.edx = supported.encode();
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
