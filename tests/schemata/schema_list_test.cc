// Tests of the schema list (order, names, column width, CDP halving) and of
// the read formats: schemata, size, pseudo-locksetup/locked renderings and
// io_alloc_cbm, and the schemata reads of the worked transcript.
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

#include "tests/schemata/fixtures.h"

namespace resctrlfs::schemata {
namespace {

std::vector<std::string> names(const SchemaList& l) {
  std::vector<std::string> v;
  for (const Schema& s : l.schemas) v.push_back(s.name);
  return v;
}

// Current values held in a map; anything unset reads as the default.
struct Values {
  const SchemaList& list;
  std::map<std::pair<int, int>, uint32_t> v;
  ValueGetter getter() const {
    return [this](int si, int d) {
      auto it = v.find({si, d});
      return it != v.end() ? it->second : list.schemas.at(static_cast<size_t>(si)).default_value();
    };
  }
};

TEST_CASE("schema list: order is the reverse of enumeration", "[schemata][list]") {
  using V = std::vector<std::string>;
  CHECK(names(testing::intel_2s().list()) == V{"MB", "L3"});
  CHECK(names(testing::intel_cdp().list()) == V{"MB", "L3DATA", "L3CODE"});
  CHECK(names(testing::intel_l2cdp().list()) == V{"MB", "L2DATA", "L2CODE", "L3"});
  CHECK(names(testing::amd().list()) == V{"SMBA", "MB", "L3"});
  ResourceDesc l2 = testing::intel_l2();
  l2.cdp_enabled = false;
  CHECK(names(testing::CapSet{"x", {testing::intel_l3(true), l2}}.list()) ==
        V{"L2", "L3DATA", "L3CODE"});
}

TEST_CASE("schema list: name width rule", "[schemata][list]") {
  // CDP-capable L3 mounted without CDP counts as 2 + 4 (the width is the
  // longest schema name the mount could show).
  CHECK(testing::intel_2s().list().name_width == 6);
  CHECK(testing::intel_cdp().list().name_width == 6);
  // No CDP capability anywhere: L3 + MB is width 2.
  ResourceDesc l3 = testing::intel_l3();
  l3.cdp_capable = false;
  CHECK(testing::CapSet{"x", {l3, testing::intel_mb()}}.list().name_width == 2);
  // SMBA without CDP capability: width 4.
  ResourceDesc al3 = testing::amd_l3();
  al3.cdp_capable = false;
  CHECK(testing::CapSet{"x", {al3, testing::amd_bw("MB", 2), testing::amd_bw("SMBA", 3)}}
            .list()
            .name_width == 4);
  // The global never shrinks across remounts, and grows when needed.
  unsigned global = 0;
  build_schema_list(testing::intel_2s().resources, global);
  CHECK(global == 6);
  const SchemaList narrow = build_schema_list({l3}, global);
  CHECK(narrow.name_width == 6);
  CHECK(global == 6);
  unsigned g2 = 3;
  CHECK(build_schema_list({l3}, g2).name_width == 3);
}

TEST_CASE("schema list: a resource of ours widens its own mount only", "[schemata][list]") {
  ResourceDesc l3 = testing::intel_l3();
  l3.cdp_capable = false;
  ResourceDesc stlb = testing::intel_l3();
  stlb.name = "STLB";
  stlb.cdp_capable = false;
  stlb.resource_index = 5;
  stlb.extension = true;
  unsigned global = 0;
  const SchemaList with = build_schema_list({l3, stlb}, global);
  CHECK(names(with) == std::vector<std::string>{"STLB", "L3"});
  CHECK(with.name_width == 4);
  CHECK(global == 2);  // a later mount without it prints as the kernel does
  CHECK(build_schema_list({l3}, global).name_width == 2);
}

TEST_CASE("schema list: num_closid halves under CDP, capabilities copied", "[schemata][list]") {
  const SchemaList cdp = testing::intel_cdp().list();
  CHECK(cdp.schemas[cdp.find("L3CODE")].num_closid == 8);
  CHECK(cdp.schemas[cdp.find("L3DATA")].num_closid == 8);
  CHECK(cdp.schemas[cdp.find("MB")].num_closid == 8);
  const SchemaList plain = testing::intel_2s().list();
  const Schema& l3 = plain.schemas[plain.find("L3")];
  CHECK(l3.num_closid == 16);
  CHECK(l3.resource_name == "L3");
  CHECK(l3.conf_type == ConfType::NONE);
  CHECK(l3.full_mask() == 0x7ff);
  CHECK(cdp.schemas[cdp.find("L3CODE")].resource_name == "L3");
  CHECK(cdp.schemas[cdp.find("L3CODE")].conf_type == ConfType::CODE);
  CHECK(cdp.schemas[cdp.find("L3DATA")].conf_type == ConfType::DATA);
  CHECK(cdp.find("L3") == -1);
  CHECK(plain.find("L3CODE") == -1);
}

TEST_CASE("schema list: default values", "[schemata][list]") {
  const SchemaList i = testing::intel_2s().list();
  CHECK(i.schemas[i.find("L3")].default_value() == 0x7ff);
  CHECK(i.schemas[i.find("MB")].default_value() == 100);
  const SchemaList a = testing::amd().list();
  CHECK(a.schemas[a.find("L3")].default_value() == 0xffff);
  CHECK(a.schemas[a.find("SMBA")].default_value() == 2048);
  const SchemaList sc = testing::intel_mbps().list();
  CHECK(sc.schemas[sc.find("MB")].default_value() == 4294967295u);
}

TEST_CASE("format_schemata: worked transcript, CDP and mba_MBps renderings", "[schemata][format]") {
  const SchemaList l = testing::intel_2s().list();
  Values v{l, {}};
  CHECK(format_schemata(l, 0, v.getter()) == "    MB:0=100;1=100\n    L3:0=7ff;1=7ff\n");
  CHECK(format_size(l, v.getter()) == "    MB:0=100;1=100\n    L3:0=16777211;1=16777211\n");
  // After "L3:0=7;1=0x70" and "MB:1=55" (stored as 60).
  v.v[{l.find("L3"), 0}] = 0x7;
  v.v[{l.find("L3"), 1}] = 0x70;
  v.v[{l.find("MB"), 1}] = 60;
  CHECK(format_schemata(l, 1, v.getter()) == "    MB:0=100;1=60\n    L3:0=7;1=70\n");
  CHECK(format_size(l, v.getter()) == "    MB:0=100;1=60\n    L3:0=4575603;1=4575603\n");
  // CLOSIDs beyond a schema's num_closid hide that line (MB has 8).
  CHECK(format_schemata(l, 8, v.getter()) == "    L3:0=7;1=70\n");

  const SchemaList cdp = testing::intel_cdp().list();
  Values c{cdp, {}};
  CHECK(format_schemata(cdp, 0, c.getter()) ==
        "    MB:0=100;1=100\nL3DATA:0=7ff;1=7ff\nL3CODE:0=7ff;1=7ff\n");

  const SchemaList sc = testing::intel_mbps().list();
  Values s{sc, {}};
  CHECK(format_schemata(sc, 0, s.getter()) ==
        "    MB:0=4294967295;1=4294967295\n    L3:0=7ff;1=7ff\n");
  CHECK(format_size(sc, s.getter()) ==
        "    MB:0=4294967295;1=4294967295\n"
        "    L3:0=16777211;1=16777211\n");
}

TEST_CASE("format_schemata: AMD, unpadded values", "[schemata][format]") {
  const SchemaList l = testing::amd().list();
  Values v{l, {}};
  v.v[{l.find("MB"), 2}] = 16;
  v.v[{l.find("L3"), 5}] = 0xf;
  v.v[{l.find("L3"), 7}] = 0;
  CHECK(format_schemata(l, 0, v.getter()) ==
        "  SMBA:0=2048;2=2048;5=2048;7=2048\n"
        "    MB:0=2048;2=16;5=2048;7=2048\n"
        "    L3:0=ffff;2=ffff;5=f;7=0\n");
  // 32 MiB / 16 bits = 2 MiB per bit.
  CHECK(format_size(l, v.getter()) ==
        "  SMBA:0=2048;2=2048;5=2048;7=2048\n"
        "    MB:0=2048;2=16;5=2048;7=2048\n"
        "    L3:0=33554432;2=33554432;5=8388608;7=0\n");
}

TEST_CASE("format: pseudo-locksetup and pseudo-locked", "[schemata][format]") {
  const SchemaList l = testing::intel_2s().list();
  CHECK(format_schemata_locksetup(l) == "MB:uninitialized\nL3:uninitialized\n");
  CHECK(format_size_locksetup(l) == "    MB:0=0;1=0\n    L3:0=0;1=0\n");
  const SchemaList cdp = testing::intel_cdp().list();
  CHECK(format_schemata_locksetup(cdp) ==
        "MB:uninitialized\nL3DATA:uninitialized\nL3CODE:uninitialized\n");
  const Schema& l3 = l.schemas[l.find("L3")];
  CHECK(format_schemata_locked(l3, 1, 0x30) == "L3:1=30\n");
  CHECK(format_size_locked(l, l3, 1, 0x30) == "    L3:1=3050402\n");
  // 1 MiB 8-bit L2, mask 0x3 -> 262144 bytes.
  const SchemaList l2 = testing::intel_l2cdp().list();
  const Schema& l2d = l2.schemas[l2.find("L2DATA")];
  CHECK(cbm_to_size(l2d, 0x3) == 262144);
  CHECK(format_schemata_locked(l2d, 0, 0x3) == "L2:0=3\n");
}

TEST_CASE("format: empty schema list (monitor-only system)", "[schemata][format]") {
  unsigned w = 0;
  const SchemaList empty = build_schema_list({}, w);
  CHECK(format_schemata(empty, 0, [](int, int) { return 0u; }).empty());
  CHECK(format_size(empty, [](int, int) { return 0u; }).empty());
}

TEST_CASE("format_io_alloc_cbm: no name, unpadded hex", "[schemata][format]") {
  const SchemaList l = testing::amd().list();
  const Schema& l3 = l.schemas[l.find("L3")];
  CHECK(format_io_alloc_cbm(l3, [](int d) { return d == 2 ? 0xffu : 0xffffu; }) ==
        "0=ffff;2=ff;5=ffff;7=ffff\n");
}

TEST_CASE("group modes: the mode file's names, both ways", "[schemata][mode]") {
  const std::pair<GroupMode, const char*> rows[] = {
      {GroupMode::SHAREABLE, "shareable"},
      {GroupMode::EXCLUSIVE, "exclusive"},
      {GroupMode::PSEUDO_LOCKSETUP, "pseudo-locksetup"},
      {GroupMode::PSEUDO_LOCKED, "pseudo-locked"},
  };
  for (const auto& [mode, name] : rows) {
    CHECK(std::string(group_mode_name(mode)) == name);
    CHECK(group_mode_from_name(name) == mode);
  }
  for (const char* bad : {"", "Shareable", "shareable\n", "pseudo_locked", "exclusive "}) {
    INFO(bad);
    CHECK(!group_mode_from_name(bad).has_value());
  }
}

}  // namespace
}  // namespace resctrlfs::schemata
