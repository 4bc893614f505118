// Tests the tasks files for callers in another pid namespace than the
// daemon's: the kernel reads a written id in the writer's namespace and
// lists ids as the reader sees them, leaving out the threads the reader
// cannot see (fs::PidView, from the TaskSource).
#include <catch2/catch.hpp>

#include "tests/fs/harness.h"

namespace resctrlfs::fs::testing {

namespace {

// Daemon threads 1, 100, 200, 300; threads 200 and 300 live in a
// namespace where they are 1 and 2, and 200 is the caller there.
void two_namespaces(SimFixture& f) {
  for (pid_t t : {1, 100, 200, 300}) f.tasks.add(t);
  f.tasks.add_namespace({200}, {{200, 1}, {300, 2}});
}

Caller in_namespace() { return Caller{200, 0, 0}; }

}  // namespace

TEST_CASE("tasks: a reader in another pid namespace sees only its threads, with its ids",
          "[tasks][pidns]") {
  for (bool tracked : {false, true}) {
    SimFixture f("intel-2s");
    Shell& sh = *f.sh;
    two_namespaces(f);
    f.fs->track_threads(tracked);
    CHECK(sh.cat("/tasks") == "1\n100\n200\n300\n");
    CHECK(sh.cat("/tasks", in_namespace()) == "1\n2\n");
    REQUIRE(sh.mkdir("/p0") == 0);
    CHECK(sh.echo("/p0/tasks", "100,300") == 0);
    CHECK(sh.cat("/p0/tasks", in_namespace()) == "2\n");
    CHECK(sh.cat("/tasks", in_namespace()) == "1\n");
    CHECK(sh.cat("/p0/tasks") == "100\n300\n");
  }
}

TEST_CASE("tasks: a writer in another pid namespace moves the thread its id names",
          "[tasks][pidns]") {
  SimFixture f("intel-2s");
  Shell& sh = *f.sh;
  two_namespaces(f);
  REQUIRE(sh.mkdir("/p0") == 0);
  // Its 1 is the daemon's 200, not the daemon's 1.
  CHECK(sh.echo("/p0/tasks", "1", in_namespace()) == 0);
  CHECK(sh.cat("/p0/tasks") == "200\n");
  // 0 is the writer itself.
  CHECK(sh.echo("/tasks", "0", in_namespace()) == 0);
  CHECK(sh.cat("/p0/tasks").empty());
  // An id its namespace does not have, though the daemon's does: ESRCH,
  // worded with the id as written.
  CHECK(sh.echo("/p0/tasks", "2,100", in_namespace()) == ESRCH);
  CHECK(sh.lcs() == "No task 100\nError while processing task 100\n");
  CHECK(sh.cat("/p0/tasks") == "300\n");  // 2 (the daemon's 300) was moved first
}

TEST_CASE("tasks: a caller of the daemon's namespace costs one look, other files none",
          "[tasks][pidns]") {
  SimFixture f("intel-2s");
  Shell& sh = *f.sh;
  two_namespaces(f);
  REQUIRE(sh.mkdir("/p0") == 0);
  f.tasks.pid_view_calls = 0;
  CHECK(sh.echo("/p0/tasks", "1,100,300") == 0);
  CHECK(f.tasks.pid_view_calls == 1);
  CHECK(sh.cat("/p0/tasks") == "1\n100\n300\n");
  CHECK(f.tasks.pid_view_calls == 2);
  CHECK(sh.cat("/p0/cpus_list") == "\n");
  CHECK(sh.echo("/p0/cpus_list", "1") == 0);
  CHECK(f.tasks.pid_view_calls == 2);
}

}  // namespace resctrlfs::fs::testing
