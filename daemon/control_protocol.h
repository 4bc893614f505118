// Defines the control socket protocol of resctrlfsd: one JSON object per
// line in, one JSON object per line out. parse_control_request() turns a
// line into a typed request (never throws, whatever the bytes);
// handle_control_line() runs it against a ControlTarget and always produces
// a reply, {"ok":false,"error":"..."} on any failure.
//
// Requests:
//   {"cmd":"status"}
//   {"cmd":"clock","mode":"manual"|"real"}
//   {"cmd":"clock","advance_ms":N}
//   {"cmd":"workload","tid":T | "cpu":C, "footprint_bytes":B,
//    "bandwidth_mbps":M, "local_fraction":F}
//   {"cmd":"fault","fail_writes":N[,"cpu":C]}
//   {"cmd":"registers"}
//   {"cmd":"cpu","cpu":N,"online":true|false}   (CPU hotplug, simulated only)
//   {"cmd":"stats"}            {"cmd":"stats-reset"}
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include <nlohmann/json.hpp>

#include "base/result.h"
#include "hw/backend.h"

namespace resctrlfs::daemon {

// Longest request line accepted; longer input is refused, not buffered.
inline constexpr size_t kMaxControlLine = 64 * 1024;
// Upper bound of one clock advance: it runs one fs tick per simulated
// second, so an absurd value would stall the daemon.
inline constexpr uint64_t kMaxAdvanceMs = 7ULL * 24 * 3600 * 1000;
inline constexpr uint64_t kMaxFailWrites = 1000000;

struct StatusRequest {};
struct ClockModeRequest {
  bool manual = false;
};
struct ClockAdvanceRequest {
  uint64_t ms = 0;
};
struct WorkloadRequest {
  std::optional<int> tid;
  std::optional<unsigned> cpu;
  std::optional<uint32_t> channel;  // an I/O RDT device channel (ours)
  hw::Workload workload;
};
struct FaultRequest {
  unsigned fail_writes = 0;
  std::optional<unsigned> cpu;
};
struct CpuOnlineRequest {
  unsigned cpu = 0;
  bool online = false;
};
struct RegistersRequest {};
struct StatsRequest {};
struct StatsResetRequest {};

using ControlRequest =
    std::variant<StatusRequest, ClockModeRequest, ClockAdvanceRequest, WorkloadRequest,
                 FaultRequest, RegistersRequest, StatsRequest, StatsResetRequest, CpuOnlineRequest>;

Result<ControlRequest> parse_control_request(std::string_view line);

// What the control socket drives. Each method returns the reply's payload
// (an object; "ok":true is added) or an error whose message is reported.
class ControlTarget {
 public:
  virtual ~ControlTarget() = default;
  virtual Result<nlohmann::json> status() = 0;
  virtual Result<nlohmann::json> set_clock_mode(bool manual) = 0;
  virtual Result<nlohmann::json> advance_clock(uint64_t ms) = 0;
  virtual Result<nlohmann::json> attach_workload(const WorkloadRequest& req) = 0;
  virtual Result<nlohmann::json> inject_fault(const FaultRequest& req) = 0;
  virtual Result<nlohmann::json> registers() = 0;
  virtual Result<nlohmann::json> stats() = 0;
  virtual Result<nlohmann::json> reset_stats() = 0;
  // CPU hotplug of the simulated machine, followed by the filesystem.
  virtual Result<nlohmann::json> set_cpu_online(const CpuOnlineRequest& req) = 0;
};

nlohmann::json run_control_request(ControlTarget& target, const ControlRequest& req);

// Parses and runs one line; returns the reply as one line of JSON (without
// the trailing newline).
std::string handle_control_line(ControlTarget& target, std::string_view line);

// The error reply.
nlohmann::json control_error(std::string_view message);

}  // namespace resctrlfs::daemon
