// Tests the tasks files rendered from the thread table that fork, exec and
// exit events keep (Filesystem::track_threads), its rescan when events were
// lost (rescan_threads), and the walk of the TaskSource without tracking.
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cerrno>
#include <nlohmann/json.hpp>
#include <vector>

#include "tests/fs/harness.h"

namespace resctrlfs::fs::testing {

TEST_CASE("tasks from the thread table: events, not the task source", "[tasks][threads]") {
  SimFixture f("intel-2s");
  Shell& sh = *f.sh;
  f.tasks.add(10);
  f.tasks.add(12);
  f.fs->track_threads(true);  // reads 10 and 12 once
  CHECK(sh.cat("/tasks") == "10\n12\n");
  // A thread the events did not report is not listed: the table, not a walk.
  f.tasks.add(14);
  CHECK(sh.cat("/tasks") == "10\n12\n");
  // A fork is, even before the task source shows it; listed in id order.
  f.fs->on_thread_fork(10, 11, 10);
  CHECK(sh.cat("/tasks") == "10\n11\n12\n");
  REQUIRE(sh.mkdir("/p0") == 0);
  REQUIRE(sh.mkdir("/p0/mon_groups/m") == 0);
  CHECK(sh.cat("/p0/tasks").empty());
  // Moves are seen by the next read of every file involved (the rendered
  // text is cached per group).
  CHECK(sh.echo("/p0/tasks", "12") == 0);
  CHECK(sh.cat("/tasks") == "10\n11\n");
  CHECK(sh.cat("/p0/tasks") == "12\n");
  CHECK(sh.echo("/p0/mon_groups/m/tasks", "12") == 0);
  CHECK(sh.cat("/p0/tasks") == "12\n");
  CHECK(sh.cat("/p0/mon_groups/m/tasks") == "12\n");
  // A child inherits its parent's group; an exit leaves it.
  f.fs->on_thread_fork(12, 13, 13);
  CHECK(sh.cat("/p0/mon_groups/m/tasks") == "12\n13\n");
  CHECK(sh.cat("/p0/tasks") == "12\n13\n");
  CHECK(sh.cat("/tasks") == "10\n11\n");
  f.tasks.remove(12);
  f.fs->on_exit(12);
  CHECK(sh.cat("/p0/mon_groups/m/tasks") == "13\n");
  f.fs->on_exit(11);
  CHECK(sh.cat("/tasks") == "10\n");
  // rmdir gives the threads back, seen by the parent's next read.
  CHECK(sh.rmdir("/p0/mon_groups/m") == 0);
  CHECK(sh.cat("/p0/tasks") == "13\n");
  CHECK(sh.rmdir("/p0") == 0);
  CHECK(sh.cat("/tasks") == "10\n13\n");
  // A moved thread the events have not told of yet (it exists) is listed.
  f.tasks.add(20);
  REQUIRE(sh.mkdir("/p1") == 0);
  CHECK(sh.echo("/p1/tasks", "20") == 0);
  CHECK(sh.cat("/p1/tasks") == "20\n");
}

TEST_CASE("tasks from the thread table: fds share one rendered buffer, a move renders a new one",
          "[tasks][threads]") {
  SimFixture f("intel-2s");
  Shell& sh = *f.sh;
  f.tasks.add(10);
  f.tasks.add(12);
  f.fs->track_threads(true);
  REQUIRE(sh.mkdir("/p0") == 0);
  auto ino = sh.resolve("/p0/tasks");
  REQUIRE(ino.ok());
  CHECK(sh.echo("/p0/tasks", "10") == 0);
  // Two reads at offset 0 without a change in between: the same buffer.
  auto a = f.fs->render_shared(*ino, root_caller());
  auto b = f.fs->render_shared(*ino, root_caller());
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK(**a == "10\n");
  CHECK(a->get() == b->get());
  // A move renders a new buffer for the next read at offset 0; the one an
  // fd holds keeps its snapshot.
  CHECK(sh.echo("/p0/tasks", "12") == 0);
  auto c = f.fs->render_shared(*ino, root_caller());
  REQUIRE(c.ok());
  CHECK(**c == "10\n12\n");
  CHECK(**a == "10\n");
  CHECK(a->get() != c->get());
  // render() gives the same text as a copy.
  CHECK(sh.cat("/p0/tasks") == "10\n12\n");
  // A file without a cached text renders a fresh buffer every time.
  auto s1 = f.fs->render_shared(*sh.resolve("/p0/cpus_list"), root_caller());
  REQUIRE(s1.ok());
  CHECK(**s1 == sh.cat("/p0/cpus_list"));
}

TEST_CASE("tasks from the thread table: exec leaves one thread", "[tasks][threads]") {
  SimFixture f("intel-2s");
  Shell& sh = *f.sh;
  f.tasks.add(30);
  f.fs->track_threads(true);
  f.fs->on_thread_fork(30, 31, 30);
  f.fs->on_thread_fork(30, 32, 30);
  f.fs->on_thread_fork(30, 40, 40);
  REQUIRE(sh.mkdir("/p0") == 0);
  f.tasks.add(32);
  CHECK(sh.echo("/p0/tasks", "32") == 0);
  CHECK(sh.cat("/tasks") == "30\n31\n40\n");
  CHECK(sh.cat("/p0/tasks") == "32\n");
  // Thread 31 calls exec: the process is left with one thread, id 30.
  f.fs->on_exec(30);
  CHECK(sh.cat("/tasks") == "30\n40\n");
  CHECK(sh.cat("/p0/tasks").empty());
}

namespace {

// Threads are tracked; process 10 is in the default group, and its child,
// process 20 with a second thread 21, is in the new group p0.
void process_with_thread_in_p0(SimFixture& f) {
  Shell& sh = *f.sh;
  f.tasks.add(10);
  f.fs->track_threads(true);
  REQUIRE(sh.mkdir("/p0") == 0);
  f.tasks.add(20);
  f.tasks.add(21);
  f.fs->on_thread_fork(10, 20, 20);
  f.fs->on_thread_fork(20, 21, 20);
  CHECK(sh.echo("/p0/tasks", "20") == 0);
  CHECK(sh.echo("/p0/tasks", "21") == 0);
}

}  // namespace

TEST_CASE("tasks from the thread table: an exited process is listed until it is reaped",
          "[tasks][threads]") {
  // The connector reports a process's exit when it exits; it stays a zombie
  // until its parent waits for it, and the kernel's tasks files (and /proc)
  // list it meanwhile. A thread other than the leader is gone at its exit.
  SimFixture f("intel-2s");
  Shell& sh = *f.sh;
  process_with_thread_in_p0(f);
  CHECK(sh.cat("/p0/tasks") == "20\n21\n");
  f.tasks.remove(21);
  f.fs->on_exit(21);
  CHECK(sh.cat("/p0/tasks") == "20\n");
  // 20 exited; its parent has not waited for it yet.
  f.fs->on_exit(20);
  CHECK(sh.cat("/p0/tasks") == "20\n");
  CHECK(sh.cat("/tasks") == "10\n");
  // Reaped: gone from every listing.
  f.tasks.remove(20);
  CHECK(sh.cat("/p0/tasks").empty());
  CHECK(sh.cat("/tasks") == "10\n");
  // A zombie reaped and its id taken by a new process before any listing:
  // the new process is the parent's, not the zombie's group.
  f.tasks.add(30);
  f.fs->on_thread_fork(10, 30, 30);
  CHECK(sh.echo("/p0/tasks", "30") == 0);
  f.fs->on_exit(30);
  f.tasks.remove(30);
  f.tasks.add(30);
  f.fs->on_thread_fork(10, 30, 30);
  CHECK(sh.cat("/p0/tasks").empty());
  CHECK(sh.cat("/tasks") == "10\n30\n");
  // The daemon's events name the process: a leader that exits before its
  // other threads (pthread_exit) is listed while they run and until it is
  // reaped; a thread that is not the leader is gone at its exit, whatever
  // the task source says.
  f.tasks.add(40);
  f.tasks.add(41);
  f.fs->on_thread_fork(10, 40, 40);
  f.fs->on_thread_fork(40, 41, 40);
  f.fs->on_thread_exit(40, 40);
  CHECK(sh.cat("/tasks") == "10\n30\n40\n41\n");
  f.fs->on_thread_exit(41, 40);
  CHECK(sh.cat("/tasks") == "10\n30\n40\n");
  f.tasks.remove(41);
  f.tasks.remove(40);
  CHECK(sh.cat("/tasks") == "10\n30\n");
}

TEST_CASE("tasks from the thread table: an exit reported after its id was reused",
          "[tasks][threads]") {
  // A thread other than its process's first is reaped as it exits, and the
  // kernel reports the exit only afterwards: a fork that takes the freed id
  // can be reported before it.
  SimFixture f("intel-2s");
  Shell& sh = *f.sh;
  process_with_thread_in_p0(f);
  // 21 exits and is reaped; process 10 forks process 21 (a new process),
  // and then the exit of 20's thread 21 is reported.
  f.fs->on_thread_fork(10, 21, 21);
  f.fs->on_thread_exit(21, 20);
  CHECK(sh.cat("/tasks") == "10\n21\n");
  CHECK(sh.cat("/p0/tasks") == "20\n");
  // And a new thread of process 10 takes the id of 20's thread 22.
  f.tasks.add(22);
  f.fs->on_thread_fork(20, 22, 20);
  f.fs->on_thread_fork(10, 22, 10);
  f.fs->on_thread_exit(22, 20);
  CHECK(sh.cat("/tasks") == "10\n21\n22\n");
  CHECK(sh.cat("/p0/tasks") == "20\n");
  // Their own exits are theirs.
  f.tasks.remove(22);
  f.fs->on_thread_exit(22, 10);
  f.fs->on_thread_exit(21, 21);
  f.tasks.remove(21);
  CHECK(sh.cat("/tasks") == "10\n");
}

TEST_CASE("tasks from the thread table: a rescan after lost events", "[tasks][threads]") {
  SimFixture f("intel-2s");
  Shell& sh = *f.sh;
  f.tasks.add(10);
  f.tasks.add(11);
  f.tasks.add(12);
  f.fs->track_threads(true);
  REQUIRE(sh.mkdir("/p0") == 0);
  CHECK(sh.echo("/p0/tasks", "11") == 0);
  CHECK(sh.echo("/p0/tasks", "12") == 0);
  CHECK(sh.cat("/p0/tasks") == "11\n12\n");
  // Events were lost: 12 died, 15 was born; the table still says otherwise
  // until the rescan, which forgets 12's tags too.
  f.tasks.remove(12);
  f.tasks.add(15);
  CHECK(sh.cat("/p0/tasks") == "11\n12\n");
  CHECK(sh.cat("/tasks") == "10\n");
  f.fs->rescan_threads();
  CHECK(sh.cat("/p0/tasks") == "11\n");
  CHECK(sh.cat("/tasks") == "10\n15\n");
  // Id 12 is reused by a new thread of the default group.
  f.tasks.add(12);
  f.fs->on_thread_fork(10, 12, 12);
  CHECK(sh.cat("/tasks") == "10\n12\n15\n");
  CHECK(sh.cat("/p0/tasks") == "11\n");
}

// Only "no such thread" says a thread is gone. Out of descriptors (EMFILE)
// a /proc walk or lookup says nothing: the threads keep their groups.
TEST_CASE("tasks: a task source out of descriptors makes no thread look gone", "[tasks][threads]") {
  SimFixture f("intel-2s");
  Shell& sh = *f.sh;
  f.tasks.add(10);
  f.tasks.add(11);
  f.tasks.add(12);
  f.fs->track_threads(true);
  REQUIRE(sh.mkdir("/p0") == 0);
  REQUIRE(sh.echo("/p0/tasks", "11") == 0);
  REQUIRE(sh.echo("/p0/tasks", "12") == 0);
  // 12's process exited (a zombie until reaped); then events were lost.
  f.fs->on_thread_exit(12, 12);
  f.tasks.fail_with(EMFILE);
  f.fs->rescan_threads();
  f.fs->tick(std::chrono::steady_clock::now());
  f.fs->tick(std::chrono::steady_clock::now() + std::chrono::seconds(2));
  // The table cannot be trusted until a rescan succeeds: listings fail with
  // the walk's errno instead of showing a guess; moves of unknown tasks
  // fail with it instead of ESRCH.
  CHECK(sh.cat("/p0/tasks") == "ERRNO " + std::to_string(EMFILE));
  CHECK(sh.echo("/p0/tasks", "10") == EMFILE);
  CHECK(sh.cat("/info/last_cmd_status") ==
        "Cannot look up task 10: Too many open files; try again\nError while processing task "
        "10\n");
  // Descriptors are back: nothing was forgotten.
  f.tasks.fail_with(0);
  CHECK(sh.cat("/p0/tasks") == "11\n12\n");
  CHECK(sh.cat("/tasks") == "10\n");
  auto st = nlohmann::json::parse(f.fs->status_json());
  CHECK(st["thread_table_rescan_failures"].get<uint64_t>() >= 1);
  // The zombie is reaped once a lookup says so.
  f.tasks.remove(12);
  f.fs->tick(std::chrono::steady_clock::now() + std::chrono::seconds(4));
  CHECK(sh.cat("/p0/tasks") == "11\n");
}

TEST_CASE("tasks without tracking: a walk out of descriptors fails the read, forgets nothing",
          "[tasks][threads]") {
  SimFixture f("intel-2s");
  Shell& sh = *f.sh;
  f.tasks.add(10);
  f.tasks.add(11);
  REQUIRE(sh.mkdir("/p0") == 0);
  REQUIRE(sh.echo("/p0/tasks", "11") == 0);
  f.tasks.fail_with(EMFILE);
  CHECK(sh.cat("/tasks") == "ERRNO " + std::to_string(EMFILE));
  CHECK(sh.cat("/p0/tasks") == "ERRNO " + std::to_string(EMFILE));
  f.tasks.fail_with(0);
  CHECK(sh.cat("/p0/tasks") == "11\n");
  CHECK(sh.cat("/tasks") == "10\n");
}

// The /proc task source itself: EMFILE is an error, not an empty system.
TEST_CASE("the /proc task source out of descriptors: an error, never 'gone'", "[tasks][threads]") {
  auto tasks = make_proc_task_source();
  const pid_t self = ::getpid();
  REQUIRE(tasks->lookup(self) == 0);
  CHECK(tasks->lookup(0x3ffffff0) == ESRCH);
  rlimit saved{};
  REQUIRE(::getrlimit(RLIMIT_NOFILE, &saved) == 0);
  rlimit low = saved;
  low.rlim_cur = 64;
  REQUIRE(::setrlimit(RLIMIT_NOFILE, &low) == 0);
  std::vector<int> filler{::open("/dev/null", O_RDONLY | O_CLOEXEC)};
  REQUIRE(filler[0] >= 0);
  for (int fd; (fd = ::dup(filler[0])) >= 0;) filler.push_back(fd);
  // No descriptor free: only the task source's calls until they are back
  // (the UBSan runtime needs a pipe for its type checks).
  auto walk = tasks->all_threads();
  const int lookup = tasks->lookup(self);
  uid_t ruid = 0, suid = 0;
  const int uids = tasks->uids(self, ruid, suid);
  for (int fd : filler) ::close(fd);
  ::setrlimit(RLIMIT_NOFILE, &saved);
  REQUIRE_FALSE(walk.ok());
  CHECK(walk.error().code == EMFILE);
  CHECK(lookup == 0);  // stat() needs no descriptor
  CHECK(uids == EMFILE);
  auto all = tasks->all_threads();
  REQUIRE(all.ok());
  CHECK(std::find(all->begin(), all->end(), self) != all->end());
}

TEST_CASE("tasks without tracking: every open walks the task source", "[tasks][threads]") {
  SimFixture f("intel-2s");
  Shell& sh = *f.sh;
  f.tasks.add(10);
  CHECK(sh.cat("/tasks") == "10\n");
  f.tasks.add(14);  // no event
  CHECK(sh.cat("/tasks") == "10\n14\n");
  REQUIRE(sh.mkdir("/p0") == 0);
  CHECK(sh.echo("/p0/tasks", "14") == 0);
  f.tasks.remove(14);  // died without an exit event: forgotten by the walk
  CHECK(sh.cat("/p0/tasks").empty());
  // A process that exited is listed in its group until it is reaped.
  f.tasks.add(15);
  CHECK(sh.echo("/p0/tasks", "15") == 0);
  f.fs->on_thread_exit(15, 15);
  CHECK(sh.cat("/p0/tasks") == "15\n");
  CHECK(sh.cat("/tasks") == "10\n");
  f.tasks.remove(15);
  CHECK(sh.cat("/p0/tasks").empty());
  // Tracking turned off again falls back to the walk.
  f.fs->track_threads(true);
  f.tasks.add(16);
  CHECK(sh.cat("/tasks") == "10\n");
  f.fs->track_threads(false);
  CHECK(sh.cat("/tasks") == "10\n16\n");
}

TEST_CASE("tasks from the thread table survive a remount", "[tasks][threads]") {
  SimFixture f("intel-2s");
  Shell& sh = *f.sh;
  f.tasks.add(10);
  f.fs->track_threads(true);
  REQUIRE(sh.mkdir("/p0") == 0);
  CHECK(sh.echo("/p0/tasks", "10") == 0);
  f.fs->unmount();
  f.tasks.add(11);
  REQUIRE(f.fs->mount({}).ok());
  // The mount reads the threads again; every thread is in the default group.
  CHECK(sh.cat("/tasks") == "10\n11\n");
}

}  // namespace resctrlfs::fs::testing
