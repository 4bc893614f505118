// Implements the resctrlfs-sandbox command-line parser.
#include "sandbox/options.h"

#include "base/suggest.h"
#include "daemon/option_names.h"

namespace resctrlfs::sandbox {
namespace {

// If `arg` is `name` (value in the next argument) or `name=VALUE`, stores
// the value and returns true; advances `i` past a separate value.
bool take_value(const std::vector<std::string>& args, size_t& i, const std::string& name,
                std::string* value, Error* err) {
  const std::string& arg = args[i];
  if (arg == name) {
    if (i + 1 >= args.size()) {
      *err = Error::make(EINVAL, name + " needs a value");
      return true;
    }
    *value = args[++i];
    return true;
  }
  if (arg.rfind(name + "=", 0) == 0) {
    *value = arg.substr(name.size() + 1);
    return true;
  }
  return false;
}

}  // namespace

std::string usage() {
  return "usage: resctrlfs-sandbox [-v] [--daemon PATH] [--cpus host|platform] "
         "[--ignore-topology]\n"
         "                         [--intercept MODE]\n"
         "                         [DAEMON OPTIONS]\n"
         "                         [-- COMMAND [ARGS...]]\n"
         "\n"
         "Runs COMMAND (default: $SHELL) in a private mount namespace in which resctrlfsd\n"
         "is mounted at /sys/fs/resctrl and /proc agrees with the simulated platform:\n"
         "/proc/filesystems lists resctrl, /proc/cpuinfo carries the platform's RDT flags,\n"
         "sysfs package and cache ids match its domains, and for COMMAND and every process\n"
         "it starts statfs on the mount answers resctrl's magic (0x7655821) and\n"
         "/proc/*/mounts and mountinfo show the mount with type resctrl (a seccomp\n"
         "user-notification supervisor in this process answers those calls). A mount(2)\n"
         "of type resctrl inside starts another resctrlfsd there, with the kernel's options\n"
         "and errors; an umount of it stops that daemon (the boot state carries over).\n"
         "Exits with COMMAND's status (128+N if it was killed by signal N), 125 if the\n"
         "sandbox could not be set up. Its only trace on the host is a staging directory in\n"
         "$TMPDIR (or /tmp), removed on exit (left empty only if the sandbox is SIGKILLed).\n"
         "\n"
         "Sandbox options:\n"
         "  --daemon PATH       resctrlfsd to run (default: $RESCTRLFSD, next to this\n"
         "                      program, ../daemon/resctrlfsd, then $PATH)\n"
         "  --cpus host|platform  host (default): the machine has the host's CPUs and a\n"
         "                      built-in platform is fitted to them (NAME@host);\n"
         "                      platform: it has the platform's CPUs (virtual CPUs):\n"
         "                      sysfs, /proc/cpuinfo, nproc, sched_setaffinity and\n"
         "                      sched_getaffinity (taskset), getcpu(2) and resctrl's\n"
         "                      cpus files use its numbers; the supervisor pins each\n"
         "                      thread to the host CPU its virtual CPUs map onto\n"
         "                      (needs --intercept all or statfs-only)\n"
         "  --ignore-topology   run even if sysfs cannot be made to show the platform's\n"
         "                      topology (a JSON profile whose CPUs are not the host's);\n"
         "                      pqos will then misreport\n"
         "  --intercept MODE    what the supervisor answers: all (default: statfs and\n"
         "                      opens of mount tables), statfs-only (opens are not\n"
         "                      intercepted and run at full speed; only COMMAND itself\n"
         "                      sees the rewritten mount tables), none (no seccomp\n"
         "                      filter: FUSE's statfs magic, tables for COMMAND only)\n"
         "  -v, --verbose       also show the daemon's info lines (by default it logs only\n"
         "                      warnings and errors; a --log-level given here wins)\n"
         "  -h, --help          this text\n"
         "  --version           print resctrlfs-sandbox's version and exit\n"
         "  --list-platforms    print the built-in platform names (for --platform) and exit\n"
         "Daemon options (passed to resctrlfsd): --platform NAME|FILE.json, -o cdp,mba_MBps,...,\n"
         "  --control SOCKET, --state-dir DIR, --backend sim|msr, --hw-root ROOT, ...\n"
         "  With --backend msr /proc/cpuinfo and sysfs are the machine's own; with\n"
         "  --hw-root ROOT as well, they show what ROOT's /dev/cpu/N/cpuid and\n"
         "  sys/devices/system/cpu describe (the daemon's view of the machine).\n"
         "  A built-in platform keeps its domains and limits on the host's CPUs: host CPU\n"
         "  i of N takes the place of the platform's CPU i*M/N of M (NAME@host).\n"
         "  Without --state-dir every sandbox starts fresh; sandboxes have their own\n"
         "  instance lock and boot state (keyed by mount namespace), so several can run.\n"
         "\n"
         "Inside the sandbox, `resctrlfs-sandbox -- CMD` (no daemon options) gives CMD its own\n"
         "rewritten mount tables (needed only with --intercept statfs-only or none).\n";
}

void set_platform(Options& o, const std::string& platform) {
  o.platform = platform;
  auto& a = o.daemon_args;
  for (size_t i = a.size(); i-- > 0;) {
    if (a[i] == "--platform" && i + 1 < a.size()) {
      a[i + 1] = platform;
      return;
    }
    if (a[i].rfind("--platform=", 0) == 0) {
      a[i] = "--platform=" + platform;
      return;
    }
  }
  a.push_back("--platform");
  a.push_back(platform);
}

std::vector<std::string> daemon_args_without_resctrl_options(const Options& o) {
  auto keep = [](const std::string& value) {
    std::string out;
    size_t start = 0;
    while (start <= value.size()) {
      size_t comma = value.find(',', start);
      if (comma == std::string::npos) comma = value.size();
      std::string item = value.substr(start, comma - start);
      std::string key = item.substr(0, item.find('='));
      if (!item.empty() && key != "cdp" && key != "cdpl2" && key != "mba_MBps" && key != "debug")
        out += (out.empty() ? "" : ",") + item;
      start = comma + 1;
    }
    return out;
  };
  std::vector<std::string> out;
  const auto& a = o.daemon_args;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] == "-o" && i + 1 < a.size()) {
      std::string v = keep(a[++i]);
      if (!v.empty()) {
        out.push_back("-o");
        out.push_back(v);
      }
    } else if (a[i].size() > 2 && a[i].rfind("-o", 0) == 0 && a[i][2] != '-') {
      std::string v = keep(a[i].substr(2));
      if (!v.empty()) out.push_back("-o" + v);
    } else {
      out.push_back(a[i]);
    }
  }
  return out;
}

bool has_boot_state_dir(const Options& o) {
  for (const auto& a : o.daemon_args)
    if (a == "--boot-state-dir" || a.rfind("--boot-state-dir=", 0) == 0) return true;
  return false;
}

namespace {

// The sandbox's own options (the rest are the daemon's, daemon/option_names.h).
const std::vector<std::string>& sandbox_option_names() {
  static const std::vector<std::string> names = {
      "--daemon", "--cpus", "--ignore-topology", "--intercept",     "-v", "--verbose",
      "-h",       "--help", "--version",         "--list-platforms"};
  return names;
}

const daemon::OptionName* daemon_option(std::string_view name) {
  for (const daemon::OptionName& o : daemon::kDaemonOptionNames)
    if (o.name == name) return &o;
  return nullptr;
}

Error unknown_option(const std::string& name) {
  std::vector<std::string> names = sandbox_option_names();
  for (const daemon::OptionName& o : daemon::kDaemonOptionNames) names.emplace_back(o.name);
  return Error::make(EINVAL, "unknown option '" + name + "'" + did_you_mean(name, names) +
                                 ": resctrlfs-sandbox --help lists the sandbox's options and "
                                 "the daemon's");
}

}  // namespace

Result<Options> parse_options(const std::vector<std::string>& args) {
  Options o;
  std::vector<std::string> mount_opts;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    Error err;
    err.code = 0;
    std::string v;
    if (a == "--") {
      o.command.assign(args.begin() + static_cast<long>(i) + 1, args.end());
      break;
    }
    if (a == "-h" || a == "--help") {
      o.help = true;
      continue;
    }
    if (a == "--version") {
      o.version = true;
      continue;
    }
    if (a == "--list-platforms") {
      o.list_platforms = true;
      continue;
    }
    if (a == "-v" || a == "--verbose") {
      o.verbose = true;
      continue;
    }
    if (a == "--ignore-topology") {
      o.ignore_topology = true;
      continue;
    }
    if (a == "-f" || a == "--foreground") continue;  // always foreground
    if (take_value(args, i, "--daemon", &o.daemon_path, &err)) {
      if (err.code) return err;
      continue;
    }
    if (take_value(args, i, "--intercept", &o.intercept, &err)) {
      if (err.code) return err;
      if (o.intercept != "all" && o.intercept != "statfs-only" && o.intercept != "none")
        return Error::make(
            EINVAL, "--intercept must be all, statfs-only or none, not '" + o.intercept + "'");
      continue;
    }
    if (take_value(args, i, "--cpus", &o.cpus, &err)) {
      if (err.code) return err;
      if (o.cpus != "host" && o.cpus != "platform")
        return Error::make(EINVAL, "--cpus must be host or platform, not '" + o.cpus + "'");
      continue;
    }
    if (a.empty() || a[0] != '-' || a == "-") {
      return Error::make(EINVAL, "unexpected argument '" + a +
                                     "': the command goes after --, e.g. resctrlfs-sandbox "
                                     "--platform intel-2s -- " +
                                     a);
    }
    size_t before = i;
    if (take_value(args, i, "--platform", &v, &err)) {
      if (err.code) return err;
      o.platform = v;
    } else if (take_value(args, i, "--state-dir", &v, &err)) {
      if (err.code) return err;
      o.has_state_dir = true;
    } else if (take_value(args, i, "--backend", &v, &err)) {
      if (err.code) return err;
      o.backend = v;
    } else if (take_value(args, i, "--hw-root", &v, &err)) {
      if (err.code) return err;
      o.hw_root = v;
    } else if (a == "-o" || (a.size() > 2 && a.rfind("-o", 0) == 0 && a[2] != '-')) {
      if (a == "-o") {
        if (i + 1 >= args.size()) return Error::make(EINVAL, "-o needs a value");
        v = args[++i];
      } else {
        v = a.substr(2);
      }
      mount_opts.push_back(v);
    } else {
      // Another of the daemon's options, passed on with its value.
      const size_t eq = a.find('=');
      const std::string name = a.substr(0, eq);
      if (name == "--log-level") o.has_log_level = true;
      const daemon::OptionName* d = name.rfind("--", 0) == 0 ? daemon_option(name) : nullptr;
      if (d == nullptr) return unknown_option(name);
      if (eq != std::string::npos && !d->takes_value)
        return Error::make(EINVAL, "option " + name + " takes no value");
      if (eq == std::string::npos && d->takes_value) {
        if (i + 1 >= args.size()) return Error::make(EINVAL, name + " needs a value");
        ++i;
      }
    }
    for (size_t k = before; k <= i; ++k) o.daemon_args.push_back(args[k]);
  }
  for (size_t k = 0; k < mount_opts.size(); ++k) o.mount_options += (k ? "," : "") + mount_opts[k];
  return o;
}

}  // namespace resctrlfs::sandbox
