// Implements resctrlfsctl's argument parsing (CLI11) and its socket client.
#include "daemon/ctl.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>

#include "base/cli_help.h"
#include "base/json_input.h"
#include "base/suggest.h"
#include "base/version.h"
#include "hw/x86/lwp_format.h"

namespace resctrlfs::daemon {

using nlohmann::json;

ParsedCtlArgs parse_ctl_args(int argc, const char* const* argv, const char* env_socket) {
  ParsedCtlArgs out;
  if (env_socket != nullptr && env_socket[0] != '\0') out.socket = env_socket;

  CLI::App app{"resctrlfsctl: talk to resctrlfsd's control socket", "resctrlfsctl"};
  use_help_formatter(app);
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("resctrlfsctl ") + kVersion);
  app.fallthrough();  // --socket and --raw also after the subcommand
  app.add_option("-s,--socket", out.socket, "control socket (env RESCTRLFS_CONTROL)")
      ->capture_default_str();
  app.add_flag("--raw", out.raw, "print the reply line as received");

  CLI::App* status = app.add_subcommand("status", "platform, groups, pools, limbo");

  CLI::App* clock = app.add_subcommand("clock", "the simulated clock");
  clock->require_subcommand(1);
  uint64_t advance_ms = 0;
  CLI::App* advance = clock->add_subcommand("advance", "advance a manual clock by MS");
  advance->add_option("ms", advance_ms, "milliseconds")->required();
  std::string mode;
  CLI::App* mode_cmd = clock->add_subcommand("mode", "manual or real time");
  mode_cmd->add_option("mode", mode, "manual|real")
      ->required()
      ->check(CLI::IsMember({"manual", "real"}));

  CLI::App* workload = app.add_subcommand("workload", "attach a synthetic workload");
  int tid = 0;
  unsigned cpu = 0;
  uint64_t footprint = 0;
  double bandwidth = 0, local = 1.0;
  auto* wl_tid = workload->add_option("--tid", tid, "thread id (with --cpu: pinned to that CPU)");
  auto* wl_cpu = workload->add_option("--cpu", cpu, "CPU");
  uint32_t channel = 0;
  auto* wl_channel =
      workload
          ->add_option("--channel", channel,
                       "I/O RDT device channel (ours), e.g. 0x100: a device's traffic on it")
          ->excludes(wl_tid)
          ->excludes(wl_cpu);
  std::optional<unsigned> dma_node;
  workload
      ->add_option("--node", dma_node,
                   "with --channel: the NUMA node the device's DMA targets (SNC; ours)")
      ->needs(wl_channel);
  workload->add_option("--footprint", footprint, "cache footprint in bytes");
  workload->add_option("--bandwidth", bandwidth, "memory bandwidth in MB/s");
  workload->add_option("--local", local, "fraction of traffic to local memory (0..1)");
  std::optional<double> ips, branch_share, write_share;
  workload->add_option("--write-share", write_share,
                       "share of the traffic that is writes (0..1, default 0)");
  workload->add_option("--instructions-per-sec", ips, "instructions retired per second (LWP)");
  workload->add_option("--branch-share", branch_share, "share of branches (LWP, 0..1)");

  CLI::App* fault = app.add_subcommand(
      "fault",
      "fail the next MSR writes of the simulated machine's configuration registers (masks, "
      "bandwidth, association; counter reads' event selects are not counted, so the "
      "monitoring worker never takes them)");
  unsigned fail_writes = 0;
  unsigned fault_cpu = 0;
  fault
      ->add_option("--fail-writes", fail_writes,
                   "how many writes fail (EIO; 0 ends a fault still pending)")
      ->required();
  auto* f_cpu = fault->add_option("--cpu", fault_cpu, "only on this CPU");

  CLI::App* cpu_cmd = app.add_subcommand("cpu", "CPU hotplug of the simulated machine");
  cpu_cmd->require_subcommand(1);
  unsigned hotplug_cpu = 0;
  CLI::App* cpu_off = cpu_cmd->add_subcommand("offline", "take CPU N offline");
  cpu_off->add_option("cpu", hotplug_cpu, "CPU number")->required();
  CLI::App* cpu_on = cpu_cmd->add_subcommand("online", "bring CPU N online");
  cpu_on->add_option("cpu", hotplug_cpu, "CPU number")->required();

  CLI::App* registers = app.add_subcommand("registers", "dump the simulated RDT registers");
  CLI::App* stats = app.add_subcommand("stats", "FUSE request counts per opcode");
  std::string stats_action;
  stats->add_option("action", stats_action, "reset")->check(CLI::IsMember({"reset"}));
  CLI::App* lwp = app.add_subcommand("lwp", "AMD Lightweight Profiling of a simulated thread");
  lwp->require_subcommand(1);
  int lwp_tid = 0;
  std::optional<uint32_t> lv, li, lb, ld;
  uint32_t lbuf = 64 * 1024, lthr = 0, lminlat = 0, lrand = 0;
  std::vector<std::string> levels;
  CLI::App* lwp_arm = lwp->add_subcommand("arm", "load an LWPCB for thread T");
  lwp_arm->add_option("--tid", lwp_tid, "thread id")->required();
  lwp_arm->add_option("--value", lv, "LWPVAL interval");
  lwp_arm->add_option("--instructions", li, "instructions-retired interval");
  lwp_arm->add_option("--branches", lb, "branches-retired interval");
  lwp_arm->add_option("--dcache", ld, "DCache-miss interval");
  lwp_arm->add_option("--buffer", lbuf, "ring buffer bytes")->capture_default_str();
  lwp_arm->add_option("--threshold", lthr, "threshold interrupt at this many bytes used");
  lwp_arm->add_option("--min-latency", lminlat, "count misses of at least 16 x M cycles");
  lwp_arm->add_option("--random", lrand, "randomised low counter bits (0..15)");
  lwp_arm->add_option("--levels", levels, "count misses served by: l3,remote,dram,other")
      ->delimiter(',');
  CLI::App* lwp_status = lwp->add_subcommand("status", "the thread's LWP state");
  lwp_status->add_option("--tid", lwp_tid, "thread id")->required();
  CLI::App* lwp_disarm = lwp->add_subcommand("disarm", "LLWPCB 0 for the thread");
  lwp_disarm->add_option("--tid", lwp_tid, "thread id")->required();
  CLI::App* lwp_drain = lwp->add_subcommand("drain", "move the ring's records into a file");
  lwp_drain->add_option("--tid", lwp_tid, "thread id")->required();
  lwp_drain->add_option("--out", out.lwp_out, "file (32-byte LWP records)")->required();
  uint64_t ins_data2 = 0, ins_count = 1;
  uint32_t ins_data1 = 0, ins_flags = 0;
  CLI::App* lwp_ins = lwp->add_subcommand("ins", "thread T executes LWPINS (an id-255 record)");
  CLI::App* lwp_val =
      lwp->add_subcommand("val", "thread T executes LWPVAL (an id-1 record every interval + 1)");
  for (CLI::App* a : {lwp_ins, lwp_val}) {
    a->add_option("--tid", lwp_tid, "thread id")->required();
    a->add_option("--data2", ins_data2, "the register operand (record bytes 16-23)");
    a->add_option("--data1", ins_data1, "the r/m32 operand (record bytes 4-7)");
    a->add_option("--flags", ins_flags, "the immediate's low 16 bits (record bytes 2-3)")
        ->check(CLI::Range(0, 0xFFFF));
    a->add_option("--count", ins_count, "how many times it executes")->capture_default_str();
  }
  std::string decode_path, decode_gen = "shipped";
  CLI::App* lwp_decode = lwp->add_subcommand("decode", "print a records file as JSON lines");
  lwp_decode->add_option("file", decode_path, "file of 32-byte LWP records")->required();
  lwp_decode
      ->add_option("--generation", decode_gen,
                   "the event ids of: shipped (AMD pub. 43724) or proposal (2007); the drain's "
                   "\"generation\"")
      ->check(CLI::IsMember({"shipped", "proposal"}))
      ->capture_default_str();

  CLI::App* thread_cpu =
      app.add_subcommand("thread-cpu", "the CPU the daemon counts a real thread on");
  int thread_cpu_tid = 0;
  thread_cpu->add_option("tid", thread_cpu_tid, "thread id")->required();

  CLI::App* send = app.add_subcommand("send", "send a raw JSON request");
  std::string raw_json;
  send->add_option("json", raw_json, "the request")->required();

  std::ostringstream os_out, os_err;
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // A word where a command should be: CLI11 would only say that a
    // subcommand is required.
    const std::vector<std::string> extra = app.remaining();
    if (e.get_exit_code() != 0 && app.get_subcommands().empty() && !extra.empty() &&
        extra.front().rfind('-', 0) != 0) {
      std::vector<std::string> names;
      for (const CLI::App* sub : app.get_subcommands({})) names.push_back(sub->get_name());
      out.exit_code = 2;
      out.output = "resctrlfsctl: unknown command \"" + extra.front() + "\"" +
                   did_you_mean(extra.front(), names) + "; commands: " + join_names(names) +
                   "\nRun with --help for more information.\n";
      return out;
    }
    out.exit_code = app.exit(e, os_out, os_err);
    out.output = out.exit_code == 0 ? os_out.str() : os_err.str();
    return out;
  }

  if (status->parsed()) {
    out.request = json{{"cmd", "status"}};
  } else if (advance->parsed()) {
    out.request = json{{"cmd", "clock"}, {"advance_ms", advance_ms}};
  } else if (mode_cmd->parsed()) {
    out.request = json{{"cmd", "clock"}, {"mode", mode}};
  } else if (workload->parsed()) {
    if (wl_tid->count() == 0 && wl_cpu->count() == 0 && wl_channel->count() == 0) {
      out.exit_code = 2;
      out.output = "workload: give --tid, --cpu or --channel\n";
      return out;
    }
    json r = {{"cmd", "workload"},
              {"footprint_bytes", footprint},
              {"bandwidth_mbps", bandwidth},
              {"local_fraction", local}};
    if (write_share) r["write_fraction"] = *write_share;
    if (ips) r["instructions_per_sec"] = *ips;
    if (branch_share) r["branch_share"] = *branch_share;
    if (wl_tid->count() != 0) r["tid"] = tid;
    if (wl_cpu->count() != 0) r["cpu"] = cpu;
    if (wl_channel->count() != 0) r["channel"] = channel;
    if (dma_node) r["node"] = *dma_node;
    out.request = std::move(r);
  } else if (fault->parsed()) {
    json r = {{"cmd", "fault"}, {"fail_writes", fail_writes}};
    if (f_cpu->count() != 0) r["cpu"] = fault_cpu;
    out.request = std::move(r);
  } else if (cpu_off->parsed() || cpu_on->parsed()) {
    out.request = json{{"cmd", "cpu"}, {"cpu", hotplug_cpu}, {"online", cpu_on->parsed()}};
  } else if (registers->parsed()) {
    out.request = json{{"cmd", "registers"}};
  } else if (stats->parsed()) {
    out.request = json{{"cmd", stats_action == "reset" ? "stats-reset" : "stats"}};
  } else if (lwp_arm->parsed()) {
    json r = {{"cmd", "lwp"},         {"action", "arm"},   {"tid", lwp_tid},
              {"buffer_bytes", lbuf}, {"threshold", lthr}, {"min_latency", lminlat},
              {"random", lrand}};
    if (lv) r["value"] = *lv;
    if (li) r["instructions"] = *li;
    if (lb) r["branches"] = *lb;
    if (ld) r["dcache"] = *ld;
    if (!levels.empty()) r["levels"] = levels;
    out.request = std::move(r);
  } else if (lwp_status->parsed() || lwp_disarm->parsed()) {
    out.request = json{
        {"cmd", "lwp"}, {"action", lwp_status->parsed() ? "status" : "disarm"}, {"tid", lwp_tid}};
  } else if (lwp_drain->parsed()) {
    out.request = json{{"cmd", "lwp"}, {"action", "drain"}, {"tid", lwp_tid}};
  } else if (lwp_ins->parsed() || lwp_val->parsed()) {
    out.request = json{{"cmd", "lwp"},       {"action", lwp_ins->parsed() ? "ins" : "val"},
                       {"tid", lwp_tid},     {"data2", ins_data2},
                       {"data1", ins_data1}, {"flags", ins_flags},
                       {"count", ins_count}};
  } else if (thread_cpu->parsed()) {
    out.request = json{{"cmd", "thread-cpu"}, {"tid", thread_cpu_tid}};
    out.print_field = "cpu";
  } else if (lwp_decode->parsed()) {
    out.lwp_decode = decode_path;
    out.lwp_generation =
        decode_gen == "proposal" ? lwp::Generation::kProposal : lwp::Generation::kShipped;
  } else if (send->parsed()) {
    Result<json> r = parse_json(raw_json);
    if (!r.ok()) {
      out.exit_code = 2;
      out.output = "send: not valid JSON: " + r.error().message + "\n";
      return out;
    }
    out.request = std::move(r).value();
  }
  return out;
}

Result<std::string> ctl_send(const std::string& socket_path, const json& request) {
  sockaddr_un addr{};
  if (socket_path.size() >= sizeof(addr.sun_path)) {
    return Error::make(ENAMETOOLONG, "socket path too long");
  }
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Error::make(errno, strerror(errno));
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, socket_path.data(), socket_path.size());
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    const int err = errno;
    close(fd);
    return Error::make(err, "cannot connect to " + socket_path + ": " + strerror(err));
  }
  const std::string line = request.dump() + "\n";
  size_t off = 0;
  while (off < line.size()) {
    const ssize_t n = ::send(fd, line.data() + off, line.size() - off, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      close(fd);
      return Error::make(err, std::string("send: ") + strerror(err));
    }
    off += static_cast<size_t>(n);
  }
  std::string reply;
  char buf[4096];
  while (reply.find('\n') == std::string::npos) {
    const ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    reply.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  const size_t nl = reply.find('\n');
  if (nl == std::string::npos) return Error::make(EPROTO, "no reply from " + socket_path);
  reply.resize(nl);
  return reply;
}

namespace {

Result<std::string> from_hex(const std::string& hex) {
  if (hex.size() % 2 != 0) return Error::make(EPROTO, "odd-length hex in the reply");
  std::string out(hex.size() / 2, '\0');
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  for (size_t i = 0; i < out.size(); ++i) {
    const int hi = nibble(hex[2 * i]), lo = nibble(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return Error::make(EPROTO, "bad hex digit in the reply");
    out[i] = static_cast<char>((hi << 4) | lo);
  }
  return out;
}

}  // namespace

Result<json> ctl_lwp_drain(const std::string& socket, const json& request,
                           const std::string& path) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) return Error::make(errno, "cannot write " + path + ": " + strerror(errno));
  uint64_t total = 0;
  for (;;) {
    RESCTRLFS_ASSIGN_OR_RETURN(std::string line, ctl_send(socket, request));
    Result<json> parsed = parse_json(line);
    if (!parsed.ok())
      return Error::make(EPROTO, "the reply is not JSON: " + parsed.error().message);
    json reply = std::move(parsed).value();
    const JsonIn j(reply);
    if (!j.bool_or("ok", false).value_or(false)) {
      auto err = j.string_at("error");
      return Error::make(EIO, err.ok() ? *err : std::string("the daemon refused the drain"));
    }
    RESCTRLFS_ASSIGN_OR_RETURN(std::string hex, j.string_at("data_hex"));
    RESCTRLFS_ASSIGN_OR_RETURN(std::string bytes, from_hex(hex));
    if (bytes.size() % lwp::kRecordSize != 0)
      return Error::make(EPROTO, "the reply's records are not whole 32-byte records");
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!f) return Error::make(EIO, "cannot write " + path);
    total += bytes.size() / lwp::kRecordSize;
    // Done when the ring is empty (with a real clock it keeps filling: the
    // ring's records at the first request bound what one drain takes).
    const uint64_t pending = j.int_or<uint64_t>("pending_records", 0).value_or(0);
    if (bytes.empty() || pending == 0 || total >= (1U << 28) / lwp::kRecordSize) {
      reply.erase("data_hex");
      reply["records"] = total;
      reply["file"] = path;
      return reply;
    }
  }
}

Result<std::string> ctl_lwp_decode(const std::string& path, lwp::Generation gen) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return Error::make(ENOENT, "cannot read " + path);
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  RESCTRLFS_ASSIGN_OR_RETURN(
      std::vector<lwp::Record> recs,
      lwp::decode_records(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), gen));
  std::string out;
  for (const auto& r : recs) out += lwp::record_json(r, gen) + "\n";
  return out;
}

}  // namespace resctrlfs::daemon
