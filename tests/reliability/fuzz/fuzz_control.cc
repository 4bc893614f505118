// libFuzzer target: the control socket protocol. Any line must parse to a
// request or an error (never throw or crash), and running it against a
// target must always produce one line of JSON with an "ok" member.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "daemon/control_protocol.h"

namespace {

using namespace resctrlfs;
using nlohmann::json;

class NullTarget final : public daemon::ControlTarget {
 public:
  Result<json> status() override { return json{{"x", 1}}; }
  Result<json> set_clock_mode(bool) override { return json::object(); }
  Result<json> advance_clock(uint64_t ms) override {
    if (ms > daemon::kMaxAdvanceMs) std::abort();  // the parser must bound it
    return json::object();
  }
  Result<json> attach_workload(const daemon::WorkloadRequest& r) override {
    if (r.tid.has_value() == r.cpu.has_value()) std::abort();  // exactly one
    return json::object();
  }
  Result<json> inject_fault(const daemon::FaultRequest& r) override {
    if (r.fail_writes > daemon::kMaxFailWrites) std::abort();
    return Error::make(EINVAL, "no");
  }
  Result<json> registers() override { return json::object(); }
  Result<json> stats() override { return json::object(); }
  Result<json> reset_stats() override { return json::object(); }
  Result<json> set_cpu_online(const daemon::CpuOnlineRequest&) override { return json::object(); }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view line(reinterpret_cast<const char*>(data), size);
  (void)daemon::parse_control_request(line);
  NullTarget t;
  std::string reply = daemon::handle_control_line(t, line);
  json j = json::parse(reply, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object() || !j.contains("ok")) std::abort();
  if (reply.find('\n') != std::string::npos) std::abort();
  return 0;
}
