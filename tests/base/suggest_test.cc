// Tests of base/suggest.h: which typos get a suggestion and which do not.
#include "base/suggest.h"

#include <catch2/catch.hpp>

using resctrlfs::closest_name;
using resctrlfs::did_you_mean;
using resctrlfs::edit_distance;

TEST_CASE("edit distance counts a swap of neighbours as one edit") {
  CHECK(edit_distance("stauts", "status") == 1);
  CHECK(edit_distance("amd2s", "amd-2s") == 1);
  CHECK(edit_distance("", "abc") == 3);
  CHECK(edit_distance("same", "same") == 0);
}

TEST_CASE("a near miss is suggested, another word is not") {
  const std::vector<std::string> platforms = {"intel-2s", "intel-l2", "amd-2s", "intel-snc"};
  CHECK(closest_name("amd2s", platforms) == "amd-2s");
  CHECK(closest_name("intel-2S", platforms) == "intel-2s");
  CHECK(closest_name("zen4", platforms).empty());
  CHECK(closest_name("", platforms).empty());
  CHECK(did_you_mean("stauts", {"status", "stats"}) == " (did you mean status?)");
  CHECK(did_you_mean("xyzzy", {"status", "stats"}).empty());
}
