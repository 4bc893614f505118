// Implements the write side of the schemata language: parse_schemata (the
// kernel's rdtgroup_schemata_write/parse_line/parse_cbm/parse_bw),
// parse_io_alloc_cbm, and the value validators cbm_validate/bw_validate.
//
// The kernel works on a NUL-terminated copy of the write with strsep() and
// strim(); the same splitting is done here over string_views, in the same
// order, so that the first error reported is the kernel's first error.
#include <algorithm>
#include <bit>
#include <string>
#include <utility>

#include "schemata/kstrtox.h"
#include "schemata/schemata.h"

namespace resctrlfs::schemata {
namespace {

using internal::kstrtou32;
using internal::kstrtoul;
using internal::strim;

Error einval(std::string msg = {}) { return Error::make(EINVAL, std::move(msg)); }

std::string hex(uint64_t v) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string s;
  do {
    s.insert(s.begin(), kDigits[v & 0xf]);
    v >>= 4;
  } while (v != 0);
  return s;
}

// strsep(&s, sep) for one separator: returns the text before the first
// `sep` and leaves the rest in `rest`, or returns all of `s` and sets
// `found` false when there is no separator.
std::string_view split_first(std::string_view s, char sep, std::string_view& rest, bool& found) {
  const size_t p = s.find(sep);
  if (p == std::string_view::npos) {
    found = false;
    rest = {};
    return s;
  }
  found = true;
  rest = s.substr(p + 1);
  return s.substr(0, p);
}

// The body of a write: the text without its final '\n', ending at the
// first NUL as the kernel's string functions would see it.
std::string_view write_body(std::string_view text) {
  std::string_view body = text.substr(0, text.size() - 1);
  const size_t nul = body.find('\0');
  if (nul != std::string_view::npos) body = body.substr(0, nul);
  return body;
}

// Finds domain ids of one schema: binary search on the (normally sorted)
// domain_ids, or a sorted copy when the caller's list is unsorted.
class DomainIndex {
 public:
  explicit DomainIndex(const Schema& s) : ids_(s.domain_ids) {
    if (!std::is_sorted(ids_.begin(), ids_.end())) {
      sorted_.reserve(ids_.size());
      for (size_t i = 0; i < ids_.size(); ++i) sorted_.emplace_back(ids_[i], i);
      std::sort(sorted_.begin(), sorted_.end());
    }
  }
  size_t size() const { return ids_.size(); }
  // Index into domain_ids of `id`, or -1. `id` is the parsed unsigned long:
  // domain ids are ints, so anything above INT_MAX matches nothing.
  long find(uint64_t id) const {
    if (id > static_cast<uint64_t>(INT32_MAX)) return -1;
    const int want = static_cast<int>(id);
    if (sorted_.empty()) {
      // Dense ids (0..n-1, the usual case) are found without a search.
      if (static_cast<size_t>(want) < ids_.size() && ids_[static_cast<size_t>(want)] == want)
        return want;
      auto it = std::lower_bound(ids_.begin(), ids_.end(), want);
      if (it == ids_.end() || *it != want) return -1;
      return static_cast<long>(it - ids_.begin());
    }
    auto it = std::lower_bound(sorted_.begin(), sorted_.end(), std::make_pair(want, size_t{0}));
    if (it == sorted_.end() || it->first != want) return -1;
    return static_cast<long>(it->second);
  }

 private:
  const std::vector<int>& ids_;
  std::vector<std::pair<int, size_t>> sorted_;
};

// Staging state of one write: the staged_config[].have_new_ctrl flags of the
// kernel, per schema and domain index, allocated when a schema is first used.
class Stager {
 public:
  explicit Stager(const SchemaList& list) : list_(list), per_schema_(list.schemas.size()) {}

  struct PerSchema {
    std::optional<DomainIndex> index;
    std::vector<uint8_t> staged;
  };

  PerSchema& schema(int si) {
    PerSchema& p = per_schema_[static_cast<size_t>(si)];
    if (!p.index) {
      p.index.emplace(list_.schemas[static_cast<size_t>(si)]);
      p.staged.assign(p.index->size(), 0);
    }
    return p;
  }

 private:
  const SchemaList& list_;
  std::vector<PerSchema> per_schema_;
};

// parse_cbm / parse_bw for one (schema, domain) item. `value` is trimmed.
Result<void> parse_item(const Schema& s, int si, size_t di, std::string_view value, GroupMode mode,
                        CbmPolicy& policy, Stager::PerSchema& ps, ParseResult& out) {
  const int domain_id = s.domain_ids[di];
  if (ps.staged[di]) return einval("Duplicate domain " + std::to_string(domain_id) + "\n");
  if (s.kind == Kind::CACHE) {
    if (mode == GroupMode::PSEUDO_LOCKSETUP) {
      if (auto e = policy.check_locksetup_hierarchy(s, domain_id)) return std::move(*e);
    }
    RESCTRLFS_ASSIGN_OR_RETURN(const uint32_t cbm, parse_cbm_value(value, s));
    if (auto e = policy.check_cbm(s, domain_id, cbm)) return std::move(*e);
    ps.staged[di] = 1;
    out.staged.push_back(StagedValue{si, domain_id, cbm});
    return Ok();
  }
  RESCTRLFS_ASSIGN_OR_RETURN(const uint32_t bw, parse_bw_value(value, s));
  if (s.mba_sc) {
    // The software controller's target is stored at once and never marked
    // as staged: no duplicate detection, no rollback.
    out.mba_sc_applied.push_back(StagedValue{si, domain_id, bw});
    return Ok();
  }
  ps.staged[di] = 1;
  out.staged.push_back(StagedValue{si, domain_id, bw});
  return Ok();
}

// One "<id>=<value>" item: id untrimmed decimal, value trimmed. On success
// returns the parsed id and sets `value`.
Result<uint64_t> split_item(std::string_view item, std::string_view& value) {
  bool has_eq = false;
  const std::string_view id_text = split_first(item, '=', value, has_eq);
  const auto id = has_eq ? kstrtoul(id_text, 10) : std::nullopt;
  if (!id) return einval("Missing '=' or non-numeric domain\n");
  value = strim(value);
  return *id;
}

// parse_line(): the domain list of one schemata line.
Result<void> parse_line(std::string_view line, const SchemaList& list, int si, GroupMode mode,
                        CbmPolicy& policy, Stager& stager, ParseResult& out) {
  const Schema& s = list.schemas[static_cast<size_t>(si)];
  if (mode == GroupMode::PSEUDO_LOCKSETUP && s.kind == Kind::BANDWIDTH)
    return einval("Cannot pseudo-lock MBA resource\n");
  Stager::PerSchema& ps = stager.schema(si);
  bool more = true;
  while (more && !line.empty()) {
    std::string_view rest;
    const std::string_view item = split_first(line, ';', rest, more);
    line = rest;
    std::string_view value;
    RESCTRLFS_ASSIGN_OR_RETURN(const uint64_t id, split_item(item, value));
    const long di = ps.index->find(id);
    if (di < 0) return einval();  // the kernel reports nothing here
    RESCTRLFS_RETURN_IF_ERROR(
        parse_item(s, si, static_cast<size_t>(di), value, mode, policy, ps, out));
    // Only one region per pseudo-locksetup group: the rest of the line is
    // not looked at.
    if (mode == GroupMode::PSEUDO_LOCKSETUP) return Ok();
  }
  return Ok();
}

Result<void> parse_all(std::string_view body, const SchemaList& list, GroupMode mode,
                       CbmPolicy& policy, unsigned closid, ParseResult& out) {
  Stager stager(list);
  bool more = true;
  while (more) {
    std::string_view rest;
    const std::string_view line = split_first(body, '\n', rest, more);
    body = rest;
    bool has_colon = false;
    std::string_view tok;
    const std::string_view name = strim(split_first(line, ':', tok, has_colon));
    if (!has_colon) return einval("Missing ':'\n");
    if (tok.empty()) return einval("Missing '" + std::string(name) + "' value\n");
    int si = -1;
    for (size_t i = 0; i < list.schemas.size(); ++i) {
      if (list.schemas[i].name == name && closid < list.schemas[i].num_closid) {
        si = static_cast<int>(i);
        break;
      }
    }
    if (si < 0) return einval("Unknown or unsupported resource name '" + std::string(name) + "'\n");
    RESCTRLFS_RETURN_IF_ERROR(parse_line(tok, list, si, mode, policy, stager, out));
  }
  return Ok();
}

}  // namespace

bool rejected_before_lock(std::string_view text) { return text.empty() || text.back() != '\n'; }

Result<uint32_t> parse_cbm_value(std::string_view trimmed, const Schema& s) {
  const auto parsed = kstrtoul(trimmed, 16);
  if (!parsed) return einval("Non-hex character in the mask " + std::string(trimmed) + "\n");
  const uint64_t val = *parsed;
  if ((s.min_cbm_bits > 0 && val == 0) || val > s.full_mask()) return einval("Mask out of range\n");
  const unsigned len = std::min(s.cbm_len, 32U);
  const auto cbm = static_cast<uint32_t>(val);
  // The lowest run of ones: [first, zero).
  const unsigned first = cbm == 0 ? len : static_cast<unsigned>(std::countr_zero(cbm));
  unsigned zero = first;
  while (zero < len && (cbm >> zero & 1U)) ++zero;
  const bool more_ones = zero < 32 && (cbm >> zero) != 0;
  if (!s.sparse_masks && more_ones)
    return einval("The mask " + hex(val) + " has non-consecutive 1-bits\n");
  if (zero - first < s.min_cbm_bits)
    return einval("Need at least " + std::to_string(s.min_cbm_bits) + " bits in the mask\n");
  return cbm;
}

Result<uint32_t> parse_bw_value(std::string_view trimmed, const Schema& s) {
  if (!s.delay_linear && s.arch_needs_linear)
    return einval("No support for non-linear MB domains\n");
  const auto bw = kstrtou32(trimmed, 10);
  if (!bw) return einval("Invalid " + s.bw_label + " value " + std::string(trimmed) + "\n");
  if (s.mba_sc) return *bw;
  if (*bw < s.min_bw || *bw > s.max_bw) {
    return einval(s.bw_label + " value " + std::to_string(*bw) + " out of range [" +
                  std::to_string(static_cast<int>(s.min_bw)) + "," +
                  std::to_string(static_cast<int>(s.max_bw)) + "]\n");
  }
  const uint64_t gran = s.bw_gran == 0 ? 1 : s.bw_gran;
  return static_cast<uint32_t>((*bw + gran - 1) / gran * gran);
}

ParseResult parse_schemata(std::string_view text, const SchemaList& list, GroupMode mode,
                           CbmPolicy& policy, unsigned closid) {
  ParseResult out;
  if (rejected_before_lock(text)) {
    out.status = einval();
    return out;
  }
  if (mode == GroupMode::PSEUDO_LOCKED) {
    out.status = einval("Resource group is pseudo-locked\n");
    return out;
  }
  out.status = parse_all(write_body(text), list, mode, policy, closid, out);
  if (!out.status.ok()) out.staged.clear();
  return out;
}

ParseResult parse_io_alloc_cbm(std::string_view text, const SchemaList& list, int schema_index,
                               CbmPolicy& policy) {
  ParseResult out;
  if (rejected_before_lock(text) || schema_index < 0 ||
      static_cast<size_t>(schema_index) >= list.schemas.size()) {
    out.status = einval();
    return out;
  }
  const Schema& s = list.schemas[static_cast<size_t>(schema_index)];
  // With CDP the io_alloc CLOSID's CODE and DATA masks are kept identical.
  int peer = -1;
  if (s.conf_type != ConfType::NONE) {
    for (size_t i = 0; i < list.schemas.size(); ++i) {
      const Schema& o = list.schemas[i];
      if (o.resource_index == s.resource_index && o.conf_type != ConfType::NONE &&
          o.conf_type != s.conf_type) {
        peer = static_cast<int>(i);
      }
    }
  }
  Stager stager(list);
  Stager::PerSchema& ps = stager.schema(schema_index);
  auto stage_one = [&](size_t di, std::string_view value) -> Result<void> {
    RESCTRLFS_RETURN_IF_ERROR(
        parse_item(s, schema_index, di, value, GroupMode::SHAREABLE, policy, ps, out));
    if (peer >= 0) {
      StagedValue v = out.staged.back();
      v.schema = peer;
      out.staged.push_back(v);
    }
    return Ok();
  };
  auto run = [&]() -> Result<void> {
    std::string_view line = write_body(text);
    bool more = true;
    while (more && !line.empty()) {
      std::string_view rest;
      const std::string_view item = split_first(line, ';', rest, more);
      line = rest;
      std::string_view value;
      bool has_eq = false;
      const std::string_view id_text = split_first(item, '=', value, has_eq);
      if (has_eq && id_text == "*") {
        value = strim(value);
        for (size_t di = 0; di < ps.index->size(); ++di) {
          RESCTRLFS_RETURN_IF_ERROR(stage_one(di, value));
        }
        continue;
      }
      RESCTRLFS_ASSIGN_OR_RETURN(const uint64_t id, split_item(item, value));
      const long di = ps.index->find(id);
      if (di < 0) return einval("Invalid domain " + std::to_string(id) + "\n");
      RESCTRLFS_RETURN_IF_ERROR(stage_one(static_cast<size_t>(di), value));
    }
    return Ok();
  };
  out.status = run();
  if (!out.status.ok()) out.staged.clear();
  return out;
}

}  // namespace resctrlfs::schemata
