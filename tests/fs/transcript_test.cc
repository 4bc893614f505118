// A worked shell transcript (mount, mkdir, schemata and mode writes, cpus,
// rename, rmdir, with last_cmd_status after each) on the transcript's model
// platform (model_platform(): 16 L3 and 8 MBA CLOSIDs), driven through
// fs::Filesystem.
#include <catch2/catch.hpp>

#include "tests/fs/harness.h"

namespace resctrlfs::fs::testing {

TEST_CASE("section 12 transcript on the model platform", "[transcript]") {
  SimFixture f(model_platform());
  Shell& sh = *f.sh;
  CHECK(sh.ls("/") == std::set<std::string>{"cpus", "cpus_list", "info", "mode", "mon_data",
                                            "mon_groups", "schemata", "size", "tasks"});
  CHECK(sh.ls("/info") == std::set<std::string>{"L3", "L3_MON", "MB", "last_cmd_status"});
  CHECK(sh.lcs() == "ok\n");
  CHECK(sh.cat("/info/L3/cbm_mask") == "7ff\n");
  CHECK(sh.cat("/info/L3/min_cbm_bits") == "1\n");
  CHECK(sh.cat("/info/L3/num_closids") == "16\n");
  CHECK(sh.cat("/info/L3/shareable_bits") == "0\n");
  CHECK(sh.cat("/info/L3/sparse_masks") == "0\n");
  CHECK(sh.cat("/info/L3/bit_usage") == "0=SSSSSSSSSSS;1=SSSSSSSSSSS\n");
  CHECK(sh.cat("/info/MB/min_bandwidth") == "10\n");
  CHECK(sh.cat("/info/MB/bandwidth_gran") == "10\n");
  CHECK(sh.cat("/info/MB/delay_linear") == "1\n");
  CHECK(sh.cat("/info/MB/num_closids") == "8\n");
  CHECK(sh.cat("/info/MB/thread_throttle_mode") == "max\n");
  CHECK(sh.cat("/info/L3_MON/num_rmids") == "224\n");
  CHECK(sh.cat("/info/L3_MON/mon_features") == "llc_occupancy\nmbm_total_bytes\nmbm_local_bytes\n");
  CHECK(sh.cat("/info/L3_MON/max_threshold_occupancy") == "65536\n");
  CHECK(sh.cat("/schemata") == "    MB:0=100;1=100\n    L3:0=7ff;1=7ff\n");
  CHECK(sh.cat("/size") == "    MB:0=100;1=100\n    L3:0=16777211;1=16777211\n");
  CHECK(sh.cat("/cpus") == "ff\n");
  CHECK(sh.cat("/cpus_list") == "0-7\n");
  CHECK(sh.cat("/mode") == "shareable\n");
  CHECK(sh.ls("/mon_data") == std::set<std::string>{"mon_L3_00", "mon_L3_01"});
  CHECK(sh.ls("/mon_data/mon_L3_00") ==
        std::set<std::string>{"llc_occupancy", "mbm_local_bytes", "mbm_total_bytes"});
  REQUIRE(sh.mkdir("/p0") == 0);
  CHECK(sh.cat("/p0/schemata") == "    MB:0=100;1=100\n    L3:0=7ff;1=7ff\n");
  CHECK(sh.cat("/p0/cpus") == "00\n");
  CHECK(sh.cat("/p0/cpus_list") == "\n");
  CHECK(sh.cat("/p0/mode") == "shareable\n");
  CHECK(sh.echo("/p0/schemata", "L3:0=f7") == EINVAL);
  CHECK(sh.lcs() == "The mask f7 has non-consecutive 1-bits\n");
  CHECK(sh.echo("/p0/schemata", "L3:0=7;1=0x70") == 0);
  CHECK(sh.echo("/p0/schemata", "MB:1=55") == 0);
  CHECK(sh.cat("/p0/schemata") == "    MB:0=100;1=60\n    L3:0=7;1=70\n");
  CHECK(sh.echo("/schemata", "L3:0=7f8;1=78f") == EINVAL);
  CHECK(sh.lcs() == "The mask 78f has non-consecutive 1-bits\n");
  CHECK(sh.echo("/schemata", "L3:0=7f8;1=7f8") == 0);
  CHECK(sh.echo("/p0/mode", "exclusive") == EINVAL);
  CHECK(sh.lcs() == "Schemata overlaps\n");
  CHECK(sh.echo("/p0/schemata", "L3:1=7") == 0);
  CHECK(sh.echo("/p0/mode", "exclusive") == 0);
  CHECK(sh.cat("/info/L3/bit_usage") == "0=SSSSSSSSEEE;1=SSSSSSSSEEE\n");
  REQUIRE(sh.mkdir("/p1") == 0);
  CHECK(sh.cat("/p1/schemata") == "    MB:0=100;1=100\n    L3:0=7f8;1=7f8\n");
  CHECK(sh.echo("/p1/cpus_list", "4-5") == 0);
  CHECK(sh.cat("/cpus") == "cf\n");
  CHECK(sh.cat("/p1/cpus") == "30\n");
  REQUIRE(sh.mkdir("/p1/mon_groups/m1") == 0);
  CHECK(sh.echo("/p1/mon_groups/m1/cpus_list", "4") == 0);
  CHECK(sh.cat("/p1/mon_groups/m1/cpus_list") == "4\n");
  CHECK(sh.echo("/p1/cpus_list", "4-5") == 0);
  CHECK(sh.cat("/p1/mon_groups/m1/cpus_list") == "\n");
  CHECK(sh.mv("/p1", "/p2") == EPERM);
  CHECK(sh.lcs() == "Source must be a MON group\n");
  CHECK(sh.rmdir("/p1") == 0);
  CHECK(sh.cat("/cpus_list") == "0-7\n");
}

}  // namespace resctrlfs::fs::testing
