// The one Catch2 main of every unit-test executable, compiled once per build
// tree into resctrlfs_catch_main (Catch2 v2's implementation is ~20 s of
// compile; it was paid once per executable). A test case that called
// RESCTRLFS_SKIP (tests/catch_skip.h) and nothing failed: exit 77, which
// ctest reports as Skipped.
#define CATCH_CONFIG_RUNNER
#include "tests/catch_skip.h"

int main(int argc, char** argv) {
  const int failed = Catch::Session().run(argc, argv);
  if (failed == 0 && resctrlfs::test::skipped()) return 77;
  return failed;
}
