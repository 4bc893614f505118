// Table-driven tests of parse_schemata: one row per rule and per
// last_cmd_status message of a schemata write, the schemata edge cases
// ("case N" is test_NN_* of tests/integration/test_fs_edge_cases.py, which
// checks the same cases through the mount), plus the schemata writes of the
// worked transcript (tests/integration/test_fs_transcript.py). Each row gives the capability
// set, the group mode, the exact write(2) buffer, the expected errno (0 for
// success), the exact last_cmd_status text, and the staged values.
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "tests/schemata/fixtures.h"

namespace resctrlfs::schemata {
namespace {

using testing::capset;
using testing::render;

// What the CbmPolicy of a row does.
enum class Pol { NONE, REJECT_CBM, REJECT_HIERARCHY };

struct Row {
  const char* caps;
  GroupMode mode;
  std::string input;
  int err;  // 0: success
  const char* msg;
  const char* staged;     // render() of the staged values
  const char* mbsc = "";  // render() of mba_sc_applied
  Pol pol = Pol::NONE;
  const char* pol_msg = "";
  unsigned closid = 0;
};

// A policy that fails every call of one kind with a given message.
class RejectingPolicy final : public CbmPolicy {
 public:
  RejectingPolicy(Pol p, std::string msg) : p_(p), msg_(std::move(msg)) {}
  std::optional<Error> check_locksetup_hierarchy(const Schema&, int) override {
    if (p_ == Pol::REJECT_HIERARCHY) return Error::make(EINVAL, msg_);
    return std::nullopt;
  }
  std::optional<Error> check_cbm(const Schema&, int, uint32_t) override {
    if (p_ == Pol::REJECT_CBM) return Error::make(EINVAL, msg_);
    return std::nullopt;
  }

 private:
  Pol p_;
  std::string msg_;
};

constexpr GroupMode SH = GroupMode::SHAREABLE;
constexpr GroupMode EX = GroupMode::EXCLUSIVE;
constexpr GroupMode LS = GroupMode::PSEUDO_LOCKSETUP;
constexpr GroupMode LK = GroupMode::PSEUDO_LOCKED;

const char* const kI = "intel-2s";
const char* const kCdp = "intel-cdp";
const char* const kL2 = "intel-l2cdp";
const char* const kSc = "intel-mba_MBps";
const char* const kAmd = "amd";

std::string S(const char* s, size_t n) { return std::string(s, n); }

const std::vector<Row>& rows() {
  static const std::vector<Row> r = {
      // --- step 1: trailing newline (case 1): EINVAL, no message (LCS untouched).
      {kI, SH, "L3:0=3", EINVAL, "", ""},
      {kI, SH, "", EINVAL, "", ""},
      {kI, LK, "L3:0=3", EINVAL, "", ""},  // checked before the pseudo-locked test
      // --- step 2: pseudo-locked group.
      {kI, LK, "L3:0=3\n", EINVAL, "Resource group is pseudo-locked\n", ""},
      // --- step 3: lines and names.
      {kI, SH, "L3:0=3\n\n", EINVAL, "Missing ':'\n", ""},  // case 2
      {kI, SH, "\n", EINVAL, "Missing ':'\n", ""},
      {kI, SH, "L3=3\n", EINVAL, "Missing ':'\n", ""},
      {kI, SH, "L3:0=3\nMB\n", EINVAL, "Missing ':'\n", ""},
      {kI, SH, "L3:\n", EINVAL, "Missing 'L3' value\n", ""},
      {kI, SH, " L3 :\n", EINVAL, "Missing 'L3' value\n", ""},
      {kI, SH, "foo:\n", EINVAL, "Missing 'foo' value\n", ""},
      {kI, SH, ":\n", EINVAL, "Missing '' value\n", ""},
      {kI, SH, "l3:0=3\n", EINVAL, "Unknown or unsupported resource name 'l3'\n", ""},  // case 10
      {kI, SH, ":0=3\n", EINVAL, "Unknown or unsupported resource name ''\n", ""},
      {kI, SH, "L3CODE:0=3\n", EINVAL, "Unknown or unsupported resource name 'L3CODE'\n", ""},
      {kI, SH, "SMBA:0=3\n", EINVAL, "Unknown or unsupported resource name 'SMBA'\n", ""},
      {kCdp, SH, "L3:0=3\n", EINVAL, "Unknown or unsupported resource name 'L3'\n", ""},  // case 16
      {kL2, SH, "L2:0=3\n", EINVAL, "Unknown or unsupported resource name 'L2'\n", ""},
      {kI, SH, "MB:0=50\n", EINVAL, "Unknown or unsupported resource name 'MB'\n", "", "",
       Pol::NONE, "", 8},  // CLOSID 8 is beyond MB's 8 CLOSIDs
      {kI, SH, "L3:0=3\n", 0, "", "L3:0=3", "", Pol::NONE, "", 8},
      // --- names and values are trimmed, ids are not (case 4).
      {kI, SH, " L3 :0= 3 \n", 0, "", "L3:0=3"},
      {kI, SH, "\tL3\t:0=3\n", 0, "", "L3:0=3"},
      {kI, SH, "L3:0= f ;1=f\n", 0, "", "L3:0=f L3:1=f"},
      {kI, SH, "L3:0=3\r\n", 0, "", "L3:0=3"},
      {kI, SH, "L3:0=3\xa0\n", 0, "", "L3:0=3"},  // the kernel's isspace() includes NBSP
      {kI, SH, "L3: 0=3\n", EINVAL, "Missing '=' or non-numeric domain\n", ""},
      {kI, SH, "L3:0 =3\n", EINVAL, "Missing '=' or non-numeric domain\n", ""},
      {kI, SH, "L3:0\n", EINVAL, "Missing '=' or non-numeric domain\n", ""},
      {kI, SH, "L3:=3\n", EINVAL, "Missing '=' or non-numeric domain\n", ""},
      {kI, SH, "L3:;0=3\n", EINVAL, "Missing '=' or non-numeric domain\n", ""},
      {kI, SH, "L3:0=3;;1=3\n", EINVAL, "Missing '=' or non-numeric domain\n", ""},
      {kI, SH, "L3:x=3\n", EINVAL, "Missing '=' or non-numeric domain\n", ""},
      {kI, SH, "L3:-0=3\n", EINVAL, "Missing '=' or non-numeric domain\n", ""},
      {kI, SH, "L3:0x0=3\n", EINVAL, "Missing '=' or non-numeric domain\n", ""},
      {kI, SH, "L3:18446744073709551616=3\n", EINVAL, "Missing '=' or non-numeric domain\n", ""},
      {kI, SH, "L3: \n", EINVAL, "Missing '=' or non-numeric domain\n", ""},
      {kI, SH, "L3:+0=3\n", 0, "", "L3:0=3"},
      {kI, SH, "L3:001=3\n", 0, "", "L3:1=3"},
      {kI, SH, "L3:0=3;\n", 0, "", "L3:0=3"},  // case 3
      // --- unknown domain: EINVAL without a message (case 5).
      {kI, SH, "L3:7=3\n", EINVAL, "", ""},
      {kI, SH, "L3:0=3;7=3\n", EINVAL, "", ""},
      {kI, SH, "L3:4294967296=3\n", EINVAL, "", ""},
      {kI, SH, "L3:18446744073709551615=3\n", EINVAL, "", ""},
      {kI, SH, "L3:7=zz\n", EINVAL, "", ""},  // the domain is looked up before the value
      // --- duplicates (case 11), checked before the value.
      {kI, SH, "L3:0=3;0=7\n", EINVAL, "Duplicate domain 0\n", ""},
      {kI, SH, "L3:1=3\nL3:1=7\n", EINVAL, "Duplicate domain 1\n", ""},
      {kI, SH, "L3:0=3;00=zz\n", EINVAL, "Duplicate domain 0\n", ""},
      {kI, SH, "MB:1=30;1=40\n", EINVAL, "Duplicate domain 1\n", ""},
      {kCdp, SH, "L3CODE:0=3\nL3DATA:0=3\n", 0, "", "L3CODE:0=3 L3DATA:0=3"},
      {kCdp, SH, "L3DATA:0=3;0=3\n", EINVAL, "Duplicate domain 0\n", ""},
      // --- cache masks: hex syntax (case 6).
      {kI, SH, "L3:0=0x3\n", 0, "", "L3:0=3"},
      {kI, SH, "L3:0=0X3\n", 0, "", "L3:0=3"},
      {kI, SH, "L3:0=FF\n", 0, "", "L3:0=ff"},
      {kI, SH, "L3:0=+0x3f\n", 0, "", "L3:0=3f"},
      {kI, SH, "L3:0=0007ff\n", 0, "", "L3:0=7ff"},
      {kI, SH, "L3:0=zz\n", EINVAL, "Non-hex character in the mask zz\n", ""},
      {kI, SH, "L3:0=\n", EINVAL, "Non-hex character in the mask \n", ""},
      {kI, SH, "L3:0=0x\n", EINVAL, "Non-hex character in the mask 0x\n", ""},
      {kI, SH, "L3:0=-1\n", EINVAL, "Non-hex character in the mask -1\n", ""},
      {kI, SH, "L3:0=3 3\n", EINVAL, "Non-hex character in the mask 3 3\n", ""},
      {kI, SH, "L3:0=f=3\n", EINVAL, "Non-hex character in the mask f=3\n", ""},
      {kI, SH, "L3:0=++3\n", EINVAL, "Non-hex character in the mask ++3\n", ""},
      {kI, SH, "L3:0=0x0x3\n", EINVAL, "Non-hex character in the mask 0x0x3\n", ""},
      {kI, SH, "L3:0=10000000000000000\n", EINVAL,
       "Non-hex character in the mask 10000000000000000\n", ""},  // overflows unsigned long
      // --- cache masks: range (cases 7, 9).
      {kI, SH, "L3:0=0\n", EINVAL, "Mask out of range\n", ""},
      {kI, SH, "L3:0=800\n", EINVAL, "Mask out of range\n", ""},
      {kI, SH, "L3:0=1000\n", EINVAL, "Mask out of range\n", ""},
      {kI, SH, "L3:0=100000000\n", EINVAL, "Mask out of range\n", ""},
      {kI, SH, "L3:0=ffffffffffffffff\n", EINVAL, "Mask out of range\n", ""},
      {kAmd, SH, "L3:0=0\n", 0, "", "L3:0=0"},
      {kAmd, SH, "L3:7=ffff\n", 0, "", "L3:7=ffff"},
      {kAmd, SH, "L3:0=10000\n", EINVAL, "Mask out of range\n", ""},
      // --- contiguity (case 8) and minimum bits.
      {kI, SH, "L3:0=f7\n", EINVAL, "The mask f7 has non-consecutive 1-bits\n", ""},
      {kI, SH, "L3:0=0xF7\n", EINVAL, "The mask f7 has non-consecutive 1-bits\n", ""},
      {kI, SH, "L3:0=5\n", EINVAL, "The mask 5 has non-consecutive 1-bits\n", ""},
      {kI, SH, "L3:0=7ff\n", 0, "", "L3:0=7ff"},
      {kI, SH, "L3:0=400\n", 0, "", "L3:0=400"},
      {kAmd, SH, "L3:0=f0f\n", 0, "", "L3:0=f0f"},
      {"haswell", SH, "L3:0=1\n", EINVAL, "Need at least 2 bits in the mask\n", ""},
      {"haswell", SH, "L3:0=80000\n", EINVAL, "Need at least 2 bits in the mask\n", ""},
      {"haswell", SH, "L3:0=3\n", 0, "", "L3:0=3"},
      {"haswell", SH, "L3:0=fffff\n", 0, "", "L3:0=fffff"},
      {"haswell", SH, "L3:0=100000\n", EINVAL, "Mask out of range\n", ""},
      {"sparse-min2", SH, "L3:0=d\n", EINVAL, "Need at least 2 bits in the mask\n", ""},
      {"sparse-min2", SH, "L3:0=1b\n", 0, "", "L3:0=1b"},
      {"sparse-min2", SH, "L3:0=0\n", EINVAL, "Mask out of range\n", ""},
      // --- bandwidth (cases 12-14).
      {kI, SH, "L3:0=3\nMB:0=5\n", EINVAL, "MB value 5 out of range [10,100]\n", ""},
      {kI, SH, "MB:0=15\n", 0, "", "MB:0=20"},
      {kI, SH, "MB:0=11\n", 0, "", "MB:0=20"},
      {kI, SH, "MB:0=95\n", 0, "", "MB:0=100"},
      {kI, SH, "MB:0=100\n", 0, "", "MB:0=100"},
      {kI, SH, "MB:0=10\n", 0, "", "MB:0=10"},
      {kI, SH, "MB:0=9\n", EINVAL, "MB value 9 out of range [10,100]\n", ""},
      {kI, SH, "MB:0=101\n", EINVAL, "MB value 101 out of range [10,100]\n", ""},
      {kI, SH, "MB:0=0\n", EINVAL, "MB value 0 out of range [10,100]\n", ""},
      {kI, SH, "MB:0=+50\n", 0, "", "MB:0=50"},
      {kI, SH, "MB:0=050\n", 0, "", "MB:0=50"},
      {kI, SH, "MB:0= 50 \n", 0, "", "MB:0=50"},
      {kI, SH, "MB:0=0x32\n", EINVAL, "Invalid MB value 0x32\n", ""},
      {kI, SH, "MB:0=50%\n", EINVAL, "Invalid MB value 50%\n", ""},
      {kI, SH, "MB:0=-10\n", EINVAL, "Invalid MB value -10\n", ""},
      {kI, SH, "MB:0=\n", EINVAL, "Invalid MB value \n", ""},
      {kI, SH, "MB:0=4294967296\n", EINVAL, "Invalid MB value 4294967296\n", ""},
      {"nonlinear-mb", SH, "MB:0=50\n", EINVAL, "No support for non-linear MB domains\n", ""},
      {"nonlinear-mb", SH, "MB:0=zz\n", EINVAL, "No support for non-linear MB domains\n", ""},
      {"nonlinear-mb", SH, "L3:0=3\n", 0, "", "L3:0=3"},
      {kAmd, SH, "MB:0=2048\n", 0, "", "MB:0=2048"},
      {kAmd, SH, "MB:2=0\n", 0, "", "MB:2=0"},
      {kAmd, SH, "MB:5=17\n", 0, "", "MB:5=17"},  // gran 1: unchanged
      {kAmd, SH, "MB:0=2049\n", EINVAL, "MB value 2049 out of range [0,2048]\n", ""},
      {kAmd, SH, "SMBA:7=100\n", 0, "", "SMBA:7=100"},
      {kAmd, SH, "SMBA:0=x\n", EINVAL, "Invalid MB value x\n", ""},
      {kAmd, SH, "SMBA:0=4096\n", EINVAL, "MB value 4096 out of range [0,2048]\n", ""},
      {kAmd, SH, "SMBA:1=5\n", EINVAL, "", ""},  // no domain 1 on this machine
      // --- mba_MBps (case 17): any u32, stored at once, no duplicate detection.
      {kSc, SH, "MB:0=0\n", 0, "", "", "MB:0=0"},
      {kSc, SH, "MB:1=4294967295\n", 0, "", "", "MB:1=4294967295"},
      {kSc, SH, "MB:0=1;0=2\n", 0, "", "", "MB:0=1 MB:0=2"},
      {kSc, SH, "MB:0=500\nL3:0=zz\n", EINVAL, "Non-hex character in the mask zz\n", "",
       "MB:0=500"},
      {kSc, SH, "MB:0=500;1=x\n", EINVAL, "Invalid MB value x\n", "", "MB:0=500"},
      {kSc, SH, "MB:0=4294967296\n", EINVAL, "Invalid MB value 4294967296\n", ""},
      {kSc, SH, "MB:0=7\nL3:1=3\n", 0, "", "L3:1=3", "MB:0=7"},
      // --- several lines, any order; partial writes name only what they touch.
      {kI, SH, "L3:0=3;1=7\nMB:0=50;1=60\n", 0, "", "L3:0=3 L3:1=7 MB:0=50 MB:1=60"},
      {kI, SH, "MB:1=60\nL3:1=3\n", 0, "", "MB:1=60 L3:1=3"},
      {kL2, SH, "L2CODE:3=f\nL2DATA:0=1\nL3:1=3\n", 0, "", "L2CODE:3=f L2DATA:0=1 L3:1=3"},
      {kL2, SH, "L2CODE:4=f\n", EINVAL, "", ""},
      // --- the write ends at its first NUL, as the kernel's strings do.
      {kI, SH, S("L3:0=3\0garbage\n", 15), 0, "", "L3:0=3"},
      {kI, SH, S("L3:0=3\nMB:0=\0x\n", 15), EINVAL, "Invalid MB value \n", ""},
      {kI, SH, S("\0\n", 2), EINVAL, "Missing ':'\n", ""},
      // --- pseudo-locksetup groups.
      {kI, LS, "MB:0=50\n", EINVAL, "Cannot pseudo-lock MBA resource\n", ""},
      {kAmd, LS, "SMBA:0=50\n", EINVAL, "Cannot pseudo-lock MBA resource\n", ""},
      {kI, LS, "L3:0=3;1=zz\n", 0, "", "L3:0=3"},  // rest of the line ignored
      {kI, LS, "L3:0=3;0=3\n", 0, "", "L3:0=3"},
      {kI, LS, "L3:9=3;0=3\n", EINVAL, "", ""},
      {kI, LS, "L3:0=zz;1=3\n", EINVAL, "Non-hex character in the mask zz\n", ""},
      {kI, LS, "L3:0=3\nL3:1=7\n", 0, "", "L3:0=3 L3:1=7"},
      {kI, LS, "L3:0=zz\n", EINVAL, "Pseudo-locked region in hierarchy\n", "", "",
       Pol::REJECT_HIERARCHY, "Pseudo-locked region in hierarchy\n"},
      {kI, SH, "L3:0=3\n", 0, "", "L3:0=3", "", Pol::REJECT_HIERARCHY,
       "Pseudo-locked region in hierarchy\n"},  // only asked for pseudo-locksetup groups
      // --- group policy hooks run after the mask is valid.
      {kI, SH, "L3:0=3\n", EINVAL, "Overlaps with exclusive group\n", "", "", Pol::REJECT_CBM,
       "Overlaps with exclusive group\n"},
      {kI, EX, "L3:1=3\n", EINVAL, "Overlaps with other group\n", "", "", Pol::REJECT_CBM,
       "Overlaps with other group\n"},
      {kI, SH, "L3:0=3\n", EINVAL, "CBM overlaps with pseudo-locked region\n", "", "",
       Pol::REJECT_CBM, "CBM overlaps with pseudo-locked region\n"},
      {kI, SH, "L3:0=f7\n", EINVAL, "The mask f7 has non-consecutive 1-bits\n", "", "",
       Pol::REJECT_CBM, "Overlaps with exclusive group\n"},
      {kI, SH, "MB:0=50\n", 0, "", "MB:0=50", "", Pol::REJECT_CBM, "never for MB"},
      // --- worked transcript (intel-2s).
      {kI, SH, "L3:0=f7\n", EINVAL, "The mask f7 has non-consecutive 1-bits\n", ""},
      {kI, SH, "L3:0=7;1=0x70\n", 0, "", "L3:0=7 L3:1=70"},
      {kI, SH, "MB:1=55\n", 0, "", "MB:1=60"},
      {kI, SH, "L3:0=7f8;1=78f\n", EINVAL, "The mask 78f has non-consecutive 1-bits\n", ""},
      {kI, SH, "L3:0=7f8;1=7f8\n", 0, "", "L3:0=7f8 L3:1=7f8"},
      {kI, SH, "L3:1=7\n", 0, "", "L3:1=7"},
  };
  return r;
}

TEST_CASE("parse_schemata: table of kernel rules and messages", "[schemata][parse]") {
  for (const Row& row : rows()) {
    const testing::CapSet cs = capset(row.caps);
    REQUIRE_FALSE(cs.resources.empty());
    const SchemaList list = cs.list();
    RejectingPolicy policy(row.pol, row.pol_msg);
    INFO("caps=" << row.caps << " mode=" << static_cast<int>(row.mode) << " input=\"" << row.input
                 << "\"");
    const ParseResult r = parse_schemata(row.input, list, row.mode, policy, row.closid);
    if (row.err == 0) {
      CHECK(r.status.ok());
      if (!r.status.ok()) INFO("message: " << r.status.error().message);
    } else {
      REQUIRE_FALSE(r.status.ok());
      CHECK(r.status.error().code == row.err);
      CHECK(r.status.error().message == row.msg);
    }
    CHECK(render(list, r.staged) == row.staged);
    CHECK(render(list, r.mba_sc_applied) == row.mbsc);
    CHECK(rejected_before_lock(row.input) == (row.input.empty() || row.input.back() != '\n'));
  }
}

// A policy that records every call, to check what fs/ is asked and when.
class RecordingPolicy final : public CbmPolicy {
 public:
  std::vector<std::string> calls;
  std::optional<Error> check_locksetup_hierarchy(const Schema& s, int d) override {
    calls.push_back("hier " + s.name + ":" + std::to_string(d));
    return std::nullopt;
  }
  std::optional<Error> check_cbm(const Schema& s, int d, uint32_t cbm) override {
    calls.push_back("cbm " + s.name + ":" + std::to_string(d) + "=" + std::to_string(cbm));
    return std::nullopt;
  }
};

TEST_CASE("parse_schemata: policy hooks are called in kernel order", "[schemata][parse]") {
  const SchemaList list = testing::intel_cdp().list();
  RecordingPolicy p;
  auto r = parse_schemata("L3DATA:1=f\nL3CODE:0=3;1=1\nMB:0=20\n", list, GroupMode::SHAREABLE, p);
  REQUIRE(r.status.ok());
  CHECK(p.calls == std::vector<std::string>{"cbm L3DATA:1=15", "cbm L3CODE:0=3", "cbm L3CODE:1=1"});

  RecordingPolicy q;
  r = parse_schemata("L3DATA:1=f;0=3\n", list, GroupMode::PSEUDO_LOCKSETUP, q);
  REQUIRE(r.status.ok());
  CHECK(q.calls == std::vector<std::string>{"hier L3DATA:1", "cbm L3DATA:1=15"});
  CHECK(render(list, r.staged) == "L3DATA:1=f");
}

TEST_CASE("parse_schemata: an error stages nothing", "[schemata][parse]") {
  const SchemaList list = testing::intel_2s().list();
  NoPolicy p;
  const auto r = parse_schemata("L3:0=3;1=7\nMB:0=50\nMB:1=zz\n", list, GroupMode::SHAREABLE, p);
  REQUIRE_FALSE(r.status.ok());
  CHECK(r.status.error().message == "Invalid MB value zz\n");
  CHECK(r.staged.empty());
}

}  // namespace
}  // namespace resctrlfs::schemata

namespace resctrlfs::schemata {
namespace {

TEST_CASE("parse_schemata: domain lookup with unsorted and sparse ids", "[schemata][parse]") {
  ResourceDesc l3 = testing::intel_l3();
  l3.domain_ids = {9, 3, 0, 12};  // the caller's order is kept for formatting
  const SchemaList list = testing::CapSet{"x", {l3}}.list();
  NoPolicy p;
  auto r = parse_schemata("L3:12=1;0=3;9=7;3=f\n", list, GroupMode::SHAREABLE, p);
  REQUIRE(r.status.ok());
  CHECK(testing::render(list, r.staged) == "L3:12=1 L3:0=3 L3:9=7 L3:3=f");
  r = parse_schemata("L3:1=1\n", list, GroupMode::SHAREABLE, p);
  REQUIRE_FALSE(r.status.ok());
  CHECK(r.status.error().message.empty());
  r = parse_schemata("L3:3=1;3=1\n", list, GroupMode::SHAREABLE, p);
  CHECK(r.status.error().message == "Duplicate domain 3\n");
  CHECK(format_schemata(list, 0, [](int, int d) { return static_cast<uint32_t>(d); }) ==
        "    L3:9=9;3=3;0=0;12=c\n");
}

TEST_CASE("parse_schemata: 4096 domains in one write", "[schemata][parse]") {
  ResourceDesc l3 = testing::intel_l3();
  l3.domain_ids.clear();
  std::string text = "L3:";
  for (int d = 0; d < 4096; ++d) {
    l3.domain_ids.push_back(d);
    text += (d ? ";" : "") + std::to_string(d) + "=" + (d % 2 ? "7ff" : "1");
  }
  const SchemaList list = testing::CapSet{"x", {l3}}.list();
  NoPolicy p;
  auto r = parse_schemata(text + "\n", list, GroupMode::SHAREABLE, p);
  REQUIRE(r.status.ok());
  REQUIRE(r.staged.size() == 4096);
  CHECK(r.staged[4095].domain_id == 4095);
  CHECK(r.staged[4095].value == 0x7ff);
  r = parse_schemata(text + ";4095=1\n", list, GroupMode::SHAREABLE, p);
  CHECK(r.status.error().message == "Duplicate domain 4095\n");
}

}  // namespace
}  // namespace resctrlfs::schemata

namespace resctrlfs::schemata {
namespace {

TEST_CASE("parse_schemata: a bandwidth resource's own label in its messages", "[schemata][parse]") {
  // Ours (CB, cache bandwidth allocation): MB's rules and texts with the
  // resource's name; MB and SMBA keep the kernel's "MB".
  ResourceDesc cb = testing::intel_mb();
  cb.name = "CB";
  cb.resource_index = 5;
  cb.bw_label = "CB";
  const SchemaList list = testing::CapSet{"x", {testing::intel_mb(), cb}}.list();
  NoPolicy p;
  auto r = parse_schemata("CB:0=5\n", list, GroupMode::SHAREABLE, p);
  REQUIRE_FALSE(r.status.ok());
  CHECK(r.status.error().message == "CB value 5 out of range [10,100]\n");
  r = parse_schemata("CB:1=x\n", list, GroupMode::SHAREABLE, p);
  REQUIRE_FALSE(r.status.ok());
  CHECK(r.status.error().message == "Invalid CB value x\n");
  r = parse_schemata("MB:0=5\n", list, GroupMode::SHAREABLE, p);
  REQUIRE_FALSE(r.status.ok());
  CHECK(r.status.error().message == "MB value 5 out of range [10,100]\n");
  r = parse_schemata("CB:0=44;1=100\n", list, GroupMode::SHAREABLE, p);
  REQUIRE(r.status.ok());
  CHECK(testing::render(list, r.staged) == "CB:0=50 CB:1=100");
}

}  // namespace
}  // namespace resctrlfs::schemata
