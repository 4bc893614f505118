// Table-driven tests of parse_io_alloc_cbm (info/<cache>/io_alloc_cbm writes):
// one line of "<id>=<cbm>" items with no schema name, `*` for every domain,
// "Invalid domain <id>" for unknown ids, cache-mask validation as for a
// shareable group, and CODE/DATA kept equal under CDP.
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "tests/schemata/fixtures.h"

namespace resctrlfs::schemata {
namespace {

using testing::capset;
using testing::render;

struct Row {
  const char* caps;
  const char* schema;
  std::string input;
  int err;
  const char* msg;
  const char* staged;
};

class Reject final : public CbmPolicy {
 public:
  explicit Reject(std::string m) : m_(std::move(m)) {}
  std::optional<Error> check_locksetup_hierarchy(const Schema&, int) override {
    return Error::make(EINVAL, "must not be asked for io_alloc\n");
  }
  std::optional<Error> check_cbm(const Schema&, int, uint32_t) override {
    if (m_.empty()) return std::nullopt;
    return Error::make(EINVAL, m_);
  }

 private:
  std::string m_;
};

TEST_CASE("parse_io_alloc_cbm: table", "[schemata][io_alloc]") {
  const std::vector<Row> rows = {
      {"amd", "L3", "0=ff;2=f0\n", 0, "", "L3:0=ff L3:2=f0"},
      {"amd", "L3", "7=0\n", 0, "", "L3:7=0"},
      {"amd", "L3", "0=ff;\n", 0, "", "L3:0=ff"},
      {"amd", "L3", "0=0xF;2= f \n", 0, "", "L3:0=f L3:2=f"},
      {"amd", "L3", "\n", 0, "", ""},
      {"amd", "L3", "*=f\n", 0, "", "L3:0=f L3:2=f L3:5=f L3:7=f"},
      {"amd", "L3", "*= f0 \n", 0, "", "L3:0=f0 L3:2=f0 L3:5=f0 L3:7=f0"},
      {"amd", "L3", "0=1;*=f\n", EINVAL, "Duplicate domain 0\n", ""},
      {"amd", "L3", "*=f;5=1\n", EINVAL, "Duplicate domain 5\n", ""},
      {"amd", "L3", "*=zz\n", EINVAL, "Non-hex character in the mask zz\n", ""},
      {"amd", "L3", "* =f\n", EINVAL, "Missing '=' or non-numeric domain\n", ""},
      {"amd", "L3", "*\n", EINVAL, "Missing '=' or non-numeric domain\n", ""},
      {"amd", "L3", "1=f\n", EINVAL, "Invalid domain 1\n", ""},
      {"amd", "L3", "0=f;3=f\n", EINVAL, "Invalid domain 3\n", ""},
      {"amd", "L3", "+0003=f\n", EINVAL, "Invalid domain 3\n", ""},
      {"amd", "L3", "18446744073709551615=1\n", EINVAL, "Invalid domain 18446744073709551615\n",
       ""},
      {"amd", "L3", "0=f;0=f\n", EINVAL, "Duplicate domain 0\n", ""},
      {"amd", "L3", "0=zz\n", EINVAL, "Non-hex character in the mask zz\n", ""},
      {"amd", "L3", "0=10000\n", EINVAL, "Mask out of range\n", ""},
      {"amd", "L3", "x=1\n", EINVAL, "Missing '=' or non-numeric domain\n", ""},
      {"amd", "L3", " 0=1\n", EINVAL, "Missing '=' or non-numeric domain\n", ""},
      {"amd", "L3", "0=1", EINVAL, "", ""},  // no trailing newline
      {"amd", "L3", "", EINVAL, "", ""},
      // The whole write is one line: an inner '\n' is part of a value...
      {"amd", "L3", "0=f\n2=f\n", EINVAL, "Non-hex character in the mask f\n2=f\n", ""},
      // ...and kstrtoul accepts one '\n' after the id digits.
      {"amd", "L3", "0\n=f\n", 0, "", "L3:0=f"},
      {"amd", "L3", std::string("0=3\0;2=zz\n", 10), 0, "", "L3:0=3"},
      {"intel-2s", "L3", "0=f7\n", EINVAL, "The mask f7 has non-consecutive 1-bits\n", ""},
      {"intel-2s", "L3", "1=0\n", EINVAL, "Mask out of range\n", ""},
      {"haswell", "L3", "0=1\n", EINVAL, "Need at least 2 bits in the mask\n", ""},
      {"intel-2s", "L3", "0=7;1=70\n", 0, "", "L3:0=7 L3:1=70"},
      // CDP: each value is staged for CODE and DATA alike.
      {"intel-cdp", "L3CODE", "0=3;1=7\n", 0, "", "L3CODE:0=3 L3DATA:0=3 L3CODE:1=7 L3DATA:1=7"},
      {"intel-cdp", "L3DATA", "*=7\n", 0, "", "L3DATA:0=7 L3CODE:0=7 L3DATA:1=7 L3CODE:1=7"},
  };
  for (const Row& r : rows) {
    const SchemaList list = capset(r.caps).list();
    const int si = list.find(r.schema);
    REQUIRE(si >= 0);
    Reject none("");
    INFO(r.caps << " " << r.schema << " input=\"" << r.input << "\"");
    const ParseResult res = parse_io_alloc_cbm(r.input, list, si, none);
    if (r.err == 0) {
      CHECK(res.status.ok());
    } else {
      REQUIRE_FALSE(res.status.ok());
      CHECK(res.status.error().code == r.err);
      CHECK(res.status.error().message == r.msg);
    }
    CHECK(render(list, res.staged) == r.staged);
  }
}

TEST_CASE("parse_io_alloc_cbm: shareable-group policy messages", "[schemata][io_alloc]") {
  const SchemaList list = testing::amd().list();
  for (const char* msg :
       {"Overlaps with exclusive group\n", "CBM overlaps with pseudo-locked region\n"}) {
    Reject p(msg);
    const ParseResult r = parse_io_alloc_cbm("0=f\n", list, list.find("L3"), p);
    REQUIRE_FALSE(r.status.ok());
    CHECK(r.status.error().code == EINVAL);
    CHECK(r.status.error().message == msg);
    CHECK(r.staged.empty());
  }
  // A mask that fails validation never reaches the policy.
  Reject p("Overlaps with exclusive group\n");
  const ParseResult r = parse_io_alloc_cbm("0=10000\n", list, list.find("L3"), p);
  CHECK(r.status.error().message == "Mask out of range\n");
}

}  // namespace
}  // namespace resctrlfs::schemata
