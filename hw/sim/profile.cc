// Implements platform profiles: JSON parsing, CPUID synthesis from
// high-level capabilities, the built-in profiles and the host profile.
#include "hw/sim/profile.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <tuple>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "base/json_input.h"
#include "base/suggest.h"
#include "hw/sim/lwp_unit.h"
#include "hw/x86/aet.h"
#include "hw/x86/registers.h"
#include "hw/x86/sysfs_topology.h"

namespace resctrlfs::hw::sim {
namespace {

// The profile's CPUID table as a CPUID source (the same leaves on every
// CPU), for decoding what raw leaves say before the machine exists.
class ProfileCpuid : public CpuidSource {
 public:
  explicit ProfileCpuid(const Profile& p) : p_(p) {}
  CpuidRegs cpuid(unsigned, uint32_t leaf, uint32_t subleaf) const override {
    auto it = p_.cpuid.find({leaf, subleaf});
    return it == p_.cpuid.end() ? CpuidRegs{} : it->second;
  }

 private:
  const Profile& p_;
};

using nlohmann::json;
using namespace resctrlfs::hw::x86;  // NOLINT: register and leaf names

// ---- Built-in profiles (exact parameters are part of the product).

// A two-socket 3rd Gen Xeon Scalable (Ice Lake-SP, family 6 model 0x6A). The
// Intel RDT architecture specification's "Intel RDT Feature Evolution"
// gives that generation 32-bit MBM counters (24-bit before it), second
// generation MBA (per core, not per thread) and 15 CLOS for both MBA and L3
// CAT (the generation before had 16 L3 CAT CLOS and 8 MBA CLOS).
constexpr const char* kIntel2s = R"({
  "vendor": "GenuineIntel", "family": 6, "model": 106, "stepping": 6,
  "cpus": [
    {"cpu": 0, "package": 0, "l2": 0, "l3": 0}, {"cpu": 1, "package": 0, "l2": 1, "l3": 0},
    {"cpu": 2, "package": 0, "l2": 2, "l3": 0}, {"cpu": 3, "package": 0, "l2": 3, "l3": 0},
    {"cpu": 4, "package": 1, "l2": 4, "l3": 1}, {"cpu": 5, "package": 1, "l2": 5, "l3": 1},
    {"cpu": 6, "package": 1, "l2": 6, "l3": 1}, {"cpu": 7, "package": 1, "l2": 7, "l3": 1}],
  "l3_size_bytes": 16777216, "l2_size_bytes": 1048576,
  "l3_cat": {"cbm_len": 11, "num_closid": 15, "shareable_bits": 0, "sparse": false, "cdp": true},
  "mba": {"num_closid": 15, "max_delay": 90, "linear": true, "per_thread": false},
  "l3_mon": {"num_rmids": 224, "scale": 65536, "counter_width": 32,
             "events": ["llc_occupancy", "mbm_total_bytes", "mbm_local_bytes"]},
  "sim": {"mem_bandwidth_mbps": 20000}
})";

constexpr const char* kIntelL2 = R"({
  "vendor": "GenuineIntel", "family": 6, "model": 134, "stepping": 5,
  "cpus": [
    {"cpu": 0, "package": 0, "l2": 0, "l3": 0}, {"cpu": 1, "package": 0, "l2": 0, "l3": 0},
    {"cpu": 2, "package": 0, "l2": 2, "l3": 0}, {"cpu": 3, "package": 0, "l2": 2, "l3": 0}],
  "l3_size_bytes": 8388608, "l2_size_bytes": 1048576,
  "l2_cat": {"cbm_len": 8, "num_closid": 8, "shareable_bits": 0, "sparse": false, "cdp": true},
  "l3_cat": {"cbm_len": 12, "num_closid": 8, "shareable_bits": "0xc00", "sparse": false,
             "cdp": false}
})";

constexpr const char* kIntelCmt = R"({
  "vendor": "GenuineIntel", "family": 6, "model": 86, "stepping": 3,
  "cpus": [
    {"cpu": 0, "package": 0, "l2": 0, "l3": 0}, {"cpu": 1, "package": 0, "l2": 1, "l3": 0},
    {"cpu": 2, "package": 0, "l2": 2, "l3": 0}, {"cpu": 3, "package": 0, "l2": 3, "l3": 0}],
  "l3_size_bytes": 8388608, "l2_size_bytes": 262144,
  "l3_mon": {"num_rmids": 64, "scale": 65536, "counter_width": 24, "events": ["llc_occupancy"]}
})";

constexpr const char* kAmd2s = R"({
  "vendor": "AuthenticAMD", "family": 25, "model": 1, "stepping": 1,
  "cpus": [
    {"cpu": 0, "package": 0, "l2": 0, "l3": 0}, {"cpu": 1, "package": 0, "l2": 1, "l3": 0},
    {"cpu": 2, "package": 0, "l2": 2, "l3": 0}, {"cpu": 3, "package": 0, "l2": 3, "l3": 0},
    {"cpu": 4, "package": 0, "l2": 4, "l3": 1}, {"cpu": 5, "package": 0, "l2": 5, "l3": 1},
    {"cpu": 6, "package": 0, "l2": 6, "l3": 1}, {"cpu": 7, "package": 0, "l2": 7, "l3": 1}],
  "l3_size_bytes": 33554432, "l2_size_bytes": 524288,
  "l3_cat": {"cbm_len": 16, "num_closid": 16, "shareable_bits": 0, "sparse": true, "cdp": true},
  "mb": {"num_closid": 16, "bw_len": 11},
  "smba": {"num_closid": 16, "bw_len": 11},
  "l3_mon": {"num_rmids": 256, "scale": 64, "counter_width": 44,
             "events": ["llc_occupancy", "mbm_total_bytes", "mbm_local_bytes"],
             "bmec_mask": 127, "abmc_counters": 32},
  "sim": {"mem_bandwidth_mbps": 40000, "mbm_hw_counters": 32}
})";

// A Sapphire Rapids-SP pair in SNC2: two NUMA nodes per package share each
// package's L3, so monitoring is per node with 256 / 2 logical RMIDs.
// The specification lists that generation (4th Gen Xeon Scalable) with
// second generation MBA, per core (third generation, per logical
// processor, starts with Granite Rapids), and it has the 32-bit MBM
// counters of the generation before.
constexpr const char* kIntelSnc = R"({
  "vendor": "GenuineIntel", "family": 6, "model": 143, "stepping": 8,
  "cpus": [
    {"cpu": 0, "package": 0, "l2": 0, "l3": 0, "node": 0},
    {"cpu": 1, "package": 0, "l2": 1, "l3": 0, "node": 0},
    {"cpu": 2, "package": 0, "l2": 2, "l3": 0, "node": 1},
    {"cpu": 3, "package": 0, "l2": 3, "l3": 0, "node": 1},
    {"cpu": 4, "package": 1, "l2": 4, "l3": 1, "node": 2},
    {"cpu": 5, "package": 1, "l2": 5, "l3": 1, "node": 2},
    {"cpu": 6, "package": 1, "l2": 6, "l3": 1, "node": 3},
    {"cpu": 7, "package": 1, "l2": 7, "l3": 1, "node": 3}],
  "l3_size_bytes": 31457280, "l2_size_bytes": 2097152,
  "l3_cat": {"cbm_len": 15, "num_closid": 16, "shareable_bits": 0, "sparse": false, "cdp": true},
  "mba": {"num_closid": 16, "max_delay": 90, "linear": true, "per_thread": false},
  "l3_mon": {"num_rmids": 256, "scale": 65536, "counter_width": 32,
             "events": ["llc_occupancy", "mbm_total_bytes", "mbm_local_bytes"]},
  "sim": {"mem_bandwidth_mbps": 40000}
})";

// A Clearwater Forest-class Xeon 6 with Application Energy Telemetry: both
// CWF aggregators (energy and perf, 576 RMIDs each) on each package, and an
// L3 with more RMIDs than telemetry tracks, so groups are limited by
// PERF_PKG. The DMR-only events (inst_retired, pcnt) are absent. Its L3 is
// the part's 576 MiB per package, 2048 counter units of 288 KiB: like every
// real part, the L3 holds more units than there are RMIDs, so the default
// max_threshold_occupancy (L3 / RMIDs, rounded down to a unit) is two units,
// not 0 (which would keep every freed RMID in limbo for ever).
constexpr const char* kIntelAet = R"({
  "vendor": "GenuineIntel", "family": 6, "model": 221, "stepping": 3,
  "cpus": [
    {"cpu": 0, "package": 0, "l2": 0, "l3": 0}, {"cpu": 1, "package": 0, "l2": 0, "l3": 0},
    {"cpu": 2, "package": 0, "l2": 2, "l3": 0}, {"cpu": 3, "package": 0, "l2": 2, "l3": 0},
    {"cpu": 4, "package": 1, "l2": 4, "l3": 1}, {"cpu": 5, "package": 1, "l2": 4, "l3": 1},
    {"cpu": 6, "package": 1, "l2": 6, "l3": 1}, {"cpu": 7, "package": 1, "l2": 6, "l3": 1}],
  "l3_size_bytes": 603979776, "l2_size_bytes": 4194304,
  "l3_cat": {"cbm_len": 12, "num_closid": 16, "shareable_bits": 0, "sparse": false, "cdp": true},
  "mba": {"num_closid": 16, "max_delay": 90, "linear": true, "per_thread": true},
  "l3_mon": {"num_rmids": 1024, "scale": 294912, "counter_width": 24,
             "events": ["llc_occupancy", "mbm_total_bytes", "mbm_local_bytes"]},
  "telemetry": [{"guid": "0x26696143", "package": 0}, {"guid": "0x26557651", "package": 0},
                {"guid": "0x26696143", "package": 1}, {"guid": "0x26557651", "package": 1}],
  "sim": {"mem_bandwidth_mbps": 30000}
})";

// A two-socket Granite Rapids-class Xeon (family 6 model 173) with Intel I/O
// RDT (ours: the I/O devices and their tagging registers). Socket 0's I/O
// block has a PCIe link of 8 channels with 2-byte registers serving a NIC
// root port (VC0 -> channel 0, VC1 -> channel 1) and an NVMe root port
// (VC0 -> channel 2); socket 1's has a CXL.Cache link (one channel, wide
// registers) for an accelerator. The CPU-agent features are intel-2s-like,
// so the default tree is what a kernel shows on such a part (Linux has no
// I/O RDT interface); its MBM counters are 32 bits wide, as from Ice Lake-SP
// on (RDT specification, "Intel RDT Feature Evolution").
constexpr const char* kIntelGnrIo = R"({
  "vendor": "GenuineIntel", "family": 6, "model": 173, "stepping": 1,
  "cpus": [
    {"cpu": 0, "package": 0, "l2": 0, "l3": 0}, {"cpu": 1, "package": 0, "l2": 1, "l3": 0},
    {"cpu": 2, "package": 0, "l2": 2, "l3": 0}, {"cpu": 3, "package": 0, "l2": 3, "l3": 0},
    {"cpu": 4, "package": 1, "l2": 4, "l3": 1}, {"cpu": 5, "package": 1, "l2": 5, "l3": 1},
    {"cpu": 6, "package": 1, "l2": 6, "l3": 1}, {"cpu": 7, "package": 1, "l2": 7, "l3": 1}],
  "l3_size_bytes": 301989888, "l2_size_bytes": 2097152,
  "l3_cat": {"cbm_len": 15, "num_closid": 15, "shareable_bits": 0, "sparse": false, "cdp": true},
  "mba": {"num_closid": 15, "max_delay": 90, "linear": true, "per_thread": true},
  "l3_mon": {"num_rmids": 512, "scale": 131072, "counter_width": 32,
             "events": ["llc_occupancy", "mbm_total_bytes", "mbm_local_bytes"]},
  "io_rdt": {"cat": true, "cmt": true, "mbm": true, "wide_reg_bytes": 8,
    "blocks": [
      {"segment": 0, "package": 0,
       "links": [{"id": 1, "type": "pcie", "channels": 8, "regw": true,
                  "mmio": "0xfed10000", "clos_offset": 0, "rmid_offset": 256}],
       "devices": [{"bdf": "16:00.0", "type": "root-port", "chms": [{"link": 1, "vcs": [0, 1]}]},
                   {"bdf": "30:01.0", "type": "root-port", "chms": [{"link": 1, "vcs": [2]}]}]},
      {"segment": 0, "package": 1,
       "links": [{"id": 2, "type": "cxl.cache", "channels": 1, "regw": false,
                  "mmio": "0xfed20000", "clos_offset": 0, "rmid_offset": 256}],
       "devices": [{"bdf": "80:00.0", "type": "rceip", "chms": [{"link": 2, "vcs": [0]}]}]}]},
  "sim": {"mem_bandwidth_mbps": 40000}
})";

// A 4th Gen Xeon Scalable (Sapphire Rapids, family 6 model 0x8F), one
// package of four cores with two threads each (CPU n and n+4 are siblings,
// as Linux numbers them), with STLB QoS, the model-specific feature the
// Intel RDT architecture specification's Appendix A.3 lists for it. The
// STLB's CLOS count and mask length are not published: 8 CLOS (the
// specification's own NCLOS = 7 example) and 8 ways (the mask field's
// width) are ours.
constexpr const char* kIntelStlb = R"({
  "vendor": "GenuineIntel", "family": 6, "model": 143, "stepping": 8,
  "cpus": [
    {"cpu": 0, "package": 0, "core": 0, "l2": 0, "l3": 0},
    {"cpu": 1, "package": 0, "core": 1, "l2": 1, "l3": 0},
    {"cpu": 2, "package": 0, "core": 2, "l2": 2, "l3": 0},
    {"cpu": 3, "package": 0, "core": 3, "l2": 3, "l3": 0},
    {"cpu": 4, "package": 0, "core": 0, "l2": 0, "l3": 0},
    {"cpu": 5, "package": 0, "core": 1, "l2": 1, "l3": 0},
    {"cpu": 6, "package": 0, "core": 2, "l2": 2, "l3": 0},
    {"cpu": 7, "package": 0, "core": 3, "l2": 3, "l3": 0}],
  "l3_size_bytes": 31457280, "l2_size_bytes": 2097152,
  "l3_cat": {"cbm_len": 15, "num_closid": 16, "shareable_bits": 0, "sparse": false, "cdp": true},
  "l3_mon": {"num_rmids": 256, "scale": 65536, "counter_width": 32,
             "events": ["llc_occupancy", "mbm_total_bytes", "mbm_local_bytes"]},
  "stlb": {"num_closid": 8, "cbm_len": 8, "fill": true, "alias": true},
  "sim": {"mem_bandwidth_mbps": 40000}
})";

// An Intel TCC part of Table B-8 (Intel RDT architecture specification,
// Appendix B): the 11th Gen Core i7-1185GRE (Tiger Lake UP3: family 6,
// model 0x8C, stepping 1), four cores with two threads each and a 12 MiB
// L3. CPUID enumerates no RDT at all; the L3 CAT is found by model and brand
// string (4 CLOS, 12-bit masks, from the table), STLB QoS through
// IA32_CORE_CAPABILITIES (Appendix A.3 lists the 11th Gen UP3 TCC parts; its
// 4 CLOS and 8 ways are ours, not published). Without our mount options a
// kernel would find nothing to offer here, and so does the daemon.
constexpr const char* kIntelTcc = R"({
  "vendor": "GenuineIntel", "family": 6, "model": 140, "stepping": 1,
  "brand": "11th Gen Intel(R) Core(TM) i7-1185GRE @ 2.80GHz",
  "cpus": [
    {"cpu": 0, "package": 0, "core": 0, "l2": 0, "l3": 0},
    {"cpu": 1, "package": 0, "core": 0, "l2": 0, "l3": 0},
    {"cpu": 2, "package": 0, "core": 1, "l2": 1, "l3": 0},
    {"cpu": 3, "package": 0, "core": 1, "l2": 1, "l3": 0},
    {"cpu": 4, "package": 0, "core": 2, "l2": 2, "l3": 0},
    {"cpu": 5, "package": 0, "core": 2, "l2": 2, "l3": 0},
    {"cpu": 6, "package": 0, "core": 3, "l2": 3, "l3": 0},
    {"cpu": 7, "package": 0, "core": 3, "l2": 3, "l3": 0}],
  "l3_size_bytes": 12582912, "l2_size_bytes": 1310720,
  "stlb": {"num_closid": 4, "cbm_len": 8, "fill": false, "alias": true},
  "sim": {"mem_bandwidth_mbps": 25000}
})";

const std::map<std::string, const char*>& builtins() {
  static const std::map<std::string, const char*> m = {
      {"intel-2s", kIntel2s},        {"intel-l2", kIntelL2},
      {"intel-cmt", kIntelCmt},      {"amd-2s", kAmd2s},
      {"intel-snc", kIntelSnc},      {"intel-aet", kIntelAet},
      {"intel-gnr-io", kIntelGnrIo}, {"intel-stlb", kIntelStlb},
      {"intel-tcc", kIntelTcc}};
  return m;
}

// Built-ins defined as another built-in plus a JSON merge patch (RFC 7386),
// so that they follow their base exactly:
//   - amd-io is amd-2s with SDCIAE (io_alloc);
//   - intel-bdx is intel-2s as a Broadwell-EP Xeon (family 6 model 0x4F), the
//     model Linux offers cache pseudo-locking on (and applies the BDF102 MBM
//     correction to), with that generation's RDT: 16 L3 CAT CLOS, 24-bit MBM
//     counters and no MBA (the RDT specification's product table lists MBA
//     from the Xeon Scalable processors on; the E5-2699 v4's CPUID dump
//     under tests/hw/data has CPUID.0x10.0:EBX[3] clear);
//   - intel-cba is intel-gnr-io without the I/O blocks and with Cache
//     Bandwidth Allocation (ours: no part with CBA is public yet, the
//     specification says "future processors"): 15 CLOSIDs like its MBA,
//     levels 0..9 with a linear response, so the CB resource's steps are
//     MB's (10% of the bandwidth each).
struct Derived {
  const char* base;
  const char* patch;
};
const std::map<std::string, Derived>& derived_builtins() {
  static const std::map<std::string, Derived> m = {
      {"amd-io", {kAmd2s, R"({"l3_cat": {"io_alloc": true}})"}},
      {"intel-bdx",
       {kIntel2s, R"({"model": 79, "stepping": 1, "mba": null, "l3_cat": {"num_closid": 16},
                      "l3_mon": {"counter_width": 24}})"}},
      {"intel-cba",
       {kIntelGnrIo,
        R"({"io_rdt": null, "cba": {"num_closid": 15, "max_level": 9, "linear": true}})"}}};
  return m;
}

Error bad(const std::string& what) { return Error::make(EINVAL, "platform profile: " + what); }

// The profile is outside input (a file given with --platform): it is read
// only through JsonIn (base/json_input.h), every value type- and
// range-checked, its JSON path in the message.
template <typename T>
Result<T> checked(Result<T> r) {
  if (!r.ok()) return bad(r.error().message);
  return r;
}

// A JSON integer, or a string holding a C-style (hex or decimal) integer,
// at most `max`.
Result<uint64_t> as_u64(const JsonIn& v, uint64_t max = UINT64_MAX) {
  if (const std::string* s = v.json().get_ptr<const std::string*>()) {
    // strtoull would take leading blanks and a minus sign: digits only.
    if (!s->empty() && std::isdigit(static_cast<unsigned char>((*s)[0])) != 0) {
      char* end = nullptr;
      errno = 0;
      const unsigned long long x = std::strtoull(s->c_str(), &end, 0);
      if (errno == 0 && *end == 0 && x <= max) return static_cast<uint64_t>(x);
    }
    return bad(v.path() + ": must be an integer in 0.." + std::to_string(max) +
               " (a number, or a string such as \"0x1f\")");
  }
  return checked(v.as_int<uint64_t>(0, max));
}

// The member `key` as by as_u64, or `dflt` when absent.
Result<uint64_t> get_u64(const JsonIn& obj, const std::string& key, uint64_t dflt,
                         uint64_t max = UINT64_MAX) {
  RESCTRLFS_ASSIGN_OR_RETURN(std::optional<JsonIn> m, checked(obj.find(key)));
  if (!m) return dflt;
  return as_u64(*m, max);
}

Result<bool> get_bool(const JsonIn& obj, const std::string& key, bool dflt) {
  return checked(obj.bool_or(key, dflt));
}

// Cache sizes beyond this are typing errors (the largest L3s are ~1 GiB).
constexpr uint64_t kMaxCacheBytes = 1ULL << 40;

// A 32-bit number in `base`, digits only (strtoul would take blanks and a
// minus sign); hex may start with 0x.
bool parse_u32(const std::string& t, int base, uint32_t& out) {
  uint64_t v = 0;
  const char* b = t.data();
  if (base == 16 && t.size() > 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X')) b += 2;
  const auto [end, ec] = std::from_chars(b, t.data() + t.size(), v, base);
  if (b == t.data() + t.size() || ec != std::errc() || end != t.data() + t.size() || v > UINT32_MAX)
    return false;
  out = static_cast<uint32_t>(v);
  return true;
}

// Raw CPUID leaves: {"0xLEAF[.SUBLEAF]": [eax, ebx, ecx, edx], ...}.
Result<std::map<CpuidKey, CpuidRegs>> parse_cpuid_leaves(const JsonIn& obj, const char* what) {
  if (!obj.json().is_object()) return bad(std::string("\"") + what + "\" must be an object");
  RESCTRLFS_ASSIGN_OR_RETURN(const auto leaves, checked(obj.members()));
  std::map<CpuidKey, CpuidRegs> out;
  for (const auto& [key, regs] : leaves) {
    auto dot = key.find('.');
    std::string leaf_s = key.substr(0, dot);
    std::string sub_s = dot == std::string::npos ? "0" : key.substr(dot + 1);
    uint32_t lf = 0, sb = 0;
    if (!parse_u32(leaf_s, 16, lf) || !parse_u32(sub_s, 10, sb))
      return bad("bad cpuid key \"" + key + "\"");
    Result<std::vector<JsonIn>> values = regs.elements(4);
    if (!values.ok() || values->size() != 4) return bad("cpuid \"" + key + "\" needs 4 values");
    CpuidRegs r;
    uint32_t* dst[4] = {&r.eax, &r.ebx, &r.ecx, &r.edx};
    for (int i = 0; i < 4; ++i) {
      RESCTRLFS_ASSIGN_OR_RETURN(uint64_t v, as_u64((*values)[i], UINT32_MAX));
      *dst[i] = static_cast<uint32_t>(v);
    }
    out[{lf, sb}] = r;
  }
  return out;
}

void set_leaf(Profile& p, uint32_t leaf, uint32_t sub, CpuidRegs r) { p.cpuid[{leaf, sub}] = r; }
CpuidRegs& leaf(Profile& p, uint32_t l, uint32_t sub) { return p.cpuid[{l, sub}]; }

// Encodes a cache of `size` bytes at `level` in leaf-4 format, or returns
// false if no (ways, line, sets) product represents it.
bool encode_cache(uint64_t size, unsigned level, CpuidRegs& out) {
  if (size == 0) return false;
  const uint64_t line = 64;
  for (uint64_t ways : {16, 12, 11, 20, 8, 4, 2, 1}) {
    if (size % (line * ways) != 0) continue;
    uint64_t sets = size / (line * ways);
    if (sets == 0 || sets > (1ULL << 32)) continue;
    out.eax = 3 /* unified */ | (level << 5) | (1U << 8) /* self-initialising */;
    out.ebx = static_cast<uint32_t>((ways - 1) << 22 | 0 << 12 | (line - 1));
    out.ecx = static_cast<uint32_t>(sets - 1);
    out.edx = 0;
    return true;
  }
  return false;
}

Result<void> synth_cache_cat(Profile& p, const JsonIn& j, uint32_t sub, const std::string& key) {
  RESCTRLFS_RETURN_IF_ERROR(checked(j.object()));
  RESCTRLFS_ASSIGN_OR_RETURN(uint64_t cbm_len, get_u64(j, "cbm_len", 0));
  RESCTRLFS_ASSIGN_OR_RETURN(uint64_t closids, get_u64(j, "num_closid", 0));
  RESCTRLFS_ASSIGN_OR_RETURN(uint64_t share, get_u64(j, "shareable_bits", 0, UINT32_MAX));
  RESCTRLFS_ASSIGN_OR_RETURN(const bool cdp, get_bool(j, "cdp", false));
  RESCTRLFS_ASSIGN_OR_RETURN(const bool sparse, get_bool(j, "sparse", false));
  RESCTRLFS_ASSIGN_OR_RETURN(const bool io_alloc, get_bool(j, "io_alloc", false));
  if (cbm_len < 1 || cbm_len > 32) return bad(key + ".cbm_len must be 1..32");
  if (closids < 1 || closids > 65536) return bad(key + ".num_closid must be 1..65536");
  CpuidRegs r;
  r.eax = static_cast<uint32_t>(cbm_len - 1);
  r.ebx = static_cast<uint32_t>(share);
  r.ecx =
      (cdp ? CPUID_10_CACHE_ECX_CDP : 0) | (sparse && !p.amd() ? CPUID_10_CACHE_ECX_NONCONT : 0);
  r.edx = static_cast<uint32_t>(closids - 1);
  set_leaf(p, CPUID_LEAF_PQE, sub, r);
  leaf(p, CPUID_LEAF_PQE, 0).ebx |= (sub == 1 ? CPUID_10_0_EBX_L3 : CPUID_10_0_EBX_L2);
  if (io_alloc) {
    if (!p.amd() || sub != 1) return bad(key + ".io_alloc (SDCIAE) needs an AMD vendor and L3");
    leaf(p, CPUID_LEAF_AMD_PQE_EXT, 0).ebx |= CPUID_80000020_0_EBX_SDCIAE;
  }
  leaf(p, CPUID_LEAF_EXT_FEATURES, 0).ebx |= CPUID_7_EBX_PQE;
  return Ok();
}

Result<void> synth_amd_bw(Profile& p, const JsonIn& j, uint32_t sub, const std::string& key) {
  if (!p.amd()) return bad(key + " needs an AMD vendor");
  RESCTRLFS_RETURN_IF_ERROR(checked(j.object()));
  RESCTRLFS_ASSIGN_OR_RETURN(uint64_t closids, get_u64(j, "num_closid", 0));
  RESCTRLFS_ASSIGN_OR_RETURN(uint64_t bw_len, get_u64(j, "bw_len", 11));
  if (closids < 1 || bw_len < 1 || bw_len > 30) return bad(key + " needs num_closid and bw_len");
  if (closids > 65536) return bad(key + ".num_closid must be 1..65536");
  set_leaf(p, CPUID_LEAF_AMD_PQE_EXT, sub,
           CpuidRegs{static_cast<uint32_t>(bw_len), 0, 0, static_cast<uint32_t>(closids - 1)});
  leaf(p, CPUID_LEAF_AMD_PQE_EXT, 0).ebx |=
      (sub == 1 ? CPUID_80000020_0_EBX_L3BE : CPUID_80000020_0_EBX_SMBA);
  if (sub == 1) leaf(p, CPUID_LEAF_AMD_EXT_IDS, 0).ebx |= CPUID_80000008_EBX_BE;
  leaf(p, CPUID_LEAF_EXT_FEATURES, 0).ebx |= CPUID_7_EBX_PQE;
  return Ok();
}

Result<void> synth_mon(Profile& p, const JsonIn& j) {
  RESCTRLFS_RETURN_IF_ERROR(checked(j.object()));
  RESCTRLFS_ASSIGN_OR_RETURN(uint64_t rmids, get_u64(j, "num_rmids", 0));
  RESCTRLFS_ASSIGN_OR_RETURN(uint64_t scale, get_u64(j, "scale", 65536, UINT32_MAX));
  RESCTRLFS_ASSIGN_OR_RETURN(uint64_t width, get_u64(j, "counter_width", 24));
  if (rmids < 1 || rmids > 4096) return bad("l3_mon.num_rmids must be 1..4096");
  if (width < 24 || width > 62) return bad("l3_mon.counter_width must be 24..62");
  if (scale < 1) return bad("l3_mon.scale must be positive");
  uint32_t edx = 0;
  RESCTRLFS_ASSIGN_OR_RETURN(const std::vector<JsonIn> events,
                             checked(j.elements_or_none("events", 16)));
  for (const JsonIn& e : events) {
    RESCTRLFS_ASSIGN_OR_RETURN(const std::string name, checked(e.as_string(64)));
    if (name == "llc_occupancy") {
      edx |= CPUID_F_1_EDX_OCCUP;
    } else if (name == "mbm_total_bytes") {
      edx |= CPUID_F_1_EDX_MBM_TOTAL;
    } else if (name == "mbm_local_bytes") {
      edx |= CPUID_F_1_EDX_MBM_LOCAL;
    } else {
      return bad("unknown l3_mon event \"" + name + "\"");
    }
  }
  // AMD parts report a zero width offset and mean 44 bits.
  uint32_t offset = static_cast<uint32_t>(width - MBM_CNTR_WIDTH_BASE);
  if (p.amd() && width == MBM_CNTR_WIDTH_BASE + MBM_CNTR_WIDTH_OFFSET_AMD) offset = 0;
  const auto max_rmid = static_cast<uint32_t>(rmids - 1);
  set_leaf(p, CPUID_LEAF_PQM, 0, CpuidRegs{0, max_rmid, 0, CPUID_F_0_EDX_L3});
  RESCTRLFS_ASSIGN_OR_RETURN(const bool overflow, get_bool(j, "overflow_bit", false));
  if (overflow && (p.amd() || width > 61))
    return bad("l3_mon.overflow_bit needs an Intel vendor and a counter_width up to 61");
  if (overflow) offset |= CPUID_F_1_EAX_OVERFLOW;
  set_leaf(p, CPUID_LEAF_PQM, 1, CpuidRegs{offset, static_cast<uint32_t>(scale), max_rmid, edx});
  leaf(p, CPUID_LEAF_EXT_FEATURES, 0).ebx |= CPUID_7_EBX_PQM;
  RESCTRLFS_ASSIGN_OR_RETURN(uint64_t bmec, get_u64(j, "bmec_mask", 0, UINT32_MAX));
  RESCTRLFS_ASSIGN_OR_RETURN(uint64_t abmc, get_u64(j, "abmc_counters", 0));
  if ((bmec != 0 || abmc != 0) && !p.amd()) return bad("BMEC/ABMC need an AMD vendor");
  if (bmec != 0) {
    leaf(p, CPUID_LEAF_AMD_PQE_EXT, 0).ebx |= CPUID_80000020_0_EBX_BMEC;
    leaf(p, CPUID_LEAF_AMD_PQE_EXT, 3).ecx = static_cast<uint32_t>(bmec & BMEC_MAX_EVT_CONFIG_BITS);
  }
  if (abmc != 0) {
    if (abmc > 32) return bad("l3_mon.abmc_counters must be 1..32");
    leaf(p, CPUID_LEAF_AMD_PQE_EXT, 0).ebx |= CPUID_80000020_0_EBX_ABMC;
    leaf(p, CPUID_LEAF_AMD_PQE_EXT, 5).ebx = static_cast<uint32_t>(abmc - 1);
  }
  return Ok();
}

Result<void> parse_telemetry(Profile& p, const JsonIn& j) {
  if (p.amd() || !j.json().is_array()) return bad("\"telemetry\" is an Intel list of aggregators");
  RESCTRLFS_ASSIGN_OR_RETURN(const std::vector<JsonIn> aggregators, checked(j.elements(4096)));
  for (const JsonIn& a : aggregators) {
    if (!a.json().is_object()) return bad("each telemetry aggregator must be an object");
    RESCTRLFS_ASSIGN_OR_RETURN(uint64_t guid, get_u64(a, "guid", 0, UINT32_MAX));
    const x86::AetEventGroup* layout = x86::aet_event_group(static_cast<uint32_t>(guid));
    if (layout == nullptr) return bad("unknown telemetry guid " + std::to_string(guid));
    TelemetryAggregator t;
    t.guid = static_cast<uint32_t>(guid);
    RESCTRLFS_ASSIGN_OR_RETURN(uint64_t pkg, get_u64(a, "package", 0, 4095));
    RESCTRLFS_ASSIGN_OR_RETURN(uint64_t rmids, get_u64(a, "num_rmids", layout->num_rmids));
    RESCTRLFS_ASSIGN_OR_RETURN(t.size, get_u64(a, "size", layout->mmio_size()));
    if (pkg > 4095 || rmids > layout->num_rmids)
      return bad("telemetry package must be below 4096 and num_rmids at most the layout's");
    t.package = static_cast<int>(pkg);
    t.num_rmids = static_cast<unsigned>(rmids);
    p.telemetry.push_back(t);
  }
  return Ok();
}

// "16:00.0" or "0000:16:00.0" (the segment must then be the block's).
Result<uint16_t> parse_bdf(const std::string& t, uint16_t segment, const std::string& where) {
  unsigned seg = segment, bus = 0, dev = 0, fn = 0;
  char tail = 0;
  const bool full = std::count(t.begin(), t.end(), ':') == 2;
  const int n = full ? std::sscanf(t.c_str(), "%4x:%2x:%2x.%1x%c", &seg, &bus, &dev, &fn, &tail)
                     : std::sscanf(t.c_str(), "%2x:%2x.%1x%c", &bus, &dev, &fn, &tail);
  if (n != (full ? 4 : 3) || dev > 31 || fn > 7 || seg != segment)
    return bad(where + ": \"" + t + "\" is not a [SSSS:]BB:DD.F of the block's segment");
  return static_cast<uint16_t>(bus << 8 | dev << 3 | fn);
}

Result<void> parse_io_rdt(Profile& p, const JsonIn& j) {
  if (p.amd()) return bad("\"io_rdt\" is Intel I/O RDT");
  RESCTRLFS_RETURN_IF_ERROR(checked(j.object()));
  IoRdtProfile io;
  RESCTRLFS_ASSIGN_OR_RETURN(io.cat, get_bool(j, "cat", false));
  RESCTRLFS_ASSIGN_OR_RETURN(io.cmt, get_bool(j, "cmt", false));
  RESCTRLFS_ASSIGN_OR_RETURN(io.mbm, get_bool(j, "mbm", false));
  RESCTRLFS_ASSIGN_OR_RETURN(uint64_t wide, get_u64(j, "wide_reg_bytes", 8, 8));
  if (wide != 4 && wide != 8) return bad("io_rdt.wide_reg_bytes must be 4 or 8");
  io.wide_reg_bytes = static_cast<unsigned>(wide);
  CpuidRegs& l3cat = leaf(p, CPUID_LEAF_PQE, 1);
  CpuidRegs& mon = leaf(p, CPUID_LEAF_PQM, 1);
  if (io.cat && l3cat.eax == 0 && l3cat.edx == 0) return bad("io_rdt.cat needs \"l3_cat\"");
  if ((io.cmt || io.mbm) && mon.edx == 0) return bad("io_rdt.cmt/mbm need \"l3_mon\"");
  if (io.cat) l3cat.ecx |= CPUID_10_CACHE_ECX_IO;
  if (io.cmt) mon.eax |= CPUID_F_1_EAX_IO_CMT;
  if (io.mbm) mon.eax |= CPUID_F_1_EAX_IO_MBM;
  io.irdt.io_flags = static_cast<uint16_t>((io.cat ? x86::IRDT_PROTO_CTL : 0) |
                                           (io.cmt || io.mbm ? x86::IRDT_PROTO_MON : 0));
  RESCTRLFS_ASSIGN_OR_RETURN(const std::vector<JsonIn> blocks,
                             checked(j.elements_or_none("blocks", 64)));
  for (const JsonIn& b : blocks) {
    RESCTRLFS_RETURN_IF_ERROR(checked(b.object()));
    x86::IrdtRmud rmud;
    RESCTRLFS_ASSIGN_OR_RETURN(uint64_t seg, get_u64(b, "segment", 0, 0xffff));
    rmud.segment = static_cast<uint16_t>(seg);
    RESCTRLFS_ASSIGN_OR_RETURN(int pkg, checked(b.int_or<int>("package", 0, 0, 4095)));
    RESCTRLFS_ASSIGN_OR_RETURN(const std::vector<JsonIn> links,
                               checked(b.elements_or_none("links", 255)));
    for (const JsonIn& l : links) {
      RESCTRLFS_RETURN_IF_ERROR(checked(l.object()));
      x86::IrdtRcs r;
      RESCTRLFS_ASSIGN_OR_RETURN(uint64_t id, get_u64(l, "id", 0, 255));
      RESCTRLFS_ASSIGN_OR_RETURN(std::string type, checked(l.string_or("type", "pcie", 16)));
      if (type != "pcie" && type != "cxl.cache")
        return bad(l.path() + ".type must be \"pcie\" or \"cxl.cache\"");
      r.id = static_cast<uint8_t>(id);
      r.link = type == "pcie" ? x86::IoLinkType::kPcie : x86::IoLinkType::kCxlCache;
      RESCTRLFS_ASSIGN_OR_RETURN(uint64_t n, get_u64(l, "channels", 1, 64));
      r.channel_count = static_cast<uint8_t>(n);
      RESCTRLFS_ASSIGN_OR_RETURN(bool regw, get_bool(l, "regw", false));
      RESCTRLFS_ASSIGN_OR_RETURN(bool rts, get_bool(l, "rmid_tagging", true));
      RESCTRLFS_ASSIGN_OR_RETURN(bool cts, get_bool(l, "clos_tagging", true));
      r.flags =
          static_cast<uint16_t>((regw ? x86::IRDT_RCS_REGW : 0) | (rts ? x86::IRDT_RCS_RTS : 0) |
                                (cts ? x86::IRDT_RCS_CTS : 0));
      RESCTRLFS_ASSIGN_OR_RETURN(r.mmio, get_u64(l, "mmio", 0, (1ULL << 52) - 1));
      RESCTRLFS_ASSIGN_OR_RETURN(uint64_t co, get_u64(l, "clos_offset", 0, 0xffff));
      RESCTRLFS_ASSIGN_OR_RETURN(uint64_t ro, get_u64(l, "rmid_offset", 0x100, 0xffff));
      r.clos_block_offset = static_cast<uint16_t>(co);
      r.rmid_block_offset = static_cast<uint16_t>(ro);
      if (r.link == x86::IoLinkType::kCxlCache) io.irdt.cache_flags = io.irdt.io_flags;
      rmud.rcs.push_back(r);
    }
    RESCTRLFS_ASSIGN_OR_RETURN(const std::vector<JsonIn> devices,
                               checked(b.elements_or_none("devices", 4096)));
    for (const JsonIn& d : devices) {
      RESCTRLFS_RETURN_IF_ERROR(checked(d.object()));
      x86::IrdtDss dss;
      RESCTRLFS_ASSIGN_OR_RETURN(std::string bdf, checked(d.string_at("bdf", 32)));
      RESCTRLFS_ASSIGN_OR_RETURN(dss.bdf, parse_bdf(bdf, rmud.segment, d.path() + ".bdf"));
      RESCTRLFS_ASSIGN_OR_RETURN(std::string type, checked(d.string_or("type", "root-port", 16)));
      if (type != "root-port" && type != "rceip")
        return bad(d.path() + ".type must be \"root-port\" or \"rceip\"");
      dss.type = type == "rceip" ? x86::IoDeviceType::kRceip : x86::IoDeviceType::kRootPort;
      RESCTRLFS_ASSIGN_OR_RETURN(const std::vector<JsonIn> chms,
                                 checked(d.elements_or_none("chms", 64)));
      for (const JsonIn& c : chms) {
        RESCTRLFS_RETURN_IF_ERROR(checked(c.object()));
        x86::IrdtChms e;
        RESCTRLFS_ASSIGN_OR_RETURN(uint64_t link, get_u64(c, "link", 0, 255));
        e.rcs_id = static_cast<uint8_t>(link);
        RESCTRLFS_ASSIGN_OR_RETURN(bool shared, get_bool(c, "shared", false));
        RESCTRLFS_ASSIGN_OR_RETURN(const std::vector<JsonIn> vcs,
                                   checked(c.elements_or_none("vcs", 8)));
        for (size_t v = 0; v < vcs.size(); ++v) {
          RESCTRLFS_ASSIGN_OR_RETURN(int ch, checked(vcs[v].as_int<int>(-1, 63)));
          if (ch >= 0)
            e.vc[v] = static_cast<uint8_t>(x86::IRDT_CHMS_VALID |
                                           (shared ? x86::IRDT_CHMS_SHARED : 0) | ch);
        }
        dss.chms.push_back(e);
      }
      rmud.dss.push_back(std::move(dss));
    }
    io.irdt.rmuds.push_back(std::move(rmud));
    io.block_package.push_back(pkg);
  }
  // The firmware table must be one the parser accepts.
  auto t = x86::parse_irdt(x86::build_irdt(io.irdt), x86::IrdtParseOptions{io.wide_reg_bytes});
  if (!t.ok()) return bad("io_rdt: " + t.error().message);
  p.io_rdt = std::move(io);
  return Ok();
}

void synth_base_leaves(Profile& p) {
  CpuidRegs v;
  v.eax = 0x1F;  // highest standard leaf
  const char* s = p.vendor.c_str();
  char buf[12] = {};
  std::memcpy(buf, s, std::min<size_t>(12, p.vendor.size()));
  std::memcpy(&v.ebx, buf, 4);
  std::memcpy(&v.edx, buf + 4, 4);
  std::memcpy(&v.ecx, buf + 8, 4);
  set_leaf(p, CPUID_LEAF_VENDOR, 0, v);
  uint32_t fam = p.family, ext_fam = 0;
  if (fam > 0xF) {
    ext_fam = fam - 0xF;
    fam = 0xF;
  }
  uint32_t sig = (p.stepping & 0xF) | ((p.model & 0xF) << 4) | (fam << 8) |
                 (((p.model >> 4) & 0xF) << 16) | ((ext_fam & 0xFF) << 20);
  set_leaf(p, CPUID_LEAF_FMS, 0, CpuidRegs{sig, 0, 0, 0});
  set_leaf(p, CPUID_LEAF_EXT_MAX, 0,
           CpuidRegs{p.amd() ? CPUID_LEAF_AMD_PQE_EXT : CPUID_LEAF_AMD_EXT_IDS, 0, 0, 0});
  // Deterministic cache parameters: L2 then L3, terminated by a null type.
  const uint32_t cache_leaf = p.amd() ? CPUID_LEAF_AMD_CACHE_TOPO : CPUID_LEAF_CACHE_PARAMS;
  uint32_t sub = 0;
  CpuidRegs c;
  if (encode_cache(p.l2_size_bytes, 2, c)) set_leaf(p, cache_leaf, sub++, c);
  if (encode_cache(p.l3_size_bytes, 3, c)) set_leaf(p, cache_leaf, sub++, c);
  // AMD also reports its L2 size in 0x80000006 (Linux's x86_cache_size).
  if (p.amd() && p.l2_size_bytes >= 1024)
    set_leaf(p, CPUID_LEAF_AMD_L2_L3, 0,
             CpuidRegs{0, 0, static_cast<uint32_t>((p.l2_size_bytes / 1024) << 16) | 0x6140, 0});
  (void)leaf(p, CPUID_LEAF_EXT_FEATURES, 0);
}

// The simulated machine keeps registers per CLOSID and per RMID, so what
// the CPUID leaves enumerate (synthesised or raw) is bounded by what the
// architecture's fields can name on any part: 16-bit CLOS numbers, and as
// many RMIDs. Counted in 64 bits: a raw 0xffffffff must not wrap to 0.
Result<void> check_id_counts(const Profile& p) {
  constexpr uint64_t kMaxIds = 65536;
  const ProfileCpuid src(p);
  const bool amd = p.amd();
  for (uint32_t sub = 1; sub <= 2 && amd; ++sub) {
    const CpuidRegs r = src.cpuid(0, CPUID_LEAF_AMD_PQE_EXT, sub);
    if (r.eax != 0 && uint64_t{r.edx} + 1 > kMaxIds)
      return bad("CPUID 0x80000020 subleaf " + std::to_string(sub) +
                 " enumerates more than 65536 CLOSIDs");
  }
  if (uint64_t{src.cpuid(0, CPUID_LEAF_PQM, 0).ebx} + 1 > kMaxIds ||
      uint64_t{src.cpuid(0, CPUID_LEAF_PQM, 1).ecx} + 1 > kMaxIds)
    return bad("CPUID 0xF enumerates more than 65536 RMIDs");
  return Ok();
}

// "lwp": CPUID 8000_0001h ECX[15] and leaf 8000_001Ch in the layout of the
// generation asked for (hw/x86/lwp_cpuid.h), offering the events listed.
Result<void> synth_lwp(Profile& p, const JsonIn& j) {
  if (!p.amd()) return bad("\"lwp\" (AMD Lightweight Profiling) needs vendor AuthenticAMD");
  RESCTRLFS_RETURN_IF_ERROR(checked(j.object()));
  lwp::Generation g = lwp::Generation::kShipped;
  if (j.has("generation")) {
    RESCTRLFS_ASSIGN_OR_RETURN(std::string gen, checked(j.string_at("generation", 16)));
    if (gen == "proposal") {
      g = lwp::Generation::kProposal;
    } else if (gen != "shipped") {
      return bad("lwp.generation must be \"shipped\" or \"proposal\"");
    }
  }
  x86::LwpCaps c = sim_lwp_caps(g);
  RESCTRLFS_ASSIGN_OR_RETURN(const bool intr, get_bool(j, "interrupt", true));
  c.supported.interrupt = c.enabled.interrupt = intr;
  RESCTRLFS_ASSIGN_OR_RETURN(const std::optional<JsonIn> events, checked(j.find("events")));
  if (events) {
    RESCTRLFS_ASSIGN_OR_RETURN(const auto items, checked(events->elements(16)));
    bool val = false, ire = false, bre = false, dme = false;
    for (const JsonIn& e : items) {
      RESCTRLFS_ASSIGN_OR_RETURN(std::string name, checked(e.as_string(32)));
      if (name == "value" && g == lwp::Generation::kShipped) {
        val = true;
      } else if (name == "instructions") {
        ire = true;
      } else if (name == "branches") {
        bre = true;
      } else if (name == "dcache") {
        dme = true;
      } else {
        return bad(e.path() + ": unknown LWP event \"" + name + "\" (instructions, branches, " +
                   "dcache" + (g == lwp::Generation::kShipped ? ", value" : "") + ")");
      }
    }
    for (x86::LwpFeatureBits* f : {&c.supported, &c.enabled}) {
      f->val = val;
      f->ire = ire;
      f->bre = bre;
      f->dme = dme;
    }
  }
  c.supported.raw = c.supported.encode();
  c.enabled.raw = c.enabled.encode();
  leaf(p, CPUID_LEAF_AMD_EXT_FEATURES, 0).ecx |= CPUID_80000001_ECX_LWP;
  if (leaf(p, CPUID_LEAF_EXT_MAX, 0).eax < CPUID_LEAF_AMD_LWP)
    leaf(p, CPUID_LEAF_EXT_MAX, 0).eax = CPUID_LEAF_AMD_LWP;
  set_leaf(p, CPUID_LEAF_AMD_LWP, 0, c.encode());
  return Ok();
}

Result<Profile> parse_checked(const JsonIn& j, const std::string& name) {
  if (!j.json().is_object()) return bad("top level must be an object");
  Profile p;
  p.name = name;
  if (!j.has("vendor")) return bad("\"vendor\" is required");
  RESCTRLFS_ASSIGN_OR_RETURN(p.vendor, checked(j.string_at("vendor")));
  if (p.vendor.size() != 12) return bad("\"vendor\" must be a 12-character CPUID vendor");
  // The widths of the CPUID signature's fields (extended family: 8 bits).
  RESCTRLFS_ASSIGN_OR_RETURN(uint64_t fam, get_u64(j, "family", p.amd() ? 0x19 : 6, 0xF + 0xFF));
  RESCTRLFS_ASSIGN_OR_RETURN(uint64_t model, get_u64(j, "model", 0, 0xFF));
  RESCTRLFS_ASSIGN_OR_RETURN(uint64_t stepping, get_u64(j, "stepping", 0, 0xF));
  p.family = static_cast<unsigned>(fam);
  p.model = static_cast<unsigned>(model);
  p.stepping = static_cast<unsigned>(stepping);
  if (j.has("rdt")) {
    Result<std::string> rdt = j.string_at("rdt", 4096);
    if (!rdt.ok()) return bad("\"rdt\" must be a string such as \"l3cat,!mba\"");
    p.rdt = x86::RdtOptions::parse(*rdt);
  }
  RESCTRLFS_ASSIGN_OR_RETURN(p.l2_size_bytes, get_u64(j, "l2_size_bytes", 0, kMaxCacheBytes));
  RESCTRLFS_ASSIGN_OR_RETURN(p.l3_size_bytes, get_u64(j, "l3_size_bytes", 0, kMaxCacheBytes));

  if (!j.has("cpus") || !j.json()["cpus"].is_array() || j.json()["cpus"].empty())
    return bad("\"cpus\" is required");
  RESCTRLFS_ASSIGN_OR_RETURN(const std::vector<JsonIn> cpus, checked(j.elements_or_none("cpus")));
  int max_cpu = -1;
  std::vector<CpuPlacement> list;
  // Cache and node ids: any small number (Linux's ids fit 16 bits).
  constexpr int kMaxId = 65535;
  for (const JsonIn& c : cpus) {
    if (!c.json().is_object()) return bad("each cpu must be an object");
    CpuPlacement pl;
    RESCTRLFS_ASSIGN_OR_RETURN(uint64_t cpu, get_u64(c, "cpu", 0));
    if (cpu >= 4096) return bad("cpu numbers must be below 4096");
    pl.cpu = static_cast<int>(cpu);
    RESCTRLFS_ASSIGN_OR_RETURN(pl.package, checked(c.int_or<int>("package", 0, 0, 4095)));
    RESCTRLFS_ASSIGN_OR_RETURN(pl.l2, checked(c.int_or<int>("l2", pl.cpu, 0, kMaxId)));
    RESCTRLFS_ASSIGN_OR_RETURN(pl.l3, checked(c.int_or<int>("l3", pl.package, 0, kMaxId)));
    RESCTRLFS_ASSIGN_OR_RETURN(pl.node, checked(c.int_or<int>("node", pl.package, 0, kMaxId)));
    RESCTRLFS_ASSIGN_OR_RETURN(pl.core, checked(c.int_or<int>("core", pl.l2, 0, kMaxId)));
    max_cpu = std::max(max_cpu, pl.cpu);
    list.push_back(pl);
  }
  p.nr_cpus = static_cast<unsigned>(max_cpu + 1);
  RESCTRLFS_ASSIGN_OR_RETURN(uint64_t nr, get_u64(j, "nr_cpus", p.nr_cpus, 4096));
  if (nr < p.nr_cpus || nr > 4096) return bad("\"nr_cpus\" must cover every cpu");
  p.nr_cpus = static_cast<unsigned>(nr);
  p.cpus.assign(p.nr_cpus, CpuPlacement{-1, -1, -1, -1, -1, -1});
  for (const auto& pl : list) {
    if (p.cpus[pl.cpu].cpu >= 0) return bad("cpu " + std::to_string(pl.cpu) + " listed twice");
    p.cpus[pl.cpu] = pl;
  }

  synth_base_leaves(p);
  RESCTRLFS_ASSIGN_OR_RETURN(const std::optional<JsonIn> l3_cat, checked(j.find("l3_cat")));
  if (l3_cat) RESCTRLFS_RETURN_IF_ERROR(synth_cache_cat(p, *l3_cat, 1, "l3_cat"));
  RESCTRLFS_ASSIGN_OR_RETURN(const std::optional<JsonIn> l2_cat, checked(j.find("l2_cat")));
  if (l2_cat) RESCTRLFS_RETURN_IF_ERROR(synth_cache_cat(p, *l2_cat, 2, "l2_cat"));
  RESCTRLFS_ASSIGN_OR_RETURN(const std::optional<JsonIn> mba, checked(j.find("mba")));
  if (mba) {
    if (p.amd()) return bad("\"mba\" is Intel MBA; use \"mb\" on AMD");
    RESCTRLFS_RETURN_IF_ERROR(checked(mba->object()));
    RESCTRLFS_ASSIGN_OR_RETURN(uint64_t closids, get_u64(*mba, "num_closid", 0, 65536));
    RESCTRLFS_ASSIGN_OR_RETURN(uint64_t max_delay, get_u64(*mba, "max_delay", 90));
    if (closids < 1 || max_delay < 1 || max_delay > 4096) return bad("mba needs num_closid");
    RESCTRLFS_ASSIGN_OR_RETURN(const bool linear, get_bool(*mba, "linear", true));
    RESCTRLFS_ASSIGN_OR_RETURN(const bool per_thread, get_bool(*mba, "per_thread", false));
    CpuidRegs r;
    r.eax = static_cast<uint32_t>(max_delay - 1);
    r.ecx = (linear ? CPUID_10_3_ECX_LINEAR : 0) | (per_thread ? CPUID_10_3_ECX_PER_THREAD : 0);
    r.edx = static_cast<uint32_t>(closids - 1);
    set_leaf(p, CPUID_LEAF_PQE, 3, r);
    leaf(p, CPUID_LEAF_PQE, 0).ebx |= CPUID_10_0_EBX_MBA;
    leaf(p, CPUID_LEAF_EXT_FEATURES, 0).ebx |= CPUID_7_EBX_PQE;
  }
  RESCTRLFS_ASSIGN_OR_RETURN(const std::optional<JsonIn> cba, checked(j.find("cba")));
  if (cba) {
    // Ours: Intel Cache Bandwidth Allocation, CPUID.0x10.0:EBX[5] and
    // subleaf 5 (see hw/x86/registers.h for the layout and its sources).
    if (p.amd()) return bad("\"cba\" is Intel Cache Bandwidth Allocation");
    RESCTRLFS_RETURN_IF_ERROR(checked(cba->object()));
    RESCTRLFS_ASSIGN_OR_RETURN(uint64_t closids, get_u64(*cba, "num_closid", 0, 64));
    RESCTRLFS_ASSIGN_OR_RETURN(uint64_t max_level, get_u64(*cba, "max_level", 9, 255));
    RESCTRLFS_ASSIGN_OR_RETURN(uint64_t scope, get_u64(*cba, "scope", 0, 15));
    if (closids < 1 || max_level < 1) return bad("cba needs num_closid (1..64) and max_level >= 1");
    RESCTRLFS_ASSIGN_OR_RETURN(const bool linear, get_bool(*cba, "linear", true));
    CpuidRegs r;
    r.eax = static_cast<uint32_t>(max_level | (scope << CPUID_10_5_EAX_SCOPE_SHIFT));
    r.ecx = linear ? CPUID_10_5_ECX_LINEAR : 0;
    r.edx = static_cast<uint32_t>(closids - 1);
    set_leaf(p, CPUID_LEAF_PQE, 5, r);
    leaf(p, CPUID_LEAF_PQE, 0).ebx |= CPUID_10_0_EBX_CBA;
    leaf(p, CPUID_LEAF_EXT_FEATURES, 0).ebx |= CPUID_7_EBX_PQE;
  }
  RESCTRLFS_ASSIGN_OR_RETURN(const std::optional<JsonIn> mb, checked(j.find("mb")));
  if (mb) RESCTRLFS_RETURN_IF_ERROR(synth_amd_bw(p, *mb, 1, "mb"));
  RESCTRLFS_ASSIGN_OR_RETURN(const std::optional<JsonIn> smba, checked(j.find("smba")));
  if (smba) RESCTRLFS_RETURN_IF_ERROR(synth_amd_bw(p, *smba, 2, "smba"));
  RESCTRLFS_ASSIGN_OR_RETURN(const std::optional<JsonIn> l3_mon, checked(j.find("l3_mon")));
  if (l3_mon) RESCTRLFS_RETURN_IF_ERROR(synth_mon(p, *l3_mon));
  RESCTRLFS_ASSIGN_OR_RETURN(const std::optional<JsonIn> telemetry, checked(j.find("telemetry")));
  if (telemetry) RESCTRLFS_RETURN_IF_ERROR(parse_telemetry(p, *telemetry));
  RESCTRLFS_ASSIGN_OR_RETURN(const std::optional<JsonIn> io_rdt, checked(j.find("io_rdt")));
  if (io_rdt) RESCTRLFS_RETURN_IF_ERROR(parse_io_rdt(p, *io_rdt));

  RESCTRLFS_ASSIGN_OR_RETURN(const std::optional<JsonIn> lwp_j, checked(j.find("lwp")));
  if (lwp_j) RESCTRLFS_RETURN_IF_ERROR(synth_lwp(p, *lwp_j));

  RESCTRLFS_ASSIGN_OR_RETURN(const std::optional<JsonIn> stlb, checked(j.find("stlb")));
  if (stlb) {
    if (p.amd()) return bad("\"stlb\" (STLB QoS) is Intel's");
    RESCTRLFS_RETURN_IF_ERROR(checked(stlb->object()));
    StlbProfile st;
    RESCTRLFS_ASSIGN_OR_RETURN(uint64_t closids, get_u64(*stlb, "num_closid", 8));
    RESCTRLFS_ASSIGN_OR_RETURN(uint64_t cbm_len, get_u64(*stlb, "cbm_len", 8));
    // NCLOS is a 6-bit field; the mask register's WAY_MASK is 8 bits.
    if (closids < 1 || closids > 64) return bad("stlb.num_closid must be 1..64");
    if (cbm_len < 1 || cbm_len > 8) return bad("stlb.cbm_len must be 1..8");
    st.num_closid = static_cast<unsigned>(closids);
    st.cbm_len = static_cast<unsigned>(cbm_len);
    RESCTRLFS_ASSIGN_OR_RETURN(st.fill, get_bool(*stlb, "fill", false));
    RESCTRLFS_ASSIGN_OR_RETURN(st.alias, get_bool(*stlb, "alias", true));
    p.stlb = st;
    leaf(p, CPUID_LEAF_EXT_FEATURES, 0).edx |= CPUID_7_EDX_CORE_CAPABILITIES;
  }
  if (j.has("brand")) {
    Result<std::string> brand = j.string_at("brand", 48);
    if (!brand.ok() || brand->size() > 47 || brand->find('\0') != std::string::npos)
      return bad("\"brand\" must be a string of at most 47 characters");
    char buf[48] = {};
    std::memcpy(buf, brand->data(), brand->size());
    for (uint32_t k = 0; k < 3; ++k) {
      CpuidRegs r;
      std::memcpy(&r.eax, buf + 16 * k, 4);
      std::memcpy(&r.ebx, buf + 16 * k + 4, 4);
      std::memcpy(&r.ecx, buf + 16 * k + 8, 4);
      std::memcpy(&r.edx, buf + 16 * k + 12, 4);
      set_leaf(p, CPUID_LEAF_BRAND_FIRST + k, 0, r);
    }
    if (leaf(p, CPUID_LEAF_EXT_MAX, 0).eax < CPUID_LEAF_BRAND_LAST)
      leaf(p, CPUID_LEAF_EXT_MAX, 0).eax = CPUID_LEAF_BRAND_LAST;
  }

  RESCTRLFS_ASSIGN_OR_RETURN(const std::optional<JsonIn> cpuid, checked(j.find("cpuid")));
  if (cpuid) {
    RESCTRLFS_ASSIGN_OR_RETURN(auto leaves, parse_cpuid_leaves(*cpuid, "cpuid"));
    for (const auto& [key, r] : leaves) set_leaf(p, key.first, key.second, r);
    // Raw leaves may carry their own vendor and signature.
    p.vendor = x86::cpuid_vendor(ProfileCpuid(p), 0);
  }
  RESCTRLFS_ASSIGN_OR_RETURN(const std::optional<JsonIn> per_cpu, checked(j.find("cpuid_per_cpu")));
  if (per_cpu) {
    if (!per_cpu->json().is_object()) return bad("\"cpuid_per_cpu\" must be an object");
    RESCTRLFS_ASSIGN_OR_RETURN(const auto cpus, checked(per_cpu->members()));
    for (const auto& [cpu_s, leaves_j] : cpus) {
      uint32_t cpu = 0;
      if (!parse_u32(cpu_s, 10, cpu) || cpu >= p.cpus.size())
        return bad("\"cpuid_per_cpu\": \"" + cpu_s + "\" is not a CPU of the profile");
      const std::string what = "cpuid_per_cpu \"" + cpu_s + "\"";
      RESCTRLFS_ASSIGN_OR_RETURN(auto leaves, parse_cpuid_leaves(leaves_j, what.c_str()));
      p.cpuid_per_cpu[cpu] = std::move(leaves);
    }
  }

  RESCTRLFS_ASSIGN_OR_RETURN(const std::optional<JsonIn> sim, checked(j.find("sim")));
  if (sim) {
    RESCTRLFS_RETURN_IF_ERROR(checked(sim->object()));
    // Bounds that keep the model's arithmetic finite: a day, 1 PB/s.
    constexpr double kMaxMs = 86400e3, kMaxMbps = 1e9;
    RESCTRLFS_ASSIGN_OR_RETURN(
        p.sim.mem_bandwidth_mbps,
        checked(sim->number_or("mem_bandwidth_mbps", p.sim.mem_bandwidth_mbps, 0, kMaxMbps)));
    RESCTRLFS_ASSIGN_OR_RETURN(
        p.sim.mbm_hw_counters,
        checked(sim->int_or<unsigned>("mbm_hw_counters", p.sim.mbm_hw_counters, 0, 4096)));
    RESCTRLFS_ASSIGN_OR_RETURN(
        p.sim.occupancy_fill_ms,
        checked(sim->number_or("occupancy_fill_ms", p.sim.occupancy_fill_ms, 0, kMaxMs)));
    RESCTRLFS_ASSIGN_OR_RETURN(
        p.sim.occupancy_decay_ms,
        checked(sim->number_or("occupancy_decay_ms", p.sim.occupancy_decay_ms, 0, kMaxMs)));
    if (p.sim.occupancy_fill_ms <= 0 || p.sim.occupancy_decay_ms <= 0)
      return bad("\"sim\" time constants must be positive");
  }
  RESCTRLFS_RETURN_IF_ERROR(check_id_counts(p));
  return p;
}

Result<Profile> profile_from_json(const json& doc, const std::string& name) {
  try {
    return parse_checked(JsonIn(doc), name);
  } catch (const std::exception& e) {  // the last guard of the rule above
    return bad(e.what());
  }
}

std::string read_file(const std::string& path) {
  std::ifstream f(path);
  if (!f) return {};
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace

x86::Topology Profile::topology() const {
  x86::Topology t;
  t.nr_cpus = nr_cpus;
  t.online = CpuMask(nr_cpus);
  t.package.assign(nr_cpus, -1);
  t.l2_id.assign(nr_cpus, -1);
  t.l3_id.assign(nr_cpus, -1);
  t.node.assign(nr_cpus, -1);
  t.core.assign(nr_cpus, -1);
  // A machine-wide core id: the (package, core) pairs numbered in CPU order.
  std::map<std::pair<int, int>, int> core_ids;
  for (unsigned c = 0; c < nr_cpus && c < cpus.size(); ++c) {
    if (cpus[c].cpu < 0) continue;
    t.online.set(c);
    t.core[c] =
        core_ids.try_emplace({cpus[c].package, cpus[c].core}, static_cast<int>(core_ids.size()))
            .first->second;
    t.package[c] = cpus[c].package;
    t.l2_id[c] = cpus[c].l2;
    t.l3_id[c] = cpus[c].l3;
    t.node[c] = cpus[c].node;
  }
  t.l2_size_bytes = l2_size_bytes;
  t.l3_size_bytes = l3_size_bytes;
  return t;
}

std::vector<std::string> builtin_profile_names() {
  return {"intel-2s",   "intel-bdx", "intel-l2",  "intel-cmt",    "amd-2s",
          "amd-io",     "intel-snc", "intel-aet", "intel-gnr-io", "intel-cba",
          "intel-stlb", "intel-tcc", "host"};
}

Result<Profile> parse_profile(const std::string& json_text, const std::string& name) {
  Result<json> j = parse_json(json_text);
  if (!j.ok()) return bad("not valid JSON: " + j.error().message);
  return profile_from_json(*j, name);
}

Result<void> fit_profile_to_topology(Profile& p, const x86::Topology& host) {
  std::vector<CpuPlacement> mine;
  for (const auto& c : p.cpus)
    if (c.cpu >= 0) mine.push_back(c);
  std::vector<unsigned> theirs;
  for (unsigned c = 0; c < host.nr_cpus; ++c)
    if (host.online.test(c)) theirs.push_back(c);
  if (mine.empty() || theirs.empty())
    return Error::make(ENODEV, "platform " + p.name + ": no CPUs to fit");
  auto domain = [](const CpuPlacement& c) { return std::tuple(c.package, c.l3, c.node); };
  std::map<std::tuple<int, int, int>, bool> covered;
  for (const auto& c : mine) covered[domain(c)] = false;
  const size_t m = mine.size(), n = theirs.size();
  if (n < covered.size())
    return Error::make(ENODEV, "platform " + p.name + " has " + std::to_string(covered.size()) +
                                   " domains (packages, L3 caches, NUMA nodes) but this host "
                                   "has " +
                                   std::to_string(n) + " CPUs: it needs at least " +
                                   std::to_string(covered.size()) + ", one per domain");
  std::vector<CpuPlacement> fitted(host.nr_cpus, CpuPlacement{-1, -1, -1, -1, -1, -1});
  // A host CPU answers CPUID as the profile CPU whose place it takes.
  std::map<unsigned, std::map<CpuidKey, CpuidRegs>> per_cpu;
  for (size_t i = 0; i < n; ++i) {
    CpuPlacement c = mine[i * m / n];
    covered[domain(c)] = true;
    if (auto o = p.cpuid_per_cpu.find(static_cast<unsigned>(c.cpu)); o != p.cpuid_per_cpu.end())
      per_cpu[theirs[i]] = o->second;
    c.cpu = static_cast<int>(theirs[i]);
    fitted[theirs[i]] = c;
  }
  for (const auto& [d, hit] : covered)
    if (!hit)
      return Error::make(ENODEV, "platform " + p.name + ": spreading this host's " +
                                     std::to_string(n) + " CPUs leaves package " +
                                     std::to_string(std::get<0>(d)) + " L3 " +
                                     std::to_string(std::get<1>(d)) + " without a CPU");
  p.cpus = std::move(fitted);
  p.cpuid_per_cpu = std::move(per_cpu);
  p.nr_cpus = host.nr_cpus;
  return Ok();
}

uint64_t cache_size_bytes(const Profile& p, unsigned level) {
  const uint64_t size = x86::cpuid_cache_size(ProfileCpuid(p), 0, p.amd(), level);
  if (size != 0) return size;
  return level == 2 ? p.l2_size_bytes : level == 3 ? p.l3_size_bytes : 0;
}

Result<Profile> load_profile(const std::string& name_or_path) {
  const std::string suffix = kFitToHostSuffix;
  if (name_or_path.size() > suffix.size() &&
      name_or_path.compare(name_or_path.size() - suffix.size(), suffix.size(), suffix) == 0) {
    const std::string base = name_or_path.substr(0, name_or_path.size() - suffix.size());
    if (base == "host" || (!builtins().count(base) && !derived_builtins().count(base)))
      return Error::make(ENOENT, "unknown platform \"" + name_or_path + "\": only a built-in " +
                                     "profile other than host can be fitted to this host (" + base +
                                     suffix + ")");
    RESCTRLFS_ASSIGN_OR_RETURN(Profile p, load_profile(base));
    RESCTRLFS_ASSIGN_OR_RETURN(x86::Topology host,
                               x86::read_sysfs_topology("/sys/devices/system/cpu"));
    p.name = name_or_path;
    RESCTRLFS_RETURN_IF_ERROR(fit_profile_to_topology(p, host));
    return p;
  }
  if (name_or_path == "host") return host_profile();
  if (auto it = builtins().find(name_or_path); it != builtins().end())
    return parse_profile(it->second, name_or_path);
  if (auto it = derived_builtins().find(name_or_path); it != derived_builtins().end()) {
    json j = parse_json(it->second.base).value_or(json());
    j.merge_patch(parse_json(it->second.patch).value_or(json()));
    return profile_from_json(j, name_or_path);
  }
  std::string text = read_file(name_or_path);
  if (text.empty()) {
    const std::vector<std::string> names = builtin_profile_names();
    return Error::make(ENOENT, "unknown platform \"" + name_or_path + "\"" +
                                   did_you_mean(name_or_path, names) +
                                   ": not a built-in profile nor a readable JSON file; the "
                                   "built-ins are " +
                                   join_names(names) + " (NAME@host fits one to this host)");
  }
  return parse_profile(text, name_or_path);
}

std::string host_cpuid_vendor() {
  uint32_t regs[4] = {0, 0, 0, 0};
  bool got = false;
  int fd = ::open("/dev/cpu/0/cpuid", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    got = ::pread(fd, regs, sizeof(regs), 0) == static_cast<ssize_t>(sizeof(regs));
    ::close(fd);
  }
#if defined(__x86_64__) || defined(__i386__)
  if (!got) {
    unsigned a, b, c, d;
    __cpuid(0, a, b, c, d);
    regs[0] = a;
    regs[1] = b;
    regs[2] = c;
    regs[3] = d;
    got = true;
  }
#endif
  if (!got) return "GenuineIntel";
  char buf[13];
  std::memcpy(buf, &regs[1], 4);
  std::memcpy(buf + 4, &regs[3], 4);
  std::memcpy(buf + 8, &regs[2], 4);
  buf[12] = 0;
  return buf;
}

Result<Profile> host_profile(const std::string& sysfs_cpu_dir) {
  RESCTRLFS_ASSIGN_OR_RETURN(x86::Topology topo, x86::read_sysfs_topology(sysfs_cpu_dir));
  const bool amd = host_cpuid_vendor() == "AuthenticAMD";
  json j = parse_json(amd ? kAmd2s : kIntel2s).value_or(json());
  json cpus = json::array();
  for (unsigned c = 0; c < topo.nr_cpus; ++c) {
    if (!topo.online.test(c)) continue;
    json cpu = {
        {"cpu", c}, {"package", topo.package[c]}, {"l2", topo.l2_id[c]}, {"l3", topo.l3_id[c]}};
    if (topo.node[c] >= 0) cpu["node"] = topo.node[c];
    cpus.push_back(cpu);
  }
  j["cpus"] = cpus;
  j["nr_cpus"] = topo.nr_cpus;
  if (topo.l3_size_bytes != 0) j["l3_size_bytes"] = topo.l3_size_bytes;
  if (topo.l2_size_bytes != 0) j["l2_size_bytes"] = topo.l2_size_bytes;
  // On Intel the default max_threshold_occupancy is the L3 size / RMIDs,
  // rounded down to the counter unit: a small host L3 (a laptop, a VM) with
  // intel-2s's 224 RMIDs of 64 KiB units would make it 0, and no freed RMID
  // would ever leave limbo. A real part with a smaller L3 has a smaller unit
  // (the i7-6900K: 20 MiB, 64 RMIDs, 32 KiB): take a unit of L3 / 640 then.
  if (!amd && topo.l3_size_bytes != 0) {
    const uint64_t rmids = j["l3_mon"]["num_rmids"].get<uint64_t>();
    const uint64_t scale = j["l3_mon"]["scale"].get<uint64_t>();
    if (topo.l3_size_bytes / rmids < scale)
      j["l3_mon"]["scale"] = std::max<uint64_t>(64, topo.l3_size_bytes / 640 / 64 * 64);
  }
  return profile_from_json(j, "host");
}

}  // namespace resctrlfs::hw::sim
