// Unit tests of base/vcpus.h: the block mapping of virtual CPUs onto host
// CPUs, a thread's virtual affinity (its own record, its process's, its
// ancestors', else its host CPUs') and the table file both ways.
#include "base/vcpus.h"

#include <catch2/catch.hpp>
#include <map>

namespace resctrlfs {
namespace {

CpuMask mask(std::vector<unsigned> cpus, unsigned nbits) { return cpu_mask_of(cpus, nbits); }

// A fake /proc: thread id -> facts.
struct FakeProc {
  std::map<pid_t, ThreadFacts> threads;
  VcpuTable::Facts facts() const {
    return [this](pid_t t, ThreadFacts* f) {
      auto it = threads.find(t);
      if (it == threads.end()) return false;
      *f = it->second;
      return true;
    };
  }
};

ThreadFacts thread(pid_t tgid, pid_t ppid, uint64_t start, std::vector<unsigned> host) {
  ThreadFacts f;
  f.tgid = tgid;
  f.ppid = ppid;
  f.start = start;
  f.host_cpu = static_cast<int>(host.front());
  f.host_allowed = std::move(host);
  return f;
}

}  // namespace

TEST_CASE("vcpus: 8 virtual CPUs on 2 host CPUs go in blocks", "[vcpus]") {
  VcpuMap m(8, {0, 1});
  CHECK(m.enabled());
  std::vector<unsigned> host;
  for (unsigned v = 0; v < 8; ++v) host.push_back(m.host_of(v));
  CHECK(host == std::vector<unsigned>{0, 0, 0, 0, 1, 1, 1, 1});
  CHECK(m.to_host(mask({3, 4, 5, 6}, 8)).cpus() == std::vector<unsigned>{0, 1});
  CHECK(m.to_host(mask({5}, 8)).cpus() == std::vector<unsigned>{1});
  CHECK(m.to_virtual(mask({1}, 2)).cpus() == std::vector<unsigned>{4, 5, 6, 7});
  CHECK(m.running_on(mask({3, 6}, 8), 1) == 6);
  CHECK(m.running_on(mask({3, 6}, 8), 0) == 3);
  CHECK(m.running_on(mask({5}, 8), 0) == 5);  // pinned: wherever the host ran it
}

TEST_CASE("vcpus: a sparse host CPU list and more host than virtual CPUs", "[vcpus]") {
  VcpuMap sparse(4, {2, 5});
  CHECK(sparse.host_bits() == 6);
  CHECK(sparse.host_of(0) == 2);
  CHECK(sparse.host_of(3) == 5);
  VcpuMap wide(2, {0, 1, 2, 3});
  CHECK(wide.host_of(0) == 0);
  CHECK(wide.host_of(1) == 2);
  CHECK(wide.to_virtual(mask({1}, 4)).empty());
}

TEST_CASE("vcpus: a thread's virtual affinity", "[vcpus]") {
  VcpuMap m(8, {0, 1});
  VcpuTable t(m);
  FakeProc proc;
  // 100 ran taskset -c 5 on itself; 101 is its forked child; 102 another
  // thread of 100's process created after; 200 an unrelated process.
  proc.threads[100] = thread(100, 1, 1000, {1});
  proc.threads[101] = thread(101, 100, 1001, {1});
  proc.threads[102] = thread(100, 1, 1002, {1});
  proc.threads[200] = thread(200, 1, 2000, {0, 1});
  t.set(100, 100, 1000, mask({5}, 8));
  CHECK(t.affinity(100, proc.threads[100], proc.facts()).cpus() == std::vector<unsigned>{5});
  CHECK(t.affinity(101, proc.threads[101], proc.facts()).cpus() == std::vector<unsigned>{5});
  CHECK(t.affinity(102, proc.threads[102], proc.facts()).cpus() == std::vector<unsigned>{5});
  CHECK(t.affinity(200, proc.threads[200], proc.facts()) == m.all());

  SECTION("a host affinity changed behind the supervisor's back wins") {
    proc.threads[101].host_allowed = {0};
    CHECK(t.affinity(101, proc.threads[101], proc.facts()).cpus() ==
          std::vector<unsigned>{0, 1, 2, 3});
  }
  SECTION("a record of an earlier thread with the same id does not apply") {
    ThreadFacts reused = thread(100, 1, 5000, {1});
    proc.threads[100] = reused;
    proc.threads.erase(101);
    CHECK(t.affinity(100, reused, proc.facts()).cpus() == std::vector<unsigned>{4, 5, 6, 7});
  }
  SECTION("prune drops the records of threads that have gone") {
    proc.threads.erase(100);
    t.prune(proc.facts());
    CHECK(t.records().empty());
  }
}

TEST_CASE("vcpus: the table file both ways", "[vcpus]") {
  VcpuTable t(VcpuMap(8, {0, 1}));
  t.set(42, 40, 777, mask({3, 4, 5, 6}, 8));
  const std::string text = format_vcpu_table(t);
  CHECK(text == "resctrlfs-vcpus 1\nvirtual 8\nhost 0-1\nthread 42 40 777 3-6\n");
  auto back = parse_vcpu_table(text);
  REQUIRE(back.ok());
  CHECK(back->map().virtual_cpus() == 8);
  CHECK(back->map().host_cpus() == std::vector<unsigned>{0, 1});
  REQUIRE(back->records().count(42) == 1);
  CHECK(back->records().at(42).cpus.cpus() == std::vector<unsigned>{3, 4, 5, 6});
  CHECK(back->records().at(42).tgid == 40);
  CHECK(back->records().at(42).start == 777);
}

TEST_CASE("vcpus: a bad table file is refused with the line", "[vcpus]") {
  CHECK(!parse_vcpu_table("").ok());
  CHECK(!parse_vcpu_table("resctrlfs-vcpus 2\nvirtual 8\nhost 0\n").ok());
  CHECK(!parse_vcpu_table("resctrlfs-vcpus 1\nhost 0\n").ok());
  auto r = parse_vcpu_table("resctrlfs-vcpus 1\nvirtual 8\nhost 0\nthread 1 1 1 9\n");
  REQUIRE(!r.ok());
  CHECK(r.error().message.find("thread 1 1 1 9") != std::string::npos);
  CHECK(!parse_vcpu_table("resctrlfs-vcpus 1\nvirtual 8\nhost 0\nbogus\n").ok());
}

}  // namespace resctrlfs
