// Implements resctrlfsctl's argument parsing (CLI11) and its socket client.
#include "daemon/ctl.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstring>
#include <sstream>

#include "base/json_input.h"

namespace resctrlfs::daemon {

using nlohmann::json;

ParsedCtlArgs parse_ctl_args(int argc, const char* const* argv, const char* env_socket) {
  ParsedCtlArgs out;
  if (env_socket != nullptr && env_socket[0] != '\0') out.socket = env_socket;

  CLI::App app{"resctrlfsctl: talk to resctrlfsd's control socket", "resctrlfsctl"};
  app.require_subcommand(1);
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
  workload->add_option("--footprint", footprint, "cache footprint in bytes");
  workload->add_option("--bandwidth", bandwidth, "memory bandwidth in MB/s");
  workload->add_option("--local", local, "fraction of traffic to local memory (0..1)");

  CLI::App* fault = app.add_subcommand("fault", "fail the next MSR writes");
  unsigned fail_writes = 0;
  unsigned fault_cpu = 0;
  fault->add_option("--fail-writes", fail_writes, "how many writes fail")->required();
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
  CLI::App* send = app.add_subcommand("send", "send a raw JSON request");
  std::string raw_json;
  send->add_option("json", raw_json, "the request")->required();

  std::ostringstream os_out, os_err;
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
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
    if (wl_tid->count() != 0) r["tid"] = tid;
    if (wl_cpu->count() != 0) r["cpu"] = cpu;
    if (wl_channel->count() != 0) r["channel"] = channel;
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

}  // namespace resctrlfs::daemon
