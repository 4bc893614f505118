// Implements the control socket protocol: strict validation of untrusted
// JSON lines (type, range and unknown-field checks) and the dispatch of
// requests to a ControlTarget.
#include "daemon/control_protocol.h"

#include <cmath>
#include <initializer_list>
#include <limits>
#include <type_traits>

#include "base/json_input.h"

namespace resctrlfs::daemon {

namespace {

using nlohmann::json;

Error bad(std::string message) { return Error::make(EINVAL, std::move(message)); }

// Refuses fields the command does not know: a typo ("advance": 10) must not
// silently do nothing.
Result<void> only_fields(const json& obj, std::initializer_list<const char*> allowed) {
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    bool known = it.key() == "cmd";
    for (const char* a : allowed) known = known || it.key() == a;
    if (!known) return bad("unknown field '" + it.key() + "'");
  }
  return Ok();
}

Result<uint64_t> get_uint(const json& obj, const char* key, uint64_t max) {
  const auto it = obj.find(key);
  if (it == obj.end()) return bad(std::string("missing field '") + key + "'");
  const json& v = *it;
  if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() >= 0)) {
    return bad(std::string("'") + key + "' must be a non-negative integer");
  }
  const uint64_t n = v.get<uint64_t>();
  if (n > max)
    return bad(std::string("'") + key + "' is too large (max " + std::to_string(max) + ")");
  return n;
}

Result<double> get_double(const json& obj, const char* key, double lo, double hi) {
  const auto it = obj.find(key);
  if (it == obj.end()) return bad(std::string("missing field '") + key + "'");
  const json& v = *it;
  if (!v.is_number()) return bad(std::string("'") + key + "' must be a number");
  const double d = v.get<double>();
  if (!std::isfinite(d) || d < lo || d > hi) {
    return bad(std::string("'") + key + "' is out of range");
  }
  return d;
}

Result<ControlRequest> parse_clock(const json& obj) {
  const bool has_mode = obj.contains("mode");
  const bool has_adv = obj.contains("advance_ms");
  if (has_mode == has_adv) return bad("clock needs exactly one of 'mode' or 'advance_ms'");
  RESCTRLFS_RETURN_IF_ERROR(only_fields(obj, {"mode", "advance_ms"}));
  if (has_mode) {
    const json& m = *obj.find("mode");  // contains() above
    if (m.is_string() && m.get_ref<const std::string&>() == "manual") {
      return ControlRequest{ClockModeRequest{true}};
    }
    if (m.is_string() && m.get_ref<const std::string&>() == "real") {
      return ControlRequest{ClockModeRequest{false}};
    }
    return bad("clock mode must be \"manual\" or \"real\"");
  }
  RESCTRLFS_ASSIGN_OR_RETURN(uint64_t ms, get_uint(obj, "advance_ms", kMaxAdvanceMs));
  return ControlRequest{ClockAdvanceRequest{ms}};
}

Result<ControlRequest> parse_workload(const json& obj) {
  RESCTRLFS_RETURN_IF_ERROR(only_fields(
      obj, {"tid", "cpu", "channel", "node", "footprint_bytes", "bandwidth_mbps", "local_fraction",
            "write_fraction", "instructions_per_sec", "branch_share"}));
  WorkloadRequest req;
  const bool has_tid = obj.contains("tid");
  const bool has_cpu = obj.contains("cpu");
  // 'channel': a device workload on an I/O RDT channel, alone.
  if (obj.contains("channel")) {
    if (has_tid || has_cpu) return bad("'channel' goes without 'tid' and 'cpu'");
    RESCTRLFS_ASSIGN_OR_RETURN(uint64_t ch, get_uint(obj, "channel", UINT32_MAX));
    req.channel = static_cast<uint32_t>(ch);
  }
  // 'node': the NUMA node a device's DMA targets (channel workloads only).
  if (obj.contains("node")) {
    if (!req.channel) return bad("'node' goes with 'channel' only");
    RESCTRLFS_ASSIGN_OR_RETURN(uint64_t node, get_uint(obj, "node", 65535));
    req.workload.node = static_cast<int>(node);
  }
  // 'cpu' alone: a CPU workload; 'tid' alone: the thread's; both: the
  // thread's, pinned to that CPU.
  if (!has_tid && !has_cpu && !req.channel) return bad("workload needs 'tid', 'cpu' or 'channel'");
  if (has_tid) {
    RESCTRLFS_ASSIGN_OR_RETURN(uint64_t tid, get_uint(obj, "tid", std::numeric_limits<int>::max()));
    if (tid == 0) return bad("'tid' must be positive");
    req.tid = static_cast<int>(tid);
  }
  if (has_cpu) {
    RESCTRLFS_ASSIGN_OR_RETURN(uint64_t cpu, get_uint(obj, "cpu", 65535));
    req.cpu = static_cast<unsigned>(cpu);
  }
  if (obj.contains("footprint_bytes")) {
    RESCTRLFS_ASSIGN_OR_RETURN(
        req.workload.cache_footprint_bytes,
        get_uint(obj, "footprint_bytes", std::numeric_limits<int64_t>::max()));
  }
  // The optional rates and shares, each with its range.
  struct DoubleField {
    const char* key;
    double hw::Workload::*field;
    double lo, hi;
  };
  static constexpr DoubleField kDoubles[] = {
      {"bandwidth_mbps", &hw::Workload::bandwidth_mbps, 0.0, 1e9},
      {"local_fraction", &hw::Workload::local_fraction, 0.0, 1.0},
      {"write_fraction", &hw::Workload::write_fraction, 0.0, 1.0},
      {"instructions_per_sec", &hw::Workload::instructions_per_sec, 0.0, 1e12},
      {"branch_share", &hw::Workload::branch_share, 0.0, 1.0}};
  for (const DoubleField& f : kDoubles) {
    if (!obj.contains(f.key)) continue;
    RESCTRLFS_ASSIGN_OR_RETURN(req.workload.*f.field, get_double(obj, f.key, f.lo, f.hi));
  }
  return ControlRequest{req};
}

Result<ControlRequest> parse_lwp(const json& obj) {
  RESCTRLFS_RETURN_IF_ERROR(only_fields(
      obj,
      {"action", "tid", "value", "instructions", "branches", "dcache", "buffer_bytes", "threshold",
       "min_latency", "random", "levels", "max", "data2", "data1", "flags", "count"}));
  LwpRequest req;
  auto a = obj.find("action");
  if (a == obj.end() || !a->is_string()) return bad("lwp needs 'action'");
  const std::string& action = a->get_ref<const std::string&>();
  if (action == "arm") {
    req.action = LwpRequest::Action::kArm;
  } else if (action == "drain") {
    req.action = LwpRequest::Action::kDrain;
  } else if (action == "status") {
    req.action = LwpRequest::Action::kStatus;
  } else if (action == "disarm") {
    req.action = LwpRequest::Action::kDisarm;
  } else if (action == "ins") {
    req.action = LwpRequest::Action::kIns;
  } else if (action == "val") {
    req.action = LwpRequest::Action::kVal;
  } else {
    return bad("lwp action must be arm, drain, status, disarm, ins or val");
  }
  if (!obj.contains("tid")) return bad("lwp needs 'tid'");
  RESCTRLFS_ASSIGN_OR_RETURN(uint64_t tid, get_uint(obj, "tid", std::numeric_limits<int>::max()));
  if (tid == 0) return bad("'tid' must be positive");
  req.tid = static_cast<int>(tid);
  const bool arm = req.action == LwpRequest::Action::kArm;
  for (const char* k : {"value", "instructions", "branches", "dcache", "buffer_bytes", "threshold",
                        "min_latency", "random", "levels"})
    if (!arm && obj.contains(k)) return bad(std::string("'") + k + "' only goes with arm");
  if (obj.contains("max") && req.action != LwpRequest::Action::kDrain)
    return bad("'max' only goes with drain");
  const bool insert =
      req.action == LwpRequest::Action::kIns || req.action == LwpRequest::Action::kVal;
  for (const char* k : {"data2", "data1", "flags", "count"})
    if (!insert && obj.contains(k))
      return bad(std::string("'") + k + "' only goes with ins or val");
  // An unsigned field no larger than `max` into `out`, an integer of any
  // width; an absent field leaves `out` as it is.
  auto number = [&](const char* k, uint64_t max, auto& out) -> Result<void> {
    if (!obj.contains(k)) return Ok();
    RESCTRLFS_ASSIGN_OR_RETURN(uint64_t v, get_uint(obj, k, max));
    out = static_cast<std::remove_reference_t<decltype(out)>>(v);
    return Ok();
  };
  RESCTRLFS_RETURN_IF_ERROR(number("data2", UINT64_MAX, req.data2));
  RESCTRLFS_RETURN_IF_ERROR(number("data1", 0xFFFFFFFFULL, req.data1));
  RESCTRLFS_RETURN_IF_ERROR(number("flags", 0xFFFF, req.flags));
  RESCTRLFS_RETURN_IF_ERROR(number("count", kMaxLwpInsertCount, req.count));
  if (obj.contains("count") && req.count == 0) return bad("'count' must be positive");
  constexpr uint64_t kInterval = (1U << 26) - 1;  // 26-bit counters
  auto interval = [&](const char* k, std::optional<uint32_t>& out) -> Result<void> {
    if (!obj.contains(k)) return Ok();
    uint32_t v = 0;
    RESCTRLFS_RETURN_IF_ERROR(number(k, kInterval, v));
    out = v;
    return Ok();
  };
  RESCTRLFS_RETURN_IF_ERROR(interval("value", req.value));
  RESCTRLFS_RETURN_IF_ERROR(interval("instructions", req.instructions));
  RESCTRLFS_RETURN_IF_ERROR(interval("branches", req.branches));
  RESCTRLFS_RETURN_IF_ERROR(interval("dcache", req.dcache));
  if (arm && !req.value && !req.instructions && !req.branches && !req.dcache)
    return bad("lwp arm needs at least one of value, instructions, branches, dcache");
  RESCTRLFS_RETURN_IF_ERROR(number("buffer_bytes", (1U << 28) - 1, req.buffer_bytes));
  RESCTRLFS_RETURN_IF_ERROR(number("threshold", 0xFFFFFFFFULL, req.threshold));
  RESCTRLFS_RETURN_IF_ERROR(number("min_latency", 255, req.min_latency));
  RESCTRLFS_RETURN_IF_ERROR(number("random", 15, req.random));
  if (obj.contains("levels")) {
    const json& l = *obj.find("levels");
    if (!l.is_array()) return bad("'levels' must be a list of l3, remote, dram, other");
    req.clf = true;
    for (const json& x : l) {
      if (!x.is_string()) return bad("'levels' must be a list of l3, remote, dram, other");
      const std::string& v = x.get_ref<const std::string&>();
      if (v == "l3") {
        req.nbc = true;
      } else if (v == "remote") {
        req.rdc = true;
      } else if (v == "dram") {
        req.ram = true;
      } else if (v == "other") {
        req.oth = true;
      } else {
        return bad("unknown level '" + v + "' (l3, remote, dram, other)");
      }
    }
  }
  RESCTRLFS_RETURN_IF_ERROR(number("max", kMaxLwpDrain, req.max));
  if (obj.contains("max") && req.max == 0) return bad("'max' must be positive");
  return ControlRequest{req};
}

Result<ControlRequest> parse_fault(const json& obj) {
  RESCTRLFS_RETURN_IF_ERROR(only_fields(obj, {"fail_writes", "cpu"}));
  if (!obj.contains("fail_writes")) return bad("fault needs 'fail_writes'");
  FaultRequest req;
  RESCTRLFS_ASSIGN_OR_RETURN(uint64_t n, get_uint(obj, "fail_writes", kMaxFailWrites));
  req.fail_writes = static_cast<unsigned>(n);
  if (obj.contains("cpu")) {
    RESCTRLFS_ASSIGN_OR_RETURN(uint64_t cpu, get_uint(obj, "cpu", 65535));
    req.cpu = static_cast<unsigned>(cpu);
  }
  return ControlRequest{req};
}

Result<ControlRequest> parse_cpu(const json& obj) {
  RESCTRLFS_RETURN_IF_ERROR(only_fields(obj, {"cpu", "online"}));
  if (!obj.contains("cpu") || !obj.contains("online")) return bad("cpu needs 'cpu' and 'online'");
  CpuOnlineRequest req;
  RESCTRLFS_ASSIGN_OR_RETURN(uint64_t cpu, get_uint(obj, "cpu", 65535));
  req.cpu = static_cast<unsigned>(cpu);
  const json& on = *obj.find("online");  // contains() above
  if (!on.is_boolean()) return bad("'online' must be true or false");
  req.online = on.get<bool>();
  return ControlRequest{req};
}

Result<ControlRequest> parse_thread_cpu(const json& obj) {
  RESCTRLFS_RETURN_IF_ERROR(only_fields(obj, {"tid"}));
  if (!obj.contains("tid")) return bad("thread-cpu needs 'tid'");
  RESCTRLFS_ASSIGN_OR_RETURN(uint64_t tid, get_uint(obj, "tid", std::numeric_limits<int>::max()));
  if (tid == 0) return bad("'tid' must be a thread id (> 0)");
  return ControlRequest{ThreadCpuRequest{static_cast<int>(tid)}};
}

template <typename T>
Result<ControlRequest> no_args(const json& obj) {
  RESCTRLFS_RETURN_IF_ERROR(only_fields(obj, {}));
  return ControlRequest{T{}};
}

Result<ControlRequest> parse_object(const json& obj) {
  if (!obj.is_object()) return bad("request must be a JSON object");
  auto cmd_it = obj.find("cmd");
  if (cmd_it == obj.end() || !cmd_it->is_string()) return bad("missing string field 'cmd'");
  const std::string& cmd = cmd_it->get_ref<const std::string&>();
  if (cmd == "status") return no_args<StatusRequest>(obj);
  if (cmd == "clock") return parse_clock(obj);
  if (cmd == "workload") return parse_workload(obj);
  if (cmd == "fault") return parse_fault(obj);
  if (cmd == "registers") return no_args<RegistersRequest>(obj);
  if (cmd == "cpu") return parse_cpu(obj);
  if (cmd == "stats") return no_args<StatsRequest>(obj);
  if (cmd == "stats-reset") return no_args<StatsResetRequest>(obj);
  if (cmd == "lwp") return parse_lwp(obj);
  if (cmd == "thread-cpu") return parse_thread_cpu(obj);
  return bad("unknown cmd '" + cmd + "'");
}

std::string dump_line(const json& j) { return reply_line(j); }

}  // namespace

std::string reply_line(const json& j) {
  // replace: a reply must never fail to serialise, whatever text it carries.
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

json control_error(std::string_view message) {
  return json{{"ok", false}, {"error", std::string(message)}};
}

Result<ControlRequest> parse_control_request(std::string_view line) {
  if (line.size() > kMaxControlLine) return bad("request too long");
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
  if (line.empty()) return bad("empty request");
  Result<json> parsed = parse_json(line);
  if (!parsed.ok()) return bad("malformed JSON: " + parsed.error().message);
  const json& obj = *parsed;
  try {
    return parse_object(obj);
  } catch (const std::exception& e) {
    // parse_object checks types before every access; this is a last guard.
    return bad(std::string("bad request: ") + e.what());
  }
}

json run_control_request(ControlTarget& target, const ControlRequest& req) {
  Result<json> r = std::visit(
      [&](const auto& q) -> Result<json> {
        using T = std::decay_t<decltype(q)>;
        if constexpr (std::is_same_v<T, StatusRequest>) return target.status();
        if constexpr (std::is_same_v<T, ClockModeRequest>) return target.set_clock_mode(q.manual);
        if constexpr (std::is_same_v<T, ClockAdvanceRequest>) return target.advance_clock(q.ms);
        if constexpr (std::is_same_v<T, WorkloadRequest>) return target.attach_workload(q);
        if constexpr (std::is_same_v<T, FaultRequest>) return target.inject_fault(q);
        if constexpr (std::is_same_v<T, RegistersRequest>) return target.registers();
        if constexpr (std::is_same_v<T, StatsRequest>) return target.stats();
        if constexpr (std::is_same_v<T, StatsResetRequest>) return target.reset_stats();
        if constexpr (std::is_same_v<T, CpuOnlineRequest>) return target.set_cpu_online(q);
        if constexpr (std::is_same_v<T, LwpRequest>) return target.lwp(q);
        if constexpr (std::is_same_v<T, ThreadCpuRequest>) return target.thread_cpu(q);
      },
      req);
  if (!r.ok()) {
    return control_error(r.error().message.empty() ? std::string(strerror(r.error().code))
                                                   : r.error().message);
  }
  json out = std::move(r).value();
  if (!out.is_object()) out = json{{"result", std::move(out)}};
  out["ok"] = true;
  return out;
}

std::string handle_control_line(ControlTarget& target, std::string_view line) {
  try {
    Result<ControlRequest> req = parse_control_request(line);
    if (!req.ok()) return dump_line(control_error(req.error().message));
    return dump_line(run_control_request(target, *req));
  } catch (const std::exception& e) {
    return dump_line(control_error(std::string("internal error: ") + e.what()));
  }
}

}  // namespace resctrlfs::daemon
