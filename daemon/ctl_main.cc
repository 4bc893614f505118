// resctrlfsctl: command line client of resctrlfsd's control socket. Prints
// the reply (pretty JSON) and exits 0 when it says "ok", 1 otherwise.
#include <cstdio>
#include <cstdlib>

#include "base/json_input.h"
#include "daemon/ctl.h"

int main(int argc, char** argv) {
  using namespace resctrlfs::daemon;
  ParsedCtlArgs args = parse_ctl_args(argc, argv, std::getenv("RESCTRLFS_CONTROL"));
  if (args.lwp_decode) {
    resctrlfs::Result<std::string> lines = ctl_lwp_decode(*args.lwp_decode, args.lwp_generation);
    if (!lines.ok()) {
      std::fprintf(stderr, "resctrlfsctl: %s: %s\n", args.lwp_decode->c_str(),
                   lines.error().message.c_str());
      return 1;
    }
    std::fputs(lines->c_str(), stdout);
    return 0;
  }
  if (args.request && !args.lwp_out.empty()) {
    resctrlfs::Result<nlohmann::json> done =
        ctl_lwp_drain(args.socket, *args.request, args.lwp_out);
    if (!done.ok()) {
      std::fprintf(stderr, "resctrlfsctl: %s\n", done.error().message.c_str());
      return 1;
    }
    std::printf("%s\n",
                done->dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    return 0;
  }
  if (!args.request) {
    std::fputs(args.output.c_str(), args.exit_code == 0 ? stdout : stderr);
    return args.exit_code;
  }
  resctrlfs::Result<std::string> reply = ctl_send(args.socket, *args.request);
  if (!reply.ok()) {
    std::fprintf(stderr, "resctrlfsctl: %s\n", reply.error().message.c_str());
    return 1;
  }
  // The reply is outside input (whatever listens on the socket): parsed
  // and read with the checks of base/json_input.h.
  const resctrlfs::Result<nlohmann::json> parsed = resctrlfs::parse_json(*reply);
  if (args.raw || !parsed.ok()) {
    std::printf("%s\n", reply->c_str());
  } else if (!args.print_field.empty() && parsed->contains(args.print_field)) {
    std::printf("%s\n", (*parsed)[args.print_field].dump().c_str());
  } else {
    std::printf("%s\n",
                parsed->dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  }
  if (!parsed.ok()) {
    std::fprintf(stderr, "resctrlfsctl: the reply is not JSON: %s\n",
                 parsed.error().message.c_str());
    return 1;
  }
  const resctrlfs::JsonIn j(*parsed);
  if (j.bool_or("ok", false).value_or(false)) return 0;
  if (const auto err = j.string_at("error"); err.ok())
    std::fprintf(stderr, "resctrlfsctl: %s\n", err->c_str());
  return 1;
}
