// Catch2 main for the reliability unit tests: exits 77 (ctest: Skipped) when a test
// case skipped itself (tests/catch_skip.h) and none failed.
#define CATCH_CONFIG_RUNNER
#include "tests/catch_skip.h"

int main(int argc, char** argv) {
  const int failed = Catch::Session().run(argc, argv);
  if (failed == 0 && resctrlfs::test::skipped()) return 77;
  return failed;
}
