// resctrlfsctl: command line client of resctrlfsd's control socket. Prints
// the reply (pretty JSON) and exits 0 when it says "ok", 1 otherwise.
#include <cstdio>
#include <cstdlib>

#include "daemon/ctl.h"

int main(int argc, char** argv) {
  using namespace resctrlfs::daemon;
  ParsedCtlArgs args = parse_ctl_args(argc, argv, std::getenv("RESCTRLFS_CONTROL"));
  if (!args.request) {
    std::fputs(args.output.c_str(), args.exit_code == 0 ? stdout : stderr);
    return args.exit_code;
  }
  resctrlfs::Result<std::string> reply = ctl_send(args.socket, *args.request);
  if (!reply.ok()) {
    std::fprintf(stderr, "resctrlfsctl: %s\n", reply.error().message.c_str());
    return 1;
  }
  const nlohmann::json j = nlohmann::json::parse(*reply, nullptr, false);
  if (args.raw || j.is_discarded()) {
    std::printf("%s\n", reply->c_str());
  } else {
    std::printf("%s\n", j.dump(2).c_str());
  }
  if (j.is_object() && j.value("ok", false)) return 0;
  if (j.is_object() && j.contains("error") && j["error"].is_string()) {
    std::fprintf(stderr, "resctrlfsctl: %s\n", j["error"].get<std::string>().c_str());
  }
  return 1;
}
