// Unit tests of daemon/thread_cpu.h, the CPU a real thread counts on, on a
// fake /proc and a table file as the sandbox's supervisor writes it; and of
// the control request that asks for it.
#include "daemon/thread_cpu.h"

#include <catch2/catch.hpp>
#include <filesystem>

#include "daemon/control_protocol.h"
#include "tests/temp_files.h"

namespace resctrlfs::daemon {
namespace {

// /proc/TID/{stat,status} with the fields ThreadCpus reads.
void fake_thread(const std::string& proc, pid_t tid, pid_t tgid, pid_t ppid, uint64_t start,
                 int cpu, const std::string& allowed) {
  const std::string dir = proc + "/" + std::to_string(tid);
  std::filesystem::create_directories(dir);
  std::string stat = std::to_string(tid) + " (a (b) c) S " + std::to_string(ppid);
  for (int field = 5; field <= 52; ++field) {
    std::string v = "0";
    if (field == 22) v = std::to_string(start);
    if (field == 39) v = std::to_string(cpu);
    stat += " " + v;
  }
  test::write_file(dir + "/stat", stat + "\n");
  test::write_file(dir + "/status", "Name:\tx\nTgid:\t" + std::to_string(tgid) + "\nPid:\t" +
                                        std::to_string(tid) + "\nCpus_allowed_list:\t" + allowed +
                                        "\n");
}

}  // namespace

TEST_CASE("thread_cpu: without virtual CPUs, the host CPU the thread last ran on", "[thread_cpu]") {
  test::TempDir d("thread-cpu");
  fake_thread(d.path, 7, 7, 1, 100, 1, "0-1");
  ThreadCpus t("", d.path);
  auto c = t.cpu_of(7);
  REQUIRE(c.ok());
  CHECK(*c == 1);
  CHECK(t.cpu_of(8).error().code == ESRCH);
}

TEST_CASE("thread_cpu: a thread pinned to a virtual CPU counts on it", "[thread_cpu]") {
  test::TempDir d("thread-cpu");
  const std::string proc = d.path + "/proc", file = d.path + "/vcpus";
  // 8 virtual CPUs on host CPUs 0-1: 0-3 on host 0, 4-7 on host 1.
  fake_thread(proc, 37, 37, 1, 500, 1, "1");    // pinned to virtual 6
  fake_thread(proc, 38, 38, 37, 501, 1, "1");   // its child
  fake_thread(proc, 40, 40, 1, 502, 0, "0-1");  // unpinned, ran on host 0
  fake_thread(proc, 41, 41, 1, 503, 0, "0-1");  // pinned to 3-6, ran on host 0
  test::write_file(file, "resctrlfs-vcpus 1\nvirtual 8\nhost 0-1\nthread 37 37 500 6\n");
  ThreadCpus t(file, proc);
  CHECK(t.virtual_cpus());
  CHECK(t.cpu_of(37).value() == 6);
  CHECK(t.cpu_of(38).value() == 6);
  CHECK(t.cpu_of(40).value() == 0);
  // The supervisor pins 41 (a new table, replaced by rename as it does).
  fake_thread(proc, 41, 41, 1, 503, 0, "0-1");
  test::write_file(file + ".new",
                   "resctrlfs-vcpus 1\nvirtual 8\nhost 0-1\nthread 37 37 500 6\n"
                   "thread 41 41 503 3-6\n");
  std::filesystem::rename(file + ".new", file);
  CHECK(t.cpu_of(41).value() == 3);
  fake_thread(proc, 41, 41, 1, 503, 1, "0-1");  // now on host 1
  CHECK(t.cpu_of(41).value() == 4);
}

TEST_CASE("thread_cpu: a broken table is an error naming the file", "[thread_cpu]") {
  test::TempDir d("thread-cpu");
  fake_thread(d.path + "/proc", 5, 5, 1, 1, 0, "0");
  test::write_file(d.path + "/vcpus", "garbage\n");
  ThreadCpus t(d.path + "/vcpus", d.path + "/proc");
  auto c = t.cpu_of(5);
  REQUIRE(!c.ok());
  CHECK(c.error().message.find(d.path + "/vcpus") != std::string::npos);
  ThreadCpus missing(d.path + "/none", d.path + "/proc");
  CHECK(!missing.cpu_of(5).ok());
}

TEST_CASE("thread_cpu: the control request", "[thread_cpu]") {
  auto r = parse_control_request(R"({"cmd":"thread-cpu","tid":37})");
  REQUIRE(r.ok());
  REQUIRE(std::holds_alternative<ThreadCpuRequest>(*r));
  CHECK(std::get<ThreadCpuRequest>(*r).tid == 37);
  CHECK(!parse_control_request(R"({"cmd":"thread-cpu"})").ok());
  CHECK(!parse_control_request(R"({"cmd":"thread-cpu","tid":0})").ok());
  CHECK(!parse_control_request(R"({"cmd":"thread-cpu","tid":1,"cpu":2})").ok());
}

}  // namespace resctrlfs::daemon
