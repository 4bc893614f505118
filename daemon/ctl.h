// Defines the command line of resctrlfsctl, the small client of resctrlfsd's
// control socket: parse_ctl_args() turns argv into the JSON request to send,
// and ctl_send() exchanges one request line for one reply line.
//
//   resctrlfsctl [--socket PATH] status
//   resctrlfsctl clock advance MS | clock mode manual|real
//   resctrlfsctl workload (--tid T | --cpu C) --footprint B --bandwidth MBPS --local F
//                [--write-share W]
//                [--instructions-per-sec I] [--branch-share S]
//   resctrlfsctl fault --fail-writes N [--cpu C]
//   resctrlfsctl registers | stats [reset] | send JSON
//   resctrlfsctl lwp arm --tid T [--value N] [--instructions N] [--branches N]
//                [--dcache N] [--buffer B] [--threshold B] [--min-latency M]
//                [--random R] [--levels l3,remote,dram,other]
//   resctrlfsctl lwp status|disarm --tid T
//   resctrlfsctl lwp drain --tid T --out FILE   (the records, 32-byte format)
//   resctrlfsctl lwp ins|val --tid T [--data2 R] [--data1 D] [--flags F] [--count N]
//   resctrlfsctl lwp decode FILE [--generation shipped|proposal]
//                                               (JSON lines; no daemon needed)
//   resctrlfsctl thread-cpu TID    (the CPU number the daemon counts real thread TID on)
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "base/result.h"
#include "hw/x86/lwp_format.h"

namespace resctrlfs::daemon {

inline constexpr const char* kDefaultControlSocket = "/run/resctrlfsd.sock";

struct ParsedCtlArgs {
  std::optional<nlohmann::json> request;  // set when there is something to send
  std::string socket = kDefaultControlSocket;
  bool raw = false;         // print the reply line as received
  std::string print_field;  // print only this field of a successful reply
  int exit_code = 0;
  std::string output;  // help or usage error
  // lwp drain: the file the records go to (the request is sent until the
  // ring is empty); lwp decode: the file to decode (nothing is sent).
  std::string lwp_out;
  std::optional<std::string> lwp_decode;
  lwp::Generation lwp_generation = lwp::Generation::kShipped;  // lwp decode --generation
};
// `env_socket` (RESCTRLFS_CONTROL) overrides the default socket path.
ParsedCtlArgs parse_ctl_args(int argc, const char* const* argv, const char* env_socket);

// Connects, sends `request` as one line, returns the reply line.
Result<std::string> ctl_send(const std::string& socket, const nlohmann::json& request);

// lwp drain: sends `request` (an lwp drain) until a reply carries no more
// records, writing every record to `path` (created or truncated); returns
// the last reply with "records" set to the total and "file" to `path`.
Result<nlohmann::json> ctl_lwp_drain(const std::string& socket, const nlohmann::json& request,
                                     const std::string& path);
// lwp decode: the records of `path` as JSON lines (one per record), or the
// decoder's error naming the bad record.
Result<std::string> ctl_lwp_decode(const std::string& path,
                                   lwp::Generation gen = lwp::Generation::kShipped);

}  // namespace resctrlfs::daemon
