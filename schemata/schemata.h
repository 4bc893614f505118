// Defines the schemata language of resctrl as a pure library: the schema
// list of a mount, parsing and validating a `schemata` write into staged
// values, formatting `schemata` and `size`, and the `io_alloc_cbm` syntax.
//
// No I/O, no locks, no groups: the caller (fs/) passes capabilities as plain
// values, the current values through a callback, and the group-dependent
// policy checks (exclusive overlaps, pseudo-locked regions) through the
// CbmPolicy interface. Nothing here knows a vendor.
//
// Specification: the kernel's schemata rules ("Schemata files - general
// concepts" and the per-resource schemata sections of
// Documentation/filesystems/resctrl.rst, and fs/resctrl/ctrlmondata.c for
// the exact order of checks). Error messages are the kernel's
// last_cmd_status texts.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/conf_type.h"
#include "base/result.h"

namespace resctrlfs::schemata {

using resctrlfs::ConfType;  // base/conf_type.h, shared with hw/arch.h
enum class Kind : uint8_t { CACHE = 0, BANDWIDTH = 1 };
enum class GroupMode : uint8_t { SHAREABLE, EXCLUSIVE, PSEUDO_LOCKSETUP, PSEUDO_LOCKED };

// A group's mode as the `mode` file shows it (and the saved state keeps it).
inline const char* group_mode_name(GroupMode m) {
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

// The mode group_mode_name() names `name` (exactly), or none.
inline std::optional<GroupMode> group_mode_from_name(std::string_view name) {
  for (GroupMode m : {GroupMode::SHAREABLE, GroupMode::EXCLUSIVE, GroupMode::PSEUDO_LOCKSETUP,
                      GroupMode::PSEUDO_LOCKED})
    if (name == group_mode_name(m)) return m;
  return std::nullopt;
}

// One allocation resource as the caller describes it (plain values).
struct ResourceDesc {
  std::string name;        // "L3", "L2", "MB", "SMBA"
  int resource_index = 0;  // the caller's own id, echoed back in Schema
  Kind kind = Kind::CACHE;
  bool cdp_capable = false;
  bool cdp_enabled = false;  // mounted with cdp / cdpl2
  unsigned num_closid = 0;   // hardware count (halved here when CDP is on)
  // cache
  unsigned cbm_len = 0;
  uint32_t shareable_bits = 0;
  unsigned min_cbm_bits = 0;
  bool sparse_masks = false;
  uint64_t cache_size_bytes = 0;
  // bandwidth
  unsigned min_bw = 0, bw_gran = 1, max_bw = 100;
  bool delay_linear = true;
  bool arch_needs_linear = false;
  bool mba_sc = false;  // mounted with mba_MBps (MB only): values are MBps targets
  // The word bandwidth-value messages name the value by: the kernel says
  // "MB" for every bandwidth resource (SMBA too); ours say their own name.
  std::string bw_label = "MB";
  std::vector<int> domain_ids;  // control domain ids, ascending
  // Ours (a resource the kernel does not have, shown with a mount option of
  // ours): its name widens this mount's name column only, not the global
  // max_name_width later mounts keep, so that a later mount without our
  // options prints exactly as the kernel would.
  bool extension = false;
};

// One line of schemata.
struct Schema {
  std::string name;           // "L3", "L3CODE", "L3DATA", "L2", ..., "MB", "SMBA"
  std::string resource_name;  // "L3" for L3CODE too
  int resource_index = 0;
  ConfType conf_type = ConfType::NONE;
  Kind kind = Kind::CACHE;
  unsigned num_closid = 0;  // usable CLOSIDs for this schema (halved with CDP)
  unsigned cbm_len = 0;
  uint32_t shareable_bits = 0;
  unsigned min_cbm_bits = 0;
  bool sparse_masks = false;
  uint64_t cache_size_bytes = 0;
  unsigned min_bw = 0, bw_gran = 1, max_bw = 100;
  bool delay_linear = true;
  bool arch_needs_linear = false;
  bool mba_sc = false;
  std::string bw_label = "MB";  // see ResourceDesc
  std::vector<int> domain_ids;
  uint32_t full_mask() const { return cbm_len >= 32 ? 0xffffffffU : ((1U << cbm_len) - 1U); }
  // The value a fresh CLOSID holds: full mask, max_bw, or U32_MAX under mba_sc.
  uint32_t default_value() const;
};

// The schemas of one mount in print order (reverse enumeration: SMBA, MB,
// L2DATA, L2CODE | L2, L3DATA, L3CODE | L3) plus the name column width.
struct SchemaList {
  std::vector<Schema> schemas;
  unsigned name_width = 0;
  // Index of the schema called `name`, or -1.
  int find(std::string_view name) const;
};

// Builds the schema list for resources given in enumeration order (L3, L2,
// MB, SMBA). `max_name_width` is the global that never shrinks across
// remounts: it is read and raised here, and the result's name_width is the
// raised value.
SchemaList build_schema_list(const std::vector<ResourceDesc>& resources, unsigned& max_name_width);

// One staged value: schema index in the SchemaList, domain id, value.
struct StagedValue {
  int schema = 0;
  int domain_id = 0;
  uint32_t value = 0;
};

// Group-dependent checks on a validated cache mask, supplied by fs/.
// Each returns an error (with the kernel's message) or nothing.
class CbmPolicy {
 public:
  virtual ~CbmPolicy() = default;
  // Called before the value is validated, only for PSEUDO_LOCKSETUP groups:
  // "Pseudo-locked region in hierarchy\n".
  virtual std::optional<Error> check_locksetup_hierarchy(const Schema& s, int domain_id) = 0;
  // Called after cbm_validate succeeded: pseudo-locked region overlap,
  // "Overlaps with exclusive group\n", "Overlaps with other group\n".
  virtual std::optional<Error> check_cbm(const Schema& s, int domain_id, uint32_t cbm) = 0;
};

// A CbmPolicy that accepts everything (no other groups).
class NoPolicy final : public CbmPolicy {
 public:
  std::optional<Error> check_locksetup_hierarchy(const Schema&, int) override { return {}; }
  std::optional<Error> check_cbm(const Schema&, int, uint32_t) override { return {}; }
};

struct ParseResult {
  // ok, or the write's errno and its last_cmd_status text.
  Result<void> status;
  // All staged values (only meaningful when status is ok). Later values of
  // the same (schema, domain) cannot occur: duplicates are an error.
  std::vector<StagedValue> staged;
  // MB values under mba_MBps: the kernel stores these while parsing, so
  // they must be applied even when status is an error.
  std::vector<StagedValue> mba_sc_applied;
};

// Parses one write(2) to a group's schemata (the raw buffer, including its
// trailing newline). Implements the kernel's write steps up to staging the
// values, except locking:
//  - empty or no trailing '\n': EINVAL with an empty message, and the
//    caller must leave last_cmd_status untouched (see rejected_before_lock);
//  - PSEUDO_LOCKED groups: "Resource group is pseudo-locked\n";
//  - like the kernel's C-string handling, the text ends at its first NUL byte;
//  - a schema is known only when `closid` < its num_closid (the kernel's
//    rdtgroup_parse_resource rule; always true for a CLOSID from the pool);
//  - an unknown domain id fails with EINVAL and an empty message;
//  - PSEUDO_LOCKSETUP groups: each line stops after its first valid domain;
//    the region requested is the last entry of `staged`.
// Cost: linear in the length of the text (plus one O(domains) index per
// schema named, only when a schema's domain_ids are not sorted).
ParseResult parse_schemata(std::string_view text, const SchemaList& list, GroupMode mode,
                           CbmPolicy& policy, unsigned closid = 0);

// True when parse_schemata's error must not reset/modify last_cmd_status
// (the kernel rejected the write before taking the lock).
bool rejected_before_lock(std::string_view text);

// Reads current values: (schema index, domain id) -> value.
using ValueGetter = std::function<uint32_t(int schema, int domain_id)>;

// Renders `schemata` for a group in a normal mode (shareable/exclusive).
// `closid` filters schemas whose num_closid <= closid.
std::string format_schemata(const SchemaList& list, unsigned closid, const ValueGetter& get);
// Renders `schemata` for a pseudo-locksetup group: "NAME:uninitialized\n".
std::string format_schemata_locksetup(const SchemaList& list);
// Renders `size`: bytes per cache schema/domain, raw values for MB/SMBA.
std::string format_size(const SchemaList& list, const ValueGetter& get);
// Renders `size` for a pseudo-locksetup group (every value 0).
std::string format_size_locksetup(const SchemaList& list);
// Renders `schemata` of a pseudo-locked group: "<resource>:<id>=<cbm>\n"
// (resource name, not padded).
std::string format_schemata_locked(const Schema& s, int domain_id, uint32_t cbm);
// Renders `size` of a pseudo-locked group: "<padded schema>:<id>=<bytes>\n".
std::string format_size_locked(const SchemaList& list, const Schema& s, int domain_id,
                               uint32_t cbm);

// Bytes a mask stands for: (cache_size / cbm_len) * popcount(cbm).
uint64_t cbm_to_size(const Schema& s, uint32_t cbm);

// io_alloc_cbm: "<id>=<cbm>;...\n" for one cache schema.
std::string format_io_alloc_cbm(const Schema& s, const std::function<uint32_t(int)>& get);
// Parses a write to io_alloc_cbm (text includes the trailing newline).
// The whole write is one line (no schema name; a '\n' inside is data).
// Supports `*` for all domains; unknown id -> "Invalid domain <id>\n".
// Validation is that of a shareable group (policy.check_cbm is called, never
// check_locksetup_hierarchy). With CDP each value is staged for both the
// CODE and the DATA schema of the resource (the kernel keeps them equal).
// Empty/no trailing newline: EINVAL, empty message, LCS untouched.
ParseResult parse_io_alloc_cbm(std::string_view text, const SchemaList& list, int schema_index,
                               CbmPolicy& policy);

// Validates one cache mask text (the kernel's cbm_validate after hex parse):
// exposed for reuse and tests. On success returns the mask.
Result<uint32_t> parse_cbm_value(std::string_view trimmed, const Schema& s);
// Validates one bandwidth text (bw_validate); returns the rounded value.
Result<uint32_t> parse_bw_value(std::string_view trimmed, const Schema& s);

}  // namespace resctrlfs::schemata
