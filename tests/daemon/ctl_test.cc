// Tests resctrlfsctl's argument parsing: each subcommand produces the JSON
// request the daemon's protocol expects (checked by parsing it back).
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "daemon/control_protocol.h"
#include "daemon/ctl.h"

using namespace resctrlfs::daemon;
using nlohmann::json;

namespace {

ParsedCtlArgs parse(std::vector<std::string> args, const char* env = nullptr) {
  args.insert(args.begin(), "resctrlfsctl");
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  return parse_ctl_args(static_cast<int>(argv.size()), argv.data(), env);
}

}  // namespace

TEST_CASE("subcommands map to protocol requests") {
  struct Case {
    std::vector<std::string> args;
    json want;
  };
  const std::vector<Case> cases = {
      {{"status"}, {{"cmd", "status"}}},
      {{"clock", "advance", "2500"}, {{"cmd", "clock"}, {"advance_ms", 2500}}},
      {{"clock", "mode", "manual"}, {{"cmd", "clock"}, {"mode", "manual"}}},
      {{"clock", "mode", "real"}, {{"cmd", "clock"}, {"mode", "real"}}},
      {{"workload", "--tid", "77", "--footprint", "4096", "--bandwidth", "250", "--local", "0.5"},
       {{"cmd", "workload"},
        {"tid", 77},
        {"footprint_bytes", 4096},
        {"bandwidth_mbps", 250.0},
        {"local_fraction", 0.5}}},
      {{"workload", "--cpu", "1", "--bandwidth", "10"},
       {{"cmd", "workload"},
        {"cpu", 1},
        {"footprint_bytes", 0},
        {"bandwidth_mbps", 10.0},
        {"local_fraction", 1.0}}},
      // A thread's workload pinned to a CPU.
      {{"workload", "--tid", "9", "--cpu", "2", "--bandwidth", "5"},
       {{"cmd", "workload"},
        {"tid", 9},
        {"cpu", 2},
        {"footprint_bytes", 0},
        {"bandwidth_mbps", 5.0},
        {"local_fraction", 1.0}}},
      // A device's workload on an I/O RDT channel (hex as the IRDT numbers it).
      {{"workload", "--channel", "0x100", "--footprint", "8192", "--bandwidth", "40"},
       {{"cmd", "workload"},
        {"channel", 256},
        {"footprint_bytes", 8192},
        {"bandwidth_mbps", 40.0},
        {"local_fraction", 1.0}}},
      {{"workload", "--cpu", "2", "--bandwidth", "500", "--write-share", "0.25"},
       {{"cmd", "workload"},
        {"cpu", 2},
        {"footprint_bytes", 0},
        {"bandwidth_mbps", 500.0},
        {"local_fraction", 1.0},
        {"write_fraction", 0.25}}},
      {{"fault", "--fail-writes", "3"}, {{"cmd", "fault"}, {"fail_writes", 3}}},
      {{"fault", "--fail-writes", "1", "--cpu", "2"},
       {{"cmd", "fault"}, {"fail_writes", 1}, {"cpu", 2}}},
      {{"registers"}, {{"cmd", "registers"}}},
      {{"workload", "--tid", "4", "--bandwidth", "2000", "--instructions-per-sec", "1e9",
        "--branch-share", "0.25"},
       {{"cmd", "workload"},
        {"tid", 4},
        {"footprint_bytes", 0},
        {"bandwidth_mbps", 2000.0},
        {"local_fraction", 1.0},
        {"instructions_per_sec", 1e9},
        {"branch_share", 0.25}}},
      {{"lwp", "arm", "--tid", "5", "--instructions", "999", "--dcache", "99", "--min-latency", "4",
        "--levels", "dram,remote", "--buffer", "8192", "--threshold", "320"},
       {{"cmd", "lwp"},
        {"action", "arm"},
        {"tid", 5},
        {"instructions", 999},
        {"dcache", 99},
        {"buffer_bytes", 8192},
        {"threshold", 320},
        {"min_latency", 4},
        {"random", 0},
        {"levels", {"dram", "remote"}}}},
      {{"lwp", "status", "--tid", "5"}, {{"cmd", "lwp"}, {"action", "status"}, {"tid", 5}}},
      {{"lwp", "disarm", "--tid", "5"}, {{"cmd", "lwp"}, {"action", "disarm"}, {"tid", 5}}},
      {{"cpu", "offline", "6"}, {{"cmd", "cpu"}, {"cpu", 6}, {"online", false}}},
      {{"cpu", "online", "6"}, {{"cmd", "cpu"}, {"cpu", 6}, {"online", true}}},
      {{"stats"}, {{"cmd", "stats"}}},
      {{"stats", "reset"}, {{"cmd", "stats-reset"}}},
      {{"send", R"({"cmd":"status"})"}, {{"cmd", "status"}}},
  };
  for (const Case& c : cases) {
    INFO(c.args[0]);
    ParsedCtlArgs p = parse(c.args);
    REQUIRE(p.request);
    CHECK(*p.request == c.want);
    // What the CLI sends is what the daemon accepts.
    CHECK(parse_control_request(p.request->dump()).ok());
  }
}

TEST_CASE("socket path: default, environment, option") {
  CHECK(parse({"status"}).socket == kDefaultControlSocket);
  CHECK(parse({"status"}, "/tmp/env.sock").socket == "/tmp/env.sock");
  CHECK(parse({"--socket", "/tmp/opt.sock", "status"}, "/tmp/env.sock").socket == "/tmp/opt.sock");
}

TEST_CASE("usage errors") {
  for (std::vector<std::string> bad :
       std::vector<std::vector<std::string>>{{},
                                             {"bogus"},
                                             {"clock"},
                                             {"clock", "mode", "fast"},
                                             {"clock", "advance"},
                                             {"workload", "--bandwidth", "1"},
                                             {"workload", "--channel", "1", "--cpu", "0"},
                                             {"workload", "--channel", "x"},
                                             {"fault"},
                                             {"cpu"},
                                             {"cpu", "offline"},
                                             {"cpu", "off", "1"},
                                             {"cpu", "online", "x"},
                                             {"stats", "clear"},
                                             {"send", "{"}}) {
    ParsedCtlArgs p = parse(bad);
    CHECK_FALSE(p.request);
    CHECK(p.exit_code != 0);
  }
}

TEST_CASE("a mistyped command is named, with a suggestion and the list") {
  ParsedCtlArgs p = parse({"stauts"});
  CHECK_FALSE(p.request);
  CHECK(p.exit_code == 2);
  CHECK(p.output.find("unknown command \"stauts\" (did you mean status?)") != std::string::npos);
  CHECK(p.output.find("status, clock, workload") != std::string::npos);
  p = parse({"--socket", "/x", "nonsense"});
  CHECK(p.output.find("unknown command \"nonsense\"; commands:") != std::string::npos);
}

TEST_CASE("ctl_send reports a missing socket") {
  auto r = ctl_send("/nonexistent/dir/resctrlfsd.sock", json{{"cmd", "status"}});
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message.find("cannot connect") != std::string::npos);
}

TEST_CASE("lwp drain names its file, lwp decode sends nothing") {
  ParsedCtlArgs d = parse({"lwp", "drain", "--tid", "5", "--out", "/tmp/x.lwp"});
  REQUIRE(d.request.has_value());
  CHECK(*d.request == json{{"cmd", "lwp"}, {"action", "drain"}, {"tid", 5}});
  CHECK(d.lwp_out == "/tmp/x.lwp");
  ParsedCtlArgs c = parse({"lwp", "decode", "/tmp/x.lwp"});
  CHECK_FALSE(c.request.has_value());
  REQUIRE(c.lwp_decode.has_value());
  CHECK(*c.lwp_decode == "/tmp/x.lwp");
  CHECK(parse({"lwp", "drain", "--tid", "5"}).exit_code != 0);  // --out is required
  CHECK(parse({"lwp", "arm"}).exit_code != 0);                  // --tid is required
  auto missing = ctl_lwp_decode("/nonexistent/file.lwp");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().message.find("cannot read") != std::string::npos);
}
