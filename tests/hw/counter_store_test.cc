// Tests hw/counter_store.h: the counters of a simulated machine and the
// Arch's running totals go on in a second backend that takes the file over
// (what a daemon after a takeover gets), and a file that does not fit (another
// platform, truncated, damaged, from another format version, never
// completed) is never used: the store starts from zeros and says why.
#include <sys/mman.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstring>

#include "hw/backend.h"
#include "hw/counter_store.h"

using namespace resctrlfs;
using namespace resctrlfs::hw;

namespace {

Backend make(const std::string& name) {
  auto b = make_sim_backend(name);
  REQUIRE(b.ok());
  return std::move(b).value();
}

// A file of the kind the daemon keeps: a memfd stands in for tmpfs.
int counter_file() {
  const int fd = memfd_create("counters", MFD_CLOEXEC);
  REQUIRE(fd >= 0);
  return fd;
}

// Traffic and a footprint under RMID 3 on CPU 1 (L3 domain 0) for `ms`.
void run(Backend& b, uint64_t ms) {
  REQUIRE(b.arch->set_cpu_assoc(1, 0, 3).ok());
  REQUIRE(b.sim->attach_cpu_workload(1, Workload{4u << 20, 1000.0}).ok());
  b.sim->advance_ms(ms);
}

uint64_t read(Backend& b, EventId ev, uint32_t rmid = 3) {
  CounterValue v = b.arch->read_counter(ResourceId::L3, 0, 0, rmid, ev, nullptr);
  REQUIRE(v.err == ReadError::kNone);
  return v.bytes;
}

}  // namespace

TEST_CASE("counter store: a takeover continues the counts, occupancy and telemetry", "[counters]") {
  for (const char* platform : {"intel-2s", "amd-2s", "intel-aet"}) {
    INFO(platform);
    const int fd = counter_file();
    uint64_t total = 0, local = 0, occ = 0, energy = 0;
    const bool aet = std::string(platform) == "intel-aet";
    {
      Backend b = make(platform);
      b.sim->set_manual_clock(true);
      auto s = keep_counters(b, fd, /*take_over=*/true);  // an empty file: fresh
      REQUIRE(s.ok());
      CHECK_FALSE((*s)->carried_over());
      CHECK((*s)->why_fresh() == "empty");
      b.arch->reset_counter(ResourceId::L3, 0, 0, 3, EventId::MBM_TOTAL);
      b.arch->reset_counter(ResourceId::L3, 0, 0, 3, EventId::MBM_LOCAL);
      run(b, 2000);
      total = read(b, EventId::MBM_TOTAL);
      local = read(b, EventId::MBM_LOCAL);
      occ = read(b, EventId::LLC_OCCUPANCY);
      CHECK(total > 1000000000);
      CHECK(occ > 0);
      if (aet) {
        CounterValue e =
            b.arch->read_counter(ResourceId::PERF_PKG, 0, 0, 3, EventId::CORE_ENERGY, nullptr);
        REQUIRE(e.err == ReadError::kNone);
        energy = e.bytes;
        CHECK(energy > 0);
      }
      // The daemon dies here: nothing is saved at exit.
    }
    Backend b = make(platform);
    b.sim->set_manual_clock(true);
    auto s = keep_counters(b, fd, true);
    REQUIRE(s.ok());
    CHECK((*s)->carried_over());
    CHECK((*s)->why_fresh().empty());
    CHECK(b.arch->counters_carried_over());
    // No traffic yet: exactly what the reader saw.
    CHECK(read(b, EventId::MBM_TOTAL) == total);
    CHECK(read(b, EventId::MBM_LOCAL) == local);
    CHECK(read(b, EventId::LLC_OCCUPANCY) == occ);
    if (aet) {
      CounterValue e =
          b.arch->read_counter(ResourceId::PERF_PKG, 0, 0, 3, EventId::CORE_ENERGY, nullptr);
      CHECK(e.bytes >= energy);
    }
    run(b, 1000);
    CHECK(read(b, EventId::MBM_TOTAL) > total);
    close(fd);
  }
}

TEST_CASE("counter store: without a takeover, counters start from zero", "[counters]") {
  const int fd = counter_file();
  {
    Backend b = make("intel-2s");
    b.sim->set_manual_clock(true);
    auto s = keep_counters(b, fd, false);  // must outlive b's use of it
    REQUIRE(s.ok());
    run(b, 1000);
    CHECK(read(b, EventId::MBM_TOTAL) > 0);
  }
  Backend b = make("intel-2s");
  auto s = keep_counters(b, fd, false);  // a fresh mount: as at boot
  REQUIRE(s.ok());
  CHECK_FALSE((*s)->carried_over());
  CHECK_FALSE(b.arch->counters_carried_over());
  CHECK(read(b, EventId::MBM_TOTAL) == 0);
  CHECK(read(b, EventId::LLC_OCCUPANCY) == 0);
  close(fd);
}

TEST_CASE("counter store: a foreign or damaged file is a fresh start with a reason", "[counters]") {
  // A good file of intel-2s with counts in it, then each way of spoiling it.
  auto good = [] {
    const int fd = counter_file();
    Backend b = make("intel-2s");
    b.sim->set_manual_clock(true);
    auto s = keep_counters(b, fd, false);
    REQUIRE(s.ok());
    run(b, 1000);
    CHECK(read(b, EventId::MBM_TOTAL) > 0);
    return fd;
  };
  auto poke = [](int fd, off_t at, const void* bytes, size_t n) {
    REQUIRE(pwrite(fd, bytes, n, at) == static_cast<ssize_t>(n));
  };
  struct Case {
    const char* what;
    std::function<void(int)> spoil;
    std::string platform;
    std::string why;
  };
  const uint32_t other_version = CounterStore::kVersion + 1;
  const uint64_t zero = 0;
  std::vector<Case> cases = {
      {"another platform", [](int) {}, "intel-bdx", "written for platform intel-2s"},
      {"truncated", [](int fd) { REQUIRE(ftruncate(fd, 20) == 0); }, "intel-2s",
       "shorter than its header"},
      {"cut short", [](int fd) { REQUIRE(ftruncate(fd, 4096) == 0); }, "intel-2s",
       "4096 bytes, its header says"},
      {"grown", [](int fd) { REQUIRE(ftruncate(fd, 1 << 22) == 0); }, "intel-2s",
       "4194304 bytes, its header says"},
      {"garbage", [&](int fd) { poke(fd, 0, "garbage!", 8); }, "intel-2s", "not a counter file"},
      {"another version", [&](int fd) { poke(fd, 8, &other_version, 4); }, "intel-2s",
       "format version " + std::to_string(other_version)},
      {"another layout",
       [&](int fd) {
         const uint64_t n = 8;
         poke(fd, 24, &n, 8);  // the machine region's size
       },
       "intel-2s", "another layout"},
      {"never completed", [&](int fd) { poke(fd, 24 + 8 * 8 + 48, &zero, 8); }, "intel-2s",
       "never completed"},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    const int fd = good();
    c.spoil(fd);
    Backend b = make(c.platform);
    auto s = keep_counters(b, fd, true);
    REQUIRE(s.ok());
    CHECK_FALSE((*s)->carried_over());
    CHECK_FALSE(b.arch->counters_carried_over());
    CHECK((*s)->why_fresh().find(c.why) != std::string::npos);
    CHECK(read(b, EventId::MBM_TOTAL) == 0);
    CHECK(read(b, EventId::LLC_OCCUPANCY) == 0);
    // The file is now a good store of its own: the next takeover uses it.
    Backend again = make(c.platform);
    auto s2 = keep_counters(again, fd, true);
    REQUIRE(s2.ok());
    CHECK((*s2)->carried_over());
    close(fd);
  }
}
