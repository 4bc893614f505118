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
//    "bandwidth_mbps":M, "local_fraction":F[, "write_fraction":W]}
//     (W: the share of M that is writes, 0..1, default 0)
//   {"cmd":"fault","fail_writes":N[,"cpu":C]}
//   {"cmd":"registers"}
//   {"cmd":"cpu","cpu":N,"online":true|false}   (CPU hotplug, simulated only)
//   {"cmd":"stats"}            {"cmd":"stats-reset"}
//   {"cmd":"workload", ..., "instructions_per_sec":I, "branch_share":S}
//   {"cmd":"lwp","action":"arm","tid":T[,"value":N][,"instructions":N]
//    [,"branches":N][,"dcache":N][,"buffer_bytes":B][,"threshold":B]
//    [,"min_latency":M][,"random":R][,"levels":["l3","remote","dram","other"]]}
//   {"cmd":"lwp","action":"drain"|"status"|"disarm","tid":T[,"max":N]}
//   {"cmd":"lwp","action":"ins"|"val","tid":T[,"data2":R][,"data1":D]
//    [,"flags":F][,"count":N]}
//     AMD Lightweight Profiling of a simulated thread (ours): the numbers
//     after the event names are their intervals; drain replies with the
//     records (at most kMaxLwpDrain) as hex of the 32-byte record format;
//     ins / val execute LWPINS / LWPVAL N times (default 1) with those
//     operands (shipped generation only).
//   {"cmd":"thread-cpu","tid":T}
//     the platform CPU real thread T counts as running on (thread_cpu.h;
//     with virtual CPUs, the virtual CPU of its affinity): {"cpu":C}
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
// Records one lwp drain reply carries at most (64 hex digits each).
inline constexpr size_t kMaxLwpDrain = 4096;

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
struct LwpRequest {
  enum class Action { kArm, kDrain, kStatus, kDisarm, kIns, kVal } action = Action::kStatus;
  int tid = 0;
  // arm: intervals per event (absent: not profiled), the LWPCB's fields.
  std::optional<uint32_t> value, instructions, branches, dcache;
  uint32_t buffer_bytes = 64 * 1024;
  uint32_t threshold = 0;
  uint8_t min_latency = 0;
  uint8_t random = 0;
  bool clf = false, nbc = false, rdc = false, ram = false, oth = false;
  // drain
  size_t max = kMaxLwpDrain;
  // ins / val: the instruction's operands and how many times it runs
  uint64_t data2 = 0;
  uint32_t data1 = 0;
  uint16_t flags = 0;
  uint64_t count = 1;
};
// Executions of LWPINS / LWPVAL one lwp ins / val request runs at most.
inline constexpr uint64_t kMaxLwpInsertCount = 1000000;
struct ThreadCpuRequest {
  int tid = 0;
};
struct RegistersRequest {};
struct StatsRequest {};
struct StatsResetRequest {};

using ControlRequest =
    std::variant<StatusRequest, ClockModeRequest, ClockAdvanceRequest, WorkloadRequest,
                 FaultRequest, RegistersRequest, StatsRequest, StatsResetRequest, CpuOnlineRequest,
                 LwpRequest, ThreadCpuRequest>;

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
  // LWP of a simulated thread (ours); targets without it refuse.
  virtual Result<nlohmann::json> lwp(const LwpRequest& req) {
    return Error::make(EOPNOTSUPP, "LWP is not available here");
  }
  // The platform CPU a real thread counts as running on.
  virtual Result<nlohmann::json> thread_cpu(const ThreadCpuRequest& req) {
    return Error::make(EOPNOTSUPP, "thread-cpu is not available here");
  }
};

nlohmann::json run_control_request(ControlTarget& target, const ControlRequest& req);

// Parses and runs one line; returns the reply as one line of JSON (without
// the trailing newline).
std::string handle_control_line(ControlTarget& target, std::string_view line);

// The error reply.
nlohmann::json control_error(std::string_view message);

// A reply as one line of JSON (without the trailing newline); never fails
// to serialise, whatever text it carries.
std::string reply_line(const nlohmann::json& reply);

}  // namespace resctrlfs::daemon
