// Implements the schema list of a mount (order, names, column width,
// CDP halving) and every read-side rendering: schemata, size, io_alloc_cbm.
#include <algorithm>
#include <bit>
#include <string>

#include "schemata/schemata.h"

namespace resctrlfs::schemata {
namespace {

Schema make_schema(const ResourceDesc& r, ConfType t) {
  Schema s;
  s.resource_name = r.name;
  s.name = r.name;
  if (t == ConfType::CODE) s.name += "CODE";
  if (t == ConfType::DATA) s.name += "DATA";
  s.resource_index = r.resource_index;
  s.conf_type = t;
  s.kind = r.kind;
  // With CDP one CLOSID uses two hardware control indexes (2c and 2c+1).
  s.num_closid = r.cdp_enabled ? r.num_closid / 2 : r.num_closid;
  s.cbm_len = r.cbm_len;
  s.shareable_bits = r.shareable_bits;
  s.min_cbm_bits = r.min_cbm_bits;
  s.sparse_masks = r.sparse_masks;
  s.cache_size_bytes = r.cache_size_bytes;
  s.min_bw = r.min_bw;
  s.bw_gran = r.bw_gran;
  s.max_bw = r.max_bw;
  s.delay_linear = r.delay_linear;
  s.arch_needs_linear = r.arch_needs_linear;
  s.mba_sc = r.mba_sc;
  s.bw_label = r.bw_label;
  s.domain_ids = r.domain_ids;
  return s;
}

// "%*s:" with the mount's name column width.
void append_padded_name(std::string& out, std::string_view name, unsigned width) {
  if (name.size() < width) out.append(width - name.size(), ' ');
  out += name;
  out += ':';
}

void append_hex(std::string& out, uint32_t v) {
  char buf[9];
  int n = 0;
  do {
    buf[n++] = "0123456789abcdef"[v & 0xf];
    v >>= 4;
  } while (v != 0);
  while (n > 0) out += buf[--n];
}

void append_value(std::string& out, const Schema& s, uint32_t v) {
  if (s.kind == Kind::CACHE) {
    append_hex(out, v);
  } else {
    out += std::to_string(v);
  }
}

// "<id>=<value>;...\n" for every domain of `s`, values from `value_of`.
template <typename F>
void append_domains(std::string& out, const Schema& s, F&& value_of) {
  bool sep = false;
  for (int id : s.domain_ids) {
    if (sep) out += ';';
    out += std::to_string(id);
    out += '=';
    value_of(out, id);
    sep = true;
  }
  out += '\n';
}

}  // namespace

uint32_t Schema::default_value() const {
  if (kind == Kind::CACHE) return full_mask();
  return mba_sc ? UINT32_MAX : max_bw;
}

int SchemaList::find(std::string_view name) const {
  for (size_t i = 0; i < schemas.size(); ++i) {
    if (schemas[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

SchemaList build_schema_list(const std::vector<ResourceDesc>& resources, unsigned& max_name_width) {
  SchemaList list;
  unsigned width_here = max_name_width;  // this mount's column (ours included)
  // The kernel prepends each schema to its list while walking resources in
  // enumeration order (CODE before DATA), so the printed order is reversed.
  std::vector<Schema> in_order;
  for (const ResourceDesc& r : resources) {
    const bool cdp = r.kind == Kind::CACHE && r.cdp_enabled;
    if (cdp) {
      in_order.push_back(make_schema(r, ConfType::CODE));
      in_order.push_back(make_schema(r, ConfType::DATA));
    } else {
      in_order.push_back(make_schema(r, ConfType::NONE));
    }
    for (size_t i = in_order.size() - (cdp ? 2 : 1); i < in_order.size(); ++i) {
      unsigned width = static_cast<unsigned>(in_order[i].name.size());
      // A CDP-capable resource mounted without CDP reserves room for the
      // suffix so the column does not move between mounts.
      if (r.cdp_capable && !cdp) width += 4;
      if (width > max_name_width && !r.extension) max_name_width = width;
      if (width > width_here) width_here = width;
    }
  }
  list.schemas.assign(in_order.rbegin(), in_order.rend());
  list.name_width = std::max(width_here, max_name_width);
  return list;
}

uint64_t cbm_to_size(const Schema& s, uint32_t cbm) {
  if (s.cbm_len == 0) return 0;
  return (s.cache_size_bytes / s.cbm_len) * static_cast<uint64_t>(std::popcount(cbm));
}

std::string format_schemata(const SchemaList& list, unsigned closid, const ValueGetter& get) {
  std::string out;
  for (size_t i = 0; i < list.schemas.size(); ++i) {
    const Schema& s = list.schemas[i];
    if (closid >= s.num_closid) continue;
    append_padded_name(out, s.name, list.name_width);
    append_domains(
        out, s, [&](std::string& o, int id) { append_value(o, s, get(static_cast<int>(i), id)); });
  }
  return out;
}

std::string format_schemata_locksetup(const SchemaList& list) {
  std::string out;
  for (const Schema& s : list.schemas) {
    out += s.name;
    out += ":uninitialized\n";
  }
  return out;
}

std::string format_size(const SchemaList& list, const ValueGetter& get) {
  std::string out;
  for (size_t i = 0; i < list.schemas.size(); ++i) {
    const Schema& s = list.schemas[i];
    append_padded_name(out, s.name, list.name_width);
    append_domains(out, s, [&](std::string& o, int id) {
      const uint32_t v = get(static_cast<int>(i), id);
      o += std::to_string(s.kind == Kind::CACHE ? cbm_to_size(s, v) : v);
    });
  }
  return out;
}

std::string format_size_locksetup(const SchemaList& list) {
  std::string out;
  for (const Schema& s : list.schemas) {
    append_padded_name(out, s.name, list.name_width);
    append_domains(out, s, [](std::string& o, int) { o += '0'; });
  }
  return out;
}

std::string format_schemata_locked(const Schema& s, int domain_id, uint32_t cbm) {
  std::string out = s.resource_name;
  out += ':';
  out += std::to_string(domain_id);
  out += '=';
  append_hex(out, cbm);
  out += '\n';
  return out;
}

std::string format_size_locked(const SchemaList& list, const Schema& s, int domain_id,
                               uint32_t cbm) {
  std::string out;
  append_padded_name(out, s.name, list.name_width);
  out += std::to_string(domain_id);
  out += '=';
  out += std::to_string(cbm_to_size(s, cbm));
  out += '\n';
  return out;
}

std::string format_io_alloc_cbm(const Schema& s, const std::function<uint32_t(int)>& get) {
  std::string out;
  append_domains(out, s, [&](std::string& o, int id) { append_hex(o, get(id)); });
  return out;
}

}  // namespace resctrlfs::schemata
