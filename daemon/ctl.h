// Defines the command line of resctrlfsctl, the small client of resctrlfsd's
// control socket: parse_ctl_args() turns argv into the JSON request to send,
// and ctl_send() exchanges one request line for one reply line.
//
//   resctrlfsctl [--socket PATH] status
//   resctrlfsctl clock advance MS | clock mode manual|real
//   resctrlfsctl workload (--tid T | --cpu C) --footprint B --bandwidth MBPS --local F
//   resctrlfsctl fault --fail-writes N [--cpu C]
//   resctrlfsctl registers | stats [reset] | send JSON
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "base/result.h"

namespace resctrlfs::daemon {

inline constexpr const char* kDefaultControlSocket = "/run/resctrlfsd.sock";

struct ParsedCtlArgs {
  std::optional<nlohmann::json> request;  // set when there is something to send
  std::string socket = kDefaultControlSocket;
  bool raw = false;  // print the reply line as received
  int exit_code = 0;
  std::string output;  // help or usage error
};
// `env_socket` (RESCTRLFS_CONTROL) overrides the default socket path.
ParsedCtlArgs parse_ctl_args(int argc, const char* const* argv, const char* env_socket);

// Connects, sends `request` as one line, returns the reply line.
Result<std::string> ctl_send(const std::string& socket, const nlohmann::json& request);

}  // namespace resctrlfs::daemon
