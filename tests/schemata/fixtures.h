// Defines the capability sets the schemata tests, fuzzer and round-trip
// properties run against: plain ResourceDesc lists as fs/ would build them
// from hw/'s PlatformInfo, one per kind of machine.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "schemata/schemata.h"

namespace resctrlfs::schemata::testing {

// The model platform of the edge cases and the worked transcript: Intel-like,
// L3 cbm_len 11, CDP-capable, 16 CLOSIDs, 16 MiB per domain; MBA linear,
// min 10, gran 10, 8 CLOSIDs; control domains 0 and 1.
inline ResourceDesc intel_l3(bool cdp = false) {
  ResourceDesc r;
  r.name = "L3";
  r.resource_index = 0;
  r.kind = Kind::CACHE;
  r.cdp_capable = true;
  r.cdp_enabled = cdp;
  r.num_closid = 16;
  r.cbm_len = 11;
  r.shareable_bits = 0;
  r.min_cbm_bits = 1;
  r.sparse_masks = false;
  r.cache_size_bytes = 16u << 20;
  r.domain_ids = {0, 1};
  return r;
}

inline ResourceDesc intel_mb(bool mba_sc = false) {
  ResourceDesc r;
  r.name = "MB";
  r.resource_index = 2;
  r.kind = Kind::BANDWIDTH;
  r.num_closid = 8;
  r.min_bw = 10;
  r.bw_gran = 10;
  r.max_bw = 100;
  r.delay_linear = true;
  r.arch_needs_linear = true;
  r.mba_sc = mba_sc;
  r.domain_ids = {0, 1};
  return r;
}

inline ResourceDesc intel_l2(bool cdp = false) {
  ResourceDesc r;
  r.name = "L2";
  r.resource_index = 1;
  r.kind = Kind::CACHE;
  r.cdp_capable = true;
  r.cdp_enabled = cdp;
  r.num_closid = 8;
  r.cbm_len = 8;
  r.min_cbm_bits = 1;
  r.cache_size_bytes = 1u << 20;
  r.domain_ids = {0, 1, 2, 3};
  return r;
}

// AMD-like: sparse masks, min_cbm_bits 0, 16-bit masks, MB and SMBA in
// 1/8 GB/s units 0..2048, sparse (non-contiguous) domain ids.
inline ResourceDesc amd_l3() {
  ResourceDesc r;
  r.name = "L3";
  r.resource_index = 0;
  r.kind = Kind::CACHE;
  r.cdp_capable = true;
  r.num_closid = 16;
  r.cbm_len = 16;
  r.min_cbm_bits = 0;
  r.sparse_masks = true;
  r.cache_size_bytes = 32u << 20;
  r.domain_ids = {0, 2, 5, 7};
  return r;
}

inline ResourceDesc amd_bw(const std::string& name, int index) {
  ResourceDesc r;
  r.name = name;
  r.resource_index = index;
  r.kind = Kind::BANDWIDTH;
  r.num_closid = 16;
  r.min_bw = 0;
  r.bw_gran = 1;
  r.max_bw = 2048;
  r.delay_linear = false;
  r.arch_needs_linear = false;
  r.domain_ids = {0, 2, 5, 7};
  return r;
}

// A named capability set and its schema list.
struct CapSet {
  std::string name;
  std::vector<ResourceDesc> resources;
  SchemaList list() const {
    unsigned width = 0;
    return build_schema_list(resources, width);
  }
};

inline CapSet intel_2s() { return {"intel-2s", {intel_l3(), intel_mb()}}; }
inline CapSet intel_cdp() { return {"intel-cdp", {intel_l3(true), intel_mb()}}; }
inline CapSet intel_l2cdp() { return {"intel-l2cdp", {intel_l3(), intel_l2(true), intel_mb()}}; }
inline CapSet intel_mbps() { return {"intel-mba_MBps", {intel_l3(), intel_mb(true)}}; }
inline CapSet amd() { return {"amd", {amd_l3(), amd_bw("MB", 2), amd_bw("SMBA", 3)}}; }

// Haswell-server quirk: 20-bit mask, shareable c0000, at least 2 bits.
inline CapSet haswell() {
  ResourceDesc l3 = intel_l3();
  l3.cdp_capable = false;
  l3.num_closid = 4;
  l3.cbm_len = 20;
  l3.shareable_bits = 0xc0000;
  l3.min_cbm_bits = 2;
  return {"haswell", {l3}};
}
// Sparse masks that still need 2 bits in the lowest run.
inline CapSet sparse_min2() {
  ResourceDesc l3 = amd_l3();
  l3.min_cbm_bits = 2;
  return {"sparse-min2", {l3}};
}
// An Intel MBA that reports non-linear delays (unsupported by the kernel).
inline CapSet nonlinear_mb() {
  ResourceDesc mb = intel_mb();
  mb.delay_linear = false;
  return {"nonlinear-mb", {intel_l3(), mb}};
}

inline std::vector<CapSet> all_capsets() {
  return {intel_2s(), intel_cdp(), intel_l2cdp(), intel_mbps(), amd(), haswell(), sparse_min2()};
}

// Renders staged values as "NAME:id=value" items separated by spaces (hex
// for cache schemas, decimal for bandwidth), for compact table rows.
inline std::string render(const SchemaList& list, const std::vector<StagedValue>& v) {
  std::string out;
  for (const StagedValue& sv : v) {
    const Schema& s = list.schemas.at(static_cast<size_t>(sv.schema));
    char buf[64];
    std::snprintf(buf, sizeof buf, s.kind == Kind::CACHE ? "%s:%d=%x" : "%s:%d=%u", s.name.c_str(),
                  sv.domain_id, sv.value);
    if (!out.empty()) out += ' ';
    out += buf;
  }
  return out;
}

inline CapSet capset(const std::string& name) {
  for (CapSet& c : all_capsets()) {
    if (c.name == name) return c;
  }
  if (name == "nonlinear-mb") return nonlinear_mb();
  return {name, {}};
}

}  // namespace resctrlfs::schemata::testing
