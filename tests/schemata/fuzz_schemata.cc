// Defines the libFuzzer target for the schemata language: arbitrary bytes go
// to parse_schemata (in several group modes) and parse_io_alloc_cbm over
// several capability sets. Properties checked on every input:
//  - no crash, no sanitizer report;
//  - an error has an errno of EINVAL and either no message or one that ends
//    in '\n'; a failed write stages nothing;
//  - every staged value is one the schema accepts, and an accepted write's
//    values, re-formatted as text (both as the `schemata` file and as a
//    partial write), parse back to the same values.
// The first input byte selects the capability set, the mode and the parser.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tests/schemata/fixtures.h"

namespace resctrlfs::schemata {
namespace {

[[noreturn]] void fail(const char* what, std::string_view input, const std::string& detail) {
  std::fprintf(stderr, "fuzz_schemata: %s\ninput: \"%.*s\"\n%s\n", what,
               static_cast<int>(input.size()), input.data(), detail.c_str());
  std::abort();
}

using State = std::map<std::pair<int, int>, uint32_t>;

void check_error_shape(const ParseResult& r, std::string_view input) {
  // A write the kernel rejects before locking leaves no message behind.
  if (rejected_before_lock(input) &&
      (r.status.ok() || !r.status.error().message.empty() || !r.mba_sc_applied.empty()))
    fail("unterminated write was not rejected silently", input, "");
  if (r.status.ok()) return;
  const Error& e = r.status.error();
  if (e.code != EINVAL) fail("errno is not EINVAL", input, e.message);
  if (!e.message.empty() && e.message.back() != '\n')
    fail("message without newline", input, e.message);
  if (!r.staged.empty()) fail("failed write staged values", input, e.message);
}

// Re-validates one value through the public validators, then parses a
// rendering of `st` both as the full schemata file and as a partial write.
void check_round_trip(const SchemaList& list, const State& st, std::string_view input) {
  NoPolicy p;
  std::string partial;
  for (size_t si = 0; si < list.schemas.size(); ++si) {
    const Schema& s = list.schemas[si];
    std::string line;
    for (const auto& [key, v] : st) {
      if (key.first != static_cast<int>(si)) continue;
      char buf[64];
      std::snprintf(buf, sizeof buf, s.kind == Kind::CACHE ? "%d=%x" : "%d=%u", key.second, v);
      if (!line.empty()) line += ';';
      line += buf;
      const std::string text = buf + std::string(buf).find('=') + 1;
      const bool ok =
          s.kind == Kind::CACHE ? parse_cbm_value(text, s).ok() : parse_bw_value(text, s).ok();
      if (!ok) fail("staged value is not valid for its schema", input, s.name + " " + text);
    }
    if (!line.empty()) partial += s.name + ":" + line + "\n";
  }
  if (partial.empty()) return;
  const ParseResult again = parse_schemata(partial, list, GroupMode::SHAREABLE, p);
  if (!again.status.ok())
    fail("partial re-parse failed", input, partial + again.status.error().message);
  State got;
  for (const StagedValue& v : again.staged) got[{v.schema, v.domain_id}] = v.value;
  for (const StagedValue& v : again.mba_sc_applied) got[{v.schema, v.domain_id}] = v.value;
  if (got != st) fail("partial re-parse differs", input, partial);

  // A bandwidth schema the kernel cannot write (non-linear MBA where the
  // arch needs linear) makes the full file unparseable by design.
  for (const Schema& s : list.schemas) {
    if (s.kind == Kind::BANDWIDTH && !s.delay_linear && s.arch_needs_linear) return;
  }
  const std::string full = format_schemata(list, 0, [&](int si, int d) {
    auto it = st.find({si, d});
    return it != st.end() ? it->second : list.schemas[static_cast<size_t>(si)].default_value();
  });
  const ParseResult whole = parse_schemata(full, list, GroupMode::SHAREABLE, p);
  if (!whole.status.ok()) fail("full re-parse failed", input, full + whole.status.error().message);
  for (const StagedValue& v : whole.staged) {
    auto it = st.find({v.schema, v.domain_id});
    if (it != st.end() && it->second != v.value) fail("full re-parse differs", input, full);
  }
  for (const StagedValue& v : whole.mba_sc_applied) {
    auto it = st.find({v.schema, v.domain_id});
    if (it != st.end() && it->second != v.value)
      fail("full re-parse differs (mba_sc)", input, full);
  }
}

const std::vector<SchemaList>& lists() {
  static const std::vector<SchemaList> l = [] {
    std::vector<SchemaList> out;
    for (const testing::CapSet& c : testing::all_capsets()) out.push_back(c.list());
    out.push_back(testing::nonlinear_mb().list());
    return out;
  }();
  return l;
}

}  // namespace
}  // namespace resctrlfs::schemata

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace resctrlfs::schemata;
  if (size == 0) return 0;
  const uint8_t sel = data[0];
  const std::string_view input(reinterpret_cast<const char*>(data + 1), size - 1);
  const SchemaList& list = lists()[sel % lists().size()];
  const unsigned op = (sel / 8) % 4;  // 0 shareable, 1 exclusive, 2 locksetup, 3 io_alloc
  NoPolicy p;
  ParseResult r;
  if (op == 3) {
    // The schema is any cache schema of the list.
    std::vector<int> caches;
    for (size_t i = 0; i < list.schemas.size(); ++i) {
      if (list.schemas[i].kind == Kind::CACHE) caches.push_back(static_cast<int>(i));
    }
    if (caches.empty()) return 0;
    const int si = caches[(sel / 32) % caches.size()];
    r = parse_io_alloc_cbm(input, list, si, p);
    check_error_shape(r, input);
    if (!r.status.ok()) return 0;
    std::map<int, uint32_t> vals;
    for (const StagedValue& v : r.staged) {
      if (v.schema == si) vals[v.domain_id] = v.value;
    }
    const Schema& s = list.schemas[static_cast<size_t>(si)];
    const std::string text = format_io_alloc_cbm(s, [&](int d) {
      auto it = vals.find(d);
      return it != vals.end() ? it->second : s.default_value();
    });
    const ParseResult again = parse_io_alloc_cbm(text, list, si, p);
    if (!again.status.ok()) fail("io_alloc re-parse failed", input, text);
    for (const StagedValue& v : again.staged) {
      auto it = vals.find(v.domain_id);
      if (v.schema == si && it != vals.end() && it->second != v.value)
        fail("io_alloc re-parse differs", input, text);
    }
    return 0;
  }
  const GroupMode mode = op == 0   ? GroupMode::SHAREABLE
                         : op == 1 ? GroupMode::EXCLUSIVE
                                   : GroupMode::PSEUDO_LOCKSETUP;
  r = parse_schemata(input, list, mode, p);
  check_error_shape(r, input);
  State st;
  for (const StagedValue& v : r.mba_sc_applied) st[{v.schema, v.domain_id}] = v.value;
  if (r.status.ok()) {
    for (const StagedValue& v : r.staged) {
      if (st.count({v.schema, v.domain_id})) fail("a (schema, domain) was staged twice", input, "");
      st[{v.schema, v.domain_id}] = v.value;
    }
  }
  check_round_trip(list, st, input);
  return 0;
}
