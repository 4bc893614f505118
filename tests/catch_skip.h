// Skipping a Catch2 (v2, which has no skip of its own) test case that cannot
// run here: RESCTRLFS_SKIP(reason) says why (WARN) and leaves the test case;
// the test program's main then exits 77 unless a test failed, and ctest
// reports the test as Skipped (SKIP_RETURN_CODE), never Passed. Each
// discovered ctest entry runs one test case, so the skip is that test case's.
#pragma once

#include <catch2/catch.hpp>

namespace resctrlfs::test {

inline bool& skipped() {
  static bool s = false;
  return s;
}

}  // namespace resctrlfs::test

#define RESCTRLFS_SKIP(reason)           \
  do {                                   \
    WARN("SKIPPED: " << reason);         \
    ::resctrlfs::test::skipped() = true; \
    return;                              \
  } while (0)
