// Tests the control socket protocol: every request form parses to the right
// typed request, hostile or malformed input is refused with a reply (never
// an exception or a crash), and replies carry "ok".
#include <catch2/catch.hpp>

#include <random>
#include <string>
#include <vector>

#include "daemon/control_protocol.h"
#include "daemon/daemon.h"

using namespace resctrlfs;
using namespace resctrlfs::daemon;
using nlohmann::json;

namespace {

// Records what it was asked; fails on demand.
class FakeTarget : public ControlTarget {
 public:
  std::vector<std::string> calls;
  bool fail = false;

  Result<json> answer(std::string what) {
    calls.push_back(std::move(what));
    if (fail) return Error::make(EOPNOTSUPP, "not simulated");
    return json{{"did", calls.back()}};
  }
  Result<json> status() override { return answer("status"); }
  Result<json> set_clock_mode(bool manual) override {
    return answer(manual ? "clock manual" : "clock real");
  }
  Result<json> advance_clock(uint64_t ms) override {
    return answer("advance " + std::to_string(ms));
  }
  Result<json> attach_workload(const WorkloadRequest& r) override {
    std::string who;
    if (r.tid) who = "tid " + std::to_string(*r.tid);
    if (r.tid && r.cpu) who += " ";
    if (r.cpu) who += "cpu " + std::to_string(*r.cpu);
    if (r.channel) who = "channel " + std::to_string(*r.channel);
    return answer("workload " + who + " " + std::to_string(r.workload.cache_footprint_bytes) + " " +
                  std::to_string(static_cast<int>(r.workload.bandwidth_mbps)) + " " +
                  std::to_string(static_cast<int>(r.workload.local_fraction * 100)));
  }
  Result<json> inject_fault(const FaultRequest& r) override {
    return answer("fault " + std::to_string(r.fail_writes) +
                  (r.cpu ? " cpu " + std::to_string(*r.cpu) : ""));
  }
  Result<json> registers() override { return answer("registers"); }
  Result<json> stats() override { return answer("stats"); }
  Result<json> reset_stats() override { return answer("stats-reset"); }
  Result<json> set_cpu_online(const CpuOnlineRequest& r) override {
    return answer("cpu " + std::to_string(r.cpu) + (r.online ? " online" : " offline"));
  }
};

json reply(FakeTarget& t, std::string_view line) {
  const std::string out = handle_control_line(t, line);
  CHECK(out.find('\n') == std::string::npos);  // one line per reply
  json j = json::parse(out, nullptr, false);
  REQUIRE_FALSE(j.is_discarded());
  REQUIRE(j.is_object());
  REQUIRE(j.contains("ok"));
  return j;
}

}  // namespace

TEST_CASE("every request form reaches the target") {
  struct Case {
    const char* line;
    const char* call;
  };
  const Case cases[] = {
      {R"({"cmd":"status"})", "status"},
      {R"({"cmd":"clock","mode":"manual"})", "clock manual"},
      {R"({"cmd":"clock","mode":"real"})", "clock real"},
      {R"({"cmd":"clock","advance_ms":1500})", "advance 1500"},
      {R"({"cmd":"clock","advance_ms":0})", "advance 0"},
      {R"({"cmd":"workload","tid":42,"footprint_bytes":1048576,"bandwidth_mbps":500,)"
       R"("local_fraction":0.25})",
       "workload tid 42 1048576 500 25"},
      {R"({"cmd":"workload","cpu":3,"bandwidth_mbps":100})", "workload cpu 3 0 100 100"},
      // A thread's workload pinned to a CPU.
      {R"({"cmd":"workload","tid":7,"cpu":1,"bandwidth_mbps":10})",
       "workload tid 7 cpu 1 0 10 100"},
      // A device's workload on an I/O RDT channel.
      {R"({"cmd":"workload","channel":256,"footprint_bytes":4096,"bandwidth_mbps":300})",
       "workload channel 256 4096 300 100"},
      {R"({"cmd":"fault","fail_writes":2})", "fault 2"},
      {R"({"cmd":"fault","fail_writes":1,"cpu":5})", "fault 1 cpu 5"},
      {R"({"cmd":"registers"})", "registers"},
      {R"({"cmd":"stats"})", "stats"},
      {R"({"cmd":"stats-reset"})", "stats-reset"},
      {R"({"cmd":"cpu","cpu":5,"online":false})", "cpu 5 offline"},
      {R"({"cmd":"cpu","online":true,"cpu":0})", "cpu 0 online"},
      // Whitespace and a trailing CR/LF are fine.
      {" { \"cmd\" : \"status\" } \r\n", "status"},
  };
  for (const Case& c : cases) {
    INFO(c.line);
    FakeTarget t;
    json j = reply(t, c.line);
    CHECK(j["ok"] == true);
    REQUIRE(t.calls.size() == 1);
    CHECK(t.calls[0] == c.call);
    CHECK(j["did"] == c.call);
  }
}

TEST_CASE("a failing target becomes {ok:false, error}") {
  FakeTarget t;
  t.fail = true;
  json j = reply(t, R"({"cmd":"clock","mode":"manual"})");
  CHECK(j["ok"] == false);
  CHECK(j["error"] == "not simulated");
}

TEST_CASE("malformed and hostile requests are refused without reaching the target") {
  const std::vector<std::string> bad = {
      "",
      "\n",
      "not json",
      "{",
      "}",
      "[]",
      "null",
      "42",
      "\"status\"",
      R"({"cmd":"status"} trailing)",
      R"({"cmd":"status"}{"cmd":"status"})",
      R"({})",
      R"({"cmd":null})",
      R"({"cmd":7})",
      R"({"cmd":["status"]})",
      R"({"cmd":"STATUS"})",
      R"({"cmd":"reboot"})",
      R"({"cmd":"status","extra":1})",
      R"({"cmd":"clock"})",
      R"({"cmd":"clock","mode":"manual","advance_ms":1})",
      R"({"cmd":"clock","mode":"fast"})",
      R"({"cmd":"clock","mode":1})",
      R"({"cmd":"clock","advance_ms":-1})",
      R"({"cmd":"clock","advance_ms":1.5})",
      R"({"cmd":"clock","advance_ms":"10"})",
      R"({"cmd":"clock","advance_ms":1e300})",
      R"({"cmd":"clock","advance_ms":18446744073709551615})",
      R"({"cmd":"clock","advance_ms":99999999999999999999999})",
      R"({"cmd":"clock","advance":10})",
      R"({"cmd":"workload"})",
      R"({"cmd":"workload","tid":0})",
      R"({"cmd":"workload","channel":256,"cpu":1})",
      R"({"cmd":"workload","channel":256,"tid":5})",
      R"({"cmd":"workload","channel":-1})",
      R"({"cmd":"workload","channel":4294967296})",
      R"({"cmd":"workload","channel":"0x100"})",
      R"({"cmd":"workload","tid":-5})",
      R"({"cmd":"workload","tid":4294967296})",
      R"({"cmd":"workload","cpu":70000})",
      R"({"cmd":"workload","cpu":1,"local_fraction":1.5})",
      R"({"cmd":"workload","cpu":1,"local_fraction":-0.1})",
      R"({"cmd":"workload","cpu":1,"bandwidth_mbps":-1})",
      R"({"cmd":"workload","cpu":1,"bandwidth_mbps":"fast"})",
      R"({"cmd":"workload","cpu":1,"footprint_bytes":-1})",
      R"({"cmd":"workload","cpu":1,"footprint":1})",
      R"({"cmd":"fault"})",
      R"({"cmd":"fault","fail_writes":-1})",
      R"({"cmd":"fault","fail_writes":10000000000})",
      R"({"cmd":"fault","fail_writes":1,"cpu":"all"})",
      R"({"cmd":"cpu"})",
      R"({"cmd":"cpu","cpu":1})",
      R"({"cmd":"cpu","online":false})",
      R"({"cmd":"cpu","cpu":1,"online":"false"})",
      R"({"cmd":"cpu","cpu":1,"online":0})",
      R"({"cmd":"cpu","cpu":-1,"online":true})",
      R"({"cmd":"cpu","cpu":70000,"online":true})",
      R"({"cmd":"cpu","cpu":1,"online":true,"force":true})",
      "{\"cmd\":\"st\xff\xfe\"}",                 // invalid UTF-8
      std::string("{\"cmd\":\"status\0\"}", 17),  // embedded NUL
      std::string(200000, '['),                   // too long and deeply nested
      std::string(kMaxControlLine + 1, ' '),
  };
  for (const std::string& line : bad) {
    INFO(line.substr(0, 80));
    FakeTarget t;
    json j = reply(t, line);
    CHECK(j["ok"] == false);
    CHECK(j["error"].is_string());
    CHECK_FALSE(j["error"].get<std::string>().empty());
    CHECK(t.calls.empty());
  }
}

TEST_CASE("deep nesting within the length limit is refused, not a stack overflow") {
  std::string deep;
  for (int i = 0; i < 30000; ++i) deep += "{\"a\":";
  deep += "1";
  for (int i = 0; i < 30000; ++i) deep += "}";
  FakeTarget t;
  json j = reply(t, deep);
  CHECK(j["ok"] == false);
  CHECK(t.calls.empty());
  // Refused before the parser builds it (base/json_input.h), whatever the
  // rest of the request says.
  j = reply(t, R"({"cmd":"status","x":)" + std::string(65, '[') + std::string(65, ']') + "}");
  CHECK(j["error"].get<std::string>().find("nested deeper than 64 levels") != std::string::npos);
  CHECK(t.calls.empty());
}

TEST_CASE("random bytes and truncated requests never escape as exceptions") {
  std::mt19937 rng(12345);
  const std::string valid =
      R"({"cmd":"workload","tid":42,"footprint_bytes":1048576,"bandwidth_mbps":500,"local_fraction":0.25})";
  FakeTarget t;
  for (size_t cut = 0; cut < valid.size(); ++cut) {
    json j = reply(t, valid.substr(0, cut));
    CHECK(j["ok"] == false);
  }
  for (int i = 0; i < 2000; ++i) {
    std::string s = valid;
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int f = 0; f < flips; ++f) s[rng() % s.size()] = static_cast<char>(rng() % 256);
    (void)reply(t, s);  // any reply is fine; it must be one JSON object
  }
}

TEST_CASE("parse_control_request gives typed values") {
  auto r = parse_control_request(R"({"cmd":"workload","cpu":2,"local_fraction":0})");
  REQUIRE(r.ok());
  const auto* w = std::get_if<WorkloadRequest>(&*r);
  REQUIRE(w != nullptr);
  CHECK_FALSE(w->tid);
  CHECK(*w->cpu == 2);
  CHECK(w->workload.local_fraction == 0.0);
  CHECK(w->workload.bandwidth_mbps == 0.0);
  CHECK(w->workload.write_fraction == 0.0);  // all reads unless told

  auto ws = parse_control_request(R"({"cmd":"workload","cpu":2,"write_fraction":0.75})");
  REQUIRE(ws.ok());
  CHECK(std::get<WorkloadRequest>(*ws).workload.write_fraction == 0.75);
  for (const char* bad : {R"({"cmd":"workload","cpu":2,"write_fraction":1.01})",
                          R"({"cmd":"workload","cpu":2,"write_fraction":-0.5})",
                          R"({"cmd":"workload","cpu":2,"write_fraction":"half"})",
                          R"({"cmd":"workload","cpu":2,"write_fraction":null})"}) {
    INFO(bad);
    auto e = parse_control_request(bad);
    REQUIRE_FALSE(e.ok());
    CHECK(e.error().message.find("'write_fraction'") != std::string::npos);
  }

  auto a = parse_control_request(R"({"cmd":"clock","advance_ms":604800000})");
  REQUIRE(a.ok());
  CHECK(std::get<ClockAdvanceRequest>(*a).ms == kMaxAdvanceMs);
  CHECK_FALSE(parse_control_request(R"({"cmd":"clock","advance_ms":604800001})").ok());
}

TEST_CASE("CPU hotplug is refused without a simulated machine, with a reason") {
  // A daemon without a simulated backend (here: none at all, which takes the
  // same path as the real-hardware backend) cannot power CPUs: the kernel
  // does, and the daemon follows sysfs.
  Daemon d(DaemonOptions{});
  json j = run_control_request(d, ControlRequest{CpuOnlineRequest{3, false}});
  CHECK(j["ok"] == false);
  const std::string error = j["error"].get<std::string>();
  CHECK(error.find("hotplugs the simulated machine") != std::string::npos);
  CHECK(error.find("the daemon follows") != std::string::npos);
}

TEST_CASE("lwp requests parse with their fields, bounds and refusals") {
  auto r = parse_control_request(
      R"({"cmd":"lwp","action":"arm","tid":7,"instructions":99999,"dcache":0,)"
      R"("buffer_bytes":4096,"threshold":320,"min_latency":4,"random":3,"levels":["dram","l3"]})");
  REQUIRE(r.ok());
  const auto* q = std::get_if<LwpRequest>(&*r);
  REQUIRE(q != nullptr);
  CHECK(q->action == LwpRequest::Action::kArm);
  CHECK(q->tid == 7);
  CHECK(q->instructions == 99999u);
  CHECK(q->dcache == 0u);
  CHECK_FALSE(q->value.has_value());
  CHECK_FALSE(q->branches.has_value());
  CHECK(q->buffer_bytes == 4096);
  CHECK(q->threshold == 320);
  CHECK(q->min_latency == 4);
  CHECK(q->random == 3);
  CHECK(q->clf);
  CHECK(q->ram);
  CHECK(q->nbc);
  CHECK_FALSE(q->rdc);
  auto d = parse_control_request(R"({"cmd":"lwp","action":"drain","tid":7,"max":10})");
  REQUIRE(d.ok());
  CHECK(std::get<LwpRequest>(*d).max == 10);
  auto w = parse_control_request(
      R"({"cmd":"workload","tid":3,"instructions_per_sec":1e9,"branch_share":0.25})");
  REQUIRE(w.ok());
  CHECK(std::get<WorkloadRequest>(*w).workload.instructions_per_sec == 1e9);
  CHECK(std::get<WorkloadRequest>(*w).workload.branch_share == 0.25);

  for (const char* bad : {
           R"({"cmd":"lwp","tid":7})",
           R"({"cmd":"lwp","action":"fly","tid":7})",
           R"({"cmd":"lwp","action":"arm"})",
           R"({"cmd":"lwp","action":"arm","tid":7})",
           R"({"cmd":"lwp","action":"arm","tid":0,"dcache":1})",
           R"({"cmd":"lwp","action":"arm","tid":7,"dcache":67108864})",
           R"({"cmd":"lwp","action":"arm","tid":7,"dcache":1,"random":16})",
           R"({"cmd":"lwp","action":"arm","tid":7,"dcache":1,"levels":["l4"]})",
           R"({"cmd":"lwp","action":"arm","tid":7,"dcache":1,"levels":"dram"})",
           R"({"cmd":"lwp","action":"arm","tid":7,"dcache":1,"max":3})",
           R"({"cmd":"lwp","action":"drain","tid":7,"dcache":1})",
           R"({"cmd":"lwp","action":"drain","tid":7,"max":0})",
           R"({"cmd":"lwp","action":"drain","tid":7,"max":4097})",
           R"({"cmd":"lwp","action":"status","tid":7,"speed":1})",
           R"({"cmd":"workload","tid":3,"branch_share":1.5})",
       }) {
    INFO(bad);
    CHECK_FALSE(parse_control_request(bad).ok());
  }
  // A target without LWP refuses with a reason.
  FakeTarget t;
  json reply = json::parse(handle_control_line(t, R"({"cmd":"lwp","action":"status","tid":7})"));
  CHECK(reply["ok"] == false);
  CHECK(reply["error"] == "LWP is not available here");
}
