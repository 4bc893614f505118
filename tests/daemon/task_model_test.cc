// Tests the task model (daemon/task_model.h) over the simulated machine on
// a manual clock, with /proc and the per-task event source replaced by
// recorded values: the PMU path (LLC misses x 64 bytes), the model path
// (page faults and CPU time), the footprint shared by a process's threads,
// the CPU mapping, and the /proc parsers.
#include "daemon/task_model.h"

#include <catch2/catch.hpp>

#include <deque>

#include "hw/backend.h"

using namespace resctrlfs;
using namespace resctrlfs::daemon;
using Catch::Detail::Approx;

namespace {

// /proc as a test scripts it: per thread a queue of stat samples (one taken
// per sample()), per process its anonymous bytes.
class FakeProc final : public TaskProcSource {
 public:
  std::map<pid_t, std::deque<ThreadStat>> stats;
  std::map<pid_t, pid_t> tgids;
  std::map<pid_t, uint64_t> anon;
  std::optional<ThreadStat> thread_stat(pid_t tid) override {
    auto it = stats.find(tid);
    if (it == stats.end() || it->second.empty()) return std::nullopt;
    ThreadStat s = it->second.front();
    if (it->second.size() > 1) it->second.pop_front();
    return s;
  }
  std::optional<pid_t> tgid(pid_t tid) override {
    auto it = tgids.find(tid);
    return it == tgids.end() ? tid : it->second;
  }
  std::optional<uint64_t> anon_resident_bytes(pid_t tgid) override {
    auto it = anon.find(tgid);
    if (it == anon.end()) return std::nullopt;
    return it->second;
  }
  double ticks_per_second() const override { return 100; }
  uint64_t page_size() const override { return 4096; }
};

// Recorded LLC-miss counts per thread, one value per read.
class RecordedEvents final : public TaskEventSource {
 public:
  std::map<pid_t, std::deque<uint64_t>> counts;
  std::vector<pid_t> closed;
  bool open(pid_t tid) override { return counts.count(tid) != 0; }
  std::optional<uint64_t> read(pid_t tid) override {
    auto& q = counts.at(tid);
    uint64_t v = q.front();
    if (q.size() > 1) q.pop_front();
    return v;
  }
  void close(pid_t tid) override { closed.push_back(tid); }
  std::string name() const override { return "recorded"; }
};

struct Rig {
  hw::Backend b;
  FakeProc* proc = nullptr;
  RecordedEvents* events = nullptr;
  std::unique_ptr<TaskModel> model;
  std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();
  hw::Arch& arch() { return *b.arch; }
  hw::SimControl& sim() { return *b.sim; }
  hw::ThreadTagger& tagger() { return *b.arch->thread_tagger(); }
  // A sample `s` seconds after the start (real time of the daemon's tick).
  void sample_at(double s) {
    model->sample(t0 + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                           std::chrono::duration<double>(s)));
  }
  uint64_t read(int dom, uint32_t rmid, hw::EventId ev) {
    auto v = arch().read_counter(hw::ResourceId::L3, dom, 0, rmid, ev, nullptr);
    REQUIRE(v.err == hw::ReadError::kNone);
    return v.bytes;
  }
};

Rig make_rig(bool with_events, TaskModelMode mode = TaskModelMode::kAuto) {
  auto b = hw::make_sim_backend("intel-2s");
  REQUIRE(b.ok());
  Rig r{std::move(b).value()};
  r.sim().set_manual_clock(true);
  auto proc = std::make_unique<FakeProc>();
  r.proc = proc.get();
  std::unique_ptr<TaskEventSource> events;
  if (with_events) {
    auto e = std::make_unique<RecordedEvents>();
    r.events = e.get();
    events = std::move(e);
  }
  r.model =
      std::make_unique<TaskModel>(r.sim(), mode, std::move(proc), std::move(events),
                                  std::make_unique<HostCpuLocator>(r.arch().info().online.cpus()));
  return r;
}

ThreadStat st(uint64_t ticks, uint64_t minflt, int cpu) { return ThreadStat{ticks, minflt, cpu}; }

}  // namespace

TEST_CASE("task model: /proc/PID/task/TID/stat fields after the command name") {
  auto s = parse_thread_stat(
      "4242 (a b) c)) S 1 4242 4242 0 -1 4194560 1234 0 0 0 250 50 0 0 20 0 1 0 "
      "100 1000000 200 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 3 0 0 0 0 0\n");
  REQUIRE(s);
  CHECK(s->minflt == 1234);
  CHECK(s->cpu_ticks == 300);
  CHECK(s->processor == 3);
  CHECK_FALSE(parse_thread_stat("4242 (x) S 1 2 3"));
  CHECK_FALSE(parse_thread_stat("garbage"));
  auto a = parse_statm_anon_bytes("5000 3000 1000 10 0 2500 0\n", 4096);
  REQUIRE(a);
  CHECK(*a == 2000u * 4096);
  CHECK_FALSE(parse_statm_anon_bytes("", 4096));
}

TEST_CASE("task model: host CPUs map onto the platform's CPUs") {
  HostCpuLocator same({0, 1, 2, 3});
  CHECK(same.platform_cpu(2) == 2);
  CHECK(same.platform_cpu(-1) == -1);
  HostCpuLocator fewer({0, 2, 4});
  CHECK(fewer.platform_cpu(4) == 4);
  CHECK(fewer.platform_cpu(5) == 4);  // 5 mod 3 = 2: the third online CPU
  CHECK(HostCpuLocator({}).platform_cpu(0) == -1);
}

// The PMU path: a thread's LLC misses since the last sample, times the
// 64-byte line, are its memory traffic (recorded counts, as perf_event_open
// would give them).
TEST_CASE("task model: LLC misses from per-task events become MBM bytes") {
  Rig r = make_rig(true);
  r.tagger().set_thread_tags(100, 1, 2);
  r.proc->stats[100] = {st(0, 0, 1), st(100, 0, 1), st(200, 0, 1), st(200, 0, 1)};
  r.proc->anon[100] = 1 << 20;
  // 15625000 lines = 1e9 bytes per second, then 5e8, then none.
  r.events->counts[100] = {1000, 1000 + 15625000, 1000 + 15625000 + 7812500,
                           1000 + 15625000 + 7812500};
  r.sample_at(0);  // baseline
  r.sample_at(1);
  CHECK(r.read(0, 2, hw::EventId::MBM_TOTAL) == 0);
  r.sim().advance_ms(1000);
  CHECK(static_cast<double>(r.read(0, 2, hw::EventId::MBM_TOTAL)) == Approx(1e9).epsilon(0.001));
  r.sample_at(2);
  r.sim().advance_ms(1000);
  CHECK(static_cast<double>(r.read(0, 2, hw::EventId::MBM_TOTAL)) == Approx(1.5e9).epsilon(0.001));
  // MBA throttles it as it throttles a declared workload.
  REQUIRE(r.arch().update_ctrls({{hw::ResourceId::MB, ConfType::NONE, 0, 1, 50}}).ok());
  r.events->counts[100] = {1000 + 15625000 + 7812500 + 15625000};
  r.sample_at(3);
  const uint64_t before = r.read(0, 2, hw::EventId::MBM_TOTAL);
  r.sim().advance_ms(1000);
  CHECK(static_cast<double>(r.read(0, 2, hw::EventId::MBM_TOTAL) - before) ==
        Approx(0.5e9).epsilon(0.001));
  CHECK(r.model->status()["bandwidth_source"] == "recorded");
  CHECK(r.model->status()["threads_counted_by_events"] == 1);
  // Back in the default group: no longer sampled, its event closed.
  r.tagger().set_thread_tags(100, 0, 0);
  r.sample_at(4);
  CHECK(r.events->closed == std::vector<pid_t>{100});
  CHECK(r.model->status()["threads"] == 0);
}

// The model path (no PMU): footprint from the process's resident anonymous
// memory, traffic from page faults; the occupancy fills the CLOSID's ways
// and stays when the thread stops running.
TEST_CASE("task model: without events, resident memory and faults drive the counters") {
  Rig r = make_rig(false);
  r.tagger().set_thread_tags(200, 1, 3);
  r.proc->anon[200] = 8 << 20;
  // 1 s of CPU, 2048 faults (8 MiB of first touches), then asleep.
  r.proc->stats[200] = {st(0, 0, 2), st(100, 2048, 2), st(100, 2048, 2)};
  r.sample_at(0);
  r.sample_at(1);
  r.sim().advance_ms(1000);
  const double occ = static_cast<double>(r.read(0, 3, hw::EventId::LLC_OCCUPANCY));
  CHECK(occ == Approx(8 << 20).epsilon(0.02));
  // 8 MiB fits in the 16 MiB L3: no streaming misses, only the faults.
  CHECK(static_cast<double>(r.read(0, 3, hw::EventId::MBM_TOTAL)) ==
        Approx(2048.0 * 4096).epsilon(0.01));
  CHECK(r.model->status()["active_threads"] == 1);
  // It stops: no more traffic, and its lines stay.
  r.sample_at(2);
  CHECK(r.model->status()["active_threads"] == 0);
  const uint64_t mbm = r.read(0, 3, hw::EventId::MBM_TOTAL);
  r.sim().advance_ms(5000);
  CHECK(r.read(0, 3, hw::EventId::MBM_TOTAL) == mbm);
  CHECK(static_cast<double>(r.read(0, 3, hw::EventId::LLC_OCCUPANCY)) ==
        Approx(occ).epsilon(0.001));
}

TEST_CASE("task model: a footprint beyond the CLOSID's ways streams what misses") {
  Rig r = make_rig(true, TaskModelMode::kModel);  // events present but not used
  r.events->counts[300] = {0};
  REQUIRE(r.arch().update_ctrls({{hw::ResourceId::L3, ConfType::NONE, 0, 1, 0x3}}).ok());
  r.tagger().set_thread_tags(300, 1, 4);
  r.proc->anon[300] = 64 << 20;
  r.proc->stats[300] = {st(0, 0, 0), st(50, 0, 0)};  // half a CPU, no faults
  r.sample_at(0);
  r.sample_at(1);
  r.sim().advance_ms(1000);
  const double cap = 16.0 * (1 << 20) * 2 / 11;
  CHECK(static_cast<double>(r.read(0, 4, hw::EventId::LLC_OCCUPANCY)) == Approx(cap).epsilon(0.02));
  const double miss = 1.0 - cap / (64 << 20);
  CHECK(static_cast<double>(r.read(0, 4, hw::EventId::MBM_TOTAL)) ==
        Approx(0.5 * TaskModel::kStreamMbpsPerCore * 1e6 * miss).epsilon(0.01));
  CHECK(r.model->status()["mode"] == "model");
}

TEST_CASE("task model: a process's resident memory is shared by CPU time, on each CPU") {
  Rig r = make_rig(false);
  // Threads 401 and 402 of process 400, in different groups, on CPUs of
  // the two L3s; 403 of the same process did not run.
  r.tagger().set_thread_tags(401, 1, 5);
  r.tagger().set_thread_tags(402, 2, 6);
  r.tagger().set_thread_tags(403, 1, 7);
  for (pid_t t : {401, 402, 403}) r.proc->tgids[t] = 400;
  r.proc->anon[400] = 8 << 20;
  r.proc->stats[401] = {st(0, 0, 0), st(75, 0, 0)};
  r.proc->stats[402] = {st(0, 0, 4), st(25, 0, 4)};
  r.proc->stats[403] = {st(0, 0, 1), st(0, 0, 1)};
  r.sample_at(0);
  r.sample_at(1);
  r.sim().advance_ms(2000);
  CHECK(static_cast<double>(r.read(0, 5, hw::EventId::LLC_OCCUPANCY)) ==
        Approx(6 << 20).epsilon(0.02));
  CHECK(static_cast<double>(r.read(1, 6, hw::EventId::LLC_OCCUPANCY)) ==
        Approx(2 << 20).epsilon(0.02));
  CHECK(r.read(0, 7, hw::EventId::LLC_OCCUPANCY) == 0);
  CHECK(r.read(0, 6, hw::EventId::LLC_OCCUPANCY) == 0);  // counted where it ran
}

// The kernel's context switch loads a default-group thread's RMID from the
// CPU (the cpus file's group): a thread of a MON group under the default
// CTRL_MON group on a CPU owned by CLOSID 1 fills CLOSID 1's ways.
TEST_CASE("task model: a tag of 0 takes the CPU's PQR_ASSOC") {
  Rig r = make_rig(false);
  REQUIRE(r.arch().update_ctrls({{hw::ResourceId::L3, ConfType::NONE, 0, 1, 0x1}}).ok());
  REQUIRE(r.arch().set_cpu_assoc(3, 1, 9).ok());
  r.tagger().set_thread_tags(500, 0, 8);
  r.proc->anon[500] = 8 << 20;
  r.proc->stats[500] = {st(0, 0, 3), st(100, 0, 3)};
  r.sample_at(0);
  r.sample_at(1);
  r.sim().advance_ms(2000);
  CHECK(static_cast<double>(r.read(0, 8, hw::EventId::LLC_OCCUPANCY)) ==
        Approx(16.0 * (1 << 20) / 11).epsilon(0.02));  // one way
  CHECK(r.read(0, 9, hw::EventId::LLC_OCCUPANCY) == 0);
}

TEST_CASE("task model: none samples nothing") {
  Rig r = make_rig(false, TaskModelMode::kNone);
  r.tagger().set_thread_tags(600, 1, 2);
  r.proc->anon[600] = 8 << 20;
  r.proc->stats[600] = {st(0, 0, 0), st(100, 100, 0)};
  r.sample_at(0);
  r.sample_at(1);
  r.sim().advance_ms(1000);
  CHECK(r.read(0, 2, hw::EventId::LLC_OCCUPANCY) == 0);
  CHECK(r.model->status() == nlohmann::json{{"mode", "none"}});
}
