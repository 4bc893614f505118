// Tests resctrlfsd's command line: defaults, every option, the -o split
// between resctrl flags and FUSE options, and usage errors.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "daemon/option_names.h"
#include "daemon/options.h"
#include "hw/backend.h"

using resctrlfs::daemon::BackendKind;
using resctrlfs::daemon::parse_daemon_args;
using resctrlfs::daemon::ParsedArgs;
using resctrlfs::daemon::split_mount_options;

namespace {

ParsedArgs parse(std::vector<std::string> args) {
  args.insert(args.begin(), "resctrlfsd");
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  return parse_daemon_args(static_cast<int>(argv.size()), argv.data());
}

}  // namespace

TEST_CASE("defaults: detached, host platform, simulated backend") {
  ParsedArgs p = parse({"/mnt/r"});
  REQUIRE(p.options);
  CHECK(p.options->mountpoint == "/mnt/r");
  CHECK_FALSE(p.options->foreground);
  CHECK(p.options->platform == "host");
  CHECK(p.options->backend == BackendKind::kSim);
  CHECK(p.options->control_socket.empty());
  CHECK(p.options->state_dir.empty());
  CHECK(p.options->journal_fsync);
  CHECK(p.options->broker_socket == "/run/resctrl-msrd/msrd.sock");
  CHECK(p.options->rdt.empty());  // a plain boot: Linux's own defaults and quirks
  CHECK_FALSE(p.options->mount.cdp);
  CHECK(p.options->fuse_options.empty());
}

TEST_CASE("option --no-journal-fsync turns the journal's fsync off") {
  ParsedArgs p = parse({"--no-journal-fsync", "/mnt/r"});
  REQUIRE(p.options);
  CHECK_FALSE(p.options->journal_fsync);
}

TEST_CASE("every option") {
  ParsedArgs p = parse({"-f",          "-o",          "cdp,noatime",
                        "-o",          "mba_MBps",    "--platform",
                        "intel-2s",    "--backend",   "msr",
                        "--state-dir", "/var/lib/r",  "--journal-fsync",
                        "--control",   "/run/c.sock", "--broker",
                        "/run/b.sock", "--rdt",       "l3cat,!mba",
                        "--log-level", "debug",       "/sys/fs/resctrl"});
  REQUIRE(p.options);
  const auto& o = *p.options;
  CHECK(o.foreground);
  CHECK(o.mount.cdp);
  CHECK(o.mount.mba_mbps);
  CHECK_FALSE(o.mount.cdpl2);
  CHECK_FALSE(o.mount.debug);
  CHECK(o.fuse_options == std::vector<std::string>{"noatime"});
  CHECK(o.platform == "intel-2s");
  CHECK(o.backend == BackendKind::kReal);
  CHECK(o.state_dir == "/var/lib/r");
  CHECK(o.journal_fsync);
  CHECK(o.control_socket == "/run/c.sock");
  CHECK(o.broker_socket == "/run/b.sock");
  CHECK(o.rdt == "l3cat,!mba");
  CHECK(o.log_level == "debug");
  CHECK(o.mountpoint == "/sys/fs/resctrl");
}

TEST_CASE("option -o takes exactly one argument, so the mount point stays positional") {
  ParsedArgs p = parse({"-o", "debug", "/mnt/x"});
  REQUIRE(p.options);
  CHECK(p.options->mount.debug);
  CHECK(p.options->mountpoint == "/mnt/x");
  ParsedArgs q = parse({"/mnt/y", "-o", "cdpl2"});
  REQUIRE(q.options);
  CHECK(q.options->mount.cdpl2);
  CHECK(q.options->mountpoint == "/mnt/y");
}

TEST_CASE("split_mount_options: resctrl flags vs FUSE options") {
  struct Case {
    std::vector<std::string> in;
    bool cdp, cdpl2, mba, debug;
    std::vector<std::string> fuse;
  };
  const std::vector<Case> cases = {
      {{}, false, false, false, false, {}},
      {{"cdp"}, true, false, false, false, {}},
      {{"cdpl2"}, false, true, false, false, {}},
      {{"mba_MBps"}, false, false, true, false, {}},
      {{"debug"}, false, false, false, true, {}},
      {{"cdp,cdpl2,mba_MBps,debug"}, true, true, true, true, {}},
      {{"cdp,,debug,"}, true, false, false, true, {}},
      {{"max_read=4096,cdp", "ro"}, true, false, false, false, {"max_read=4096", "ro"}},
      // Case matters like in the kernel's parser: MBA_MBPS is not mba_MBps.
      {{"MBA_MBPS"}, false, false, false, false, {"MBA_MBPS"}},
  };
  for (const Case& c : cases) {
    auto r = split_mount_options(c.in);
    REQUIRE(r.ok());
    CHECK(r->mount.cdp == c.cdp);
    CHECK(r->mount.cdpl2 == c.cdpl2);
    CHECK(r->mount.mba_mbps == c.mba);
    CHECK(r->mount.debug == c.debug);
    CHECK(r->fuse_options == c.fuse);
  }
}

TEST_CASE("a resctrl flag with a value is refused like the kernel does (EINVAL)") {
  for (const char* bad : {"cdp=1", "debug=yes", "mba_MBps=", "cdpl2=0"}) {
    auto r = split_mount_options({bad});
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == EINVAL);
  }
  ParsedArgs p = parse({"-o", "cdp=1", "/mnt/x"});
  CHECK_FALSE(p.options);
  CHECK(p.exit_code != 0);
  CHECK(p.output.find("cdp") != std::string::npos);
}

TEST_CASE("usage errors exit non-zero with a message, --help exits 0") {
  for (std::vector<std::string> bad :
       std::vector<std::vector<std::string>>{{},                                 // no mount point
                                             {"--backend", "kernel", "/mnt/x"},  // unknown backend
                                             {"--bogus", "/mnt/x"},              // unknown option
                                             {"/mnt/x", "/mnt/y"},               // two mount points
                                             {"--log-level", "loud", "/mnt/x"}}) {  // unknown level
    ParsedArgs p = parse(bad);
    CHECK_FALSE(p.options);
    CHECK(p.exit_code != 0);
    CHECK_FALSE(p.output.empty());
  }
  ParsedArgs h = parse({"--help"});
  CHECK_FALSE(h.options);
  CHECK(h.exit_code == 0);
  CHECK(h.output.find("--platform") != std::string::npos);
  CHECK(h.output.find("--control") != std::string::npos);
}

TEST_CASE("option --list-platforms prints the built-in platforms, one a line, and exits 0") {
  // What the bash completion offers for --platform; --help names the same.
  ParsedArgs p = parse({"--list-platforms"});
  CHECK_FALSE(p.options);
  CHECK(p.exit_code == 0);
  std::string want;
  for (const std::string& n : resctrlfs::hw::platform_names()) want += n + "\n";
  CHECK(p.output == want);
  CHECK(p.output.find("amd-2s\n") != std::string::npos);
  CHECK(p.output.find("host\n") != std::string::npos);
  ParsedArgs h = parse({"--help"});
  for (const std::string& n : resctrlfs::hw::platform_names()) {
    INFO(n);
    CHECK(h.output.find(n) != std::string::npos);
  }
}

TEST_CASE("help names each option plainly and says where the log goes") {
  ParsedArgs h = parse({"--help"});
  REQUIRE(h.exit_code == 0);
  // CLI11 prints a negatable flag as "--journal-fsync,--no-journal-fsync{false}".
  CHECK(h.output.find("  --journal-fsync,--no-journal-fsync\n") != std::string::npos);
  CHECK(h.output.find("{false}") == std::string::npos);
  CHECK(h.output.find("{true}") == std::string::npos);
  CHECK(h.output.find("syslog") != std::string::npos);
  CHECK(h.output.find("/dev/log") != std::string::npos);
}

TEST_CASE("daemon/option_names.h lists every option of the parser, as the sandbox needs") {
  std::vector<std::pair<std::string, bool>> table;
  for (const auto& o : resctrlfs::daemon::kDaemonOptionNames)
    table.emplace_back(std::string(o.name), o.takes_value);
  std::vector<std::pair<std::string, bool>> parser = resctrlfs::daemon::daemon_cli_options();
  for (const auto& o : parser) {
    INFO("the parser's " << o.first << (o.second ? " VALUE" : ""));
    CHECK(std::find(table.begin(), table.end(), o) != table.end());
  }
  for (const auto& o : table) {
    INFO("option_names.h's " << o.first << (o.second ? " VALUE" : ""));
    CHECK(std::find(parser.begin(), parser.end(), o) != parser.end());
  }
}

TEST_CASE("option --rdt takes the kernel's feature names and ours, and refuses others") {
  for (const char* good : {"l3cat,!mba", "cmt,mbmtotal,mbmlocal,l3cdp,l2cat,l2cdp,smba,bmec",
                           "abmc,sdciae,!cba", "energy,perf", "perf:0x26696143", "!perf:1a"}) {
    INFO(good);
    ParsedArgs p = parse({"--rdt", good, "/mnt/x"});
    REQUIRE(p.options);
    CHECK(p.options->rdt == good);
  }
  ParsedArgs p = parse({"--rdt", "l3cat,l3catt", "/mnt/x"});
  CHECK_FALSE(p.options);
  CHECK(p.exit_code == 2);
  CHECK(p.output.find("--rdt: unknown feature \"l3catt\" (did you mean l3cat?)") !=
        std::string::npos);
  CHECK(p.output.find("cmt, mbmtotal") != std::string::npos);  // the list of names
  for (const char* bad : {"foo", "perf:xyz", "perf:", ",,!"}) {
    INFO(bad);
    CHECK_FALSE(parse({"--rdt", bad, "/mnt/x"}).options);
  }
}

TEST_CASE("option self-check takes no mount point, and json and kernel-resctrl go with it") {
  ParsedArgs p = parse({"--self-check", "--broker", "/run/b.sock"});
  REQUIRE(p.options);
  CHECK(p.options->self_check);
  CHECK_FALSE(p.options->json);
  CHECK(p.options->mountpoint.empty());
  CHECK(p.options->broker_socket == "/run/b.sock");
  CHECK(p.options->kernel_resctrl == "/sys/fs/resctrl");
  ParsedArgs j = parse({"--self-check", "--json", "--kernel-resctrl", "/mnt/k"});
  REQUIRE(j.options);
  CHECK(j.options->json);
  CHECK(j.options->kernel_resctrl == "/mnt/k");
  for (std::vector<std::string> bad : std::vector<std::vector<std::string>>{
           {"--self-check", "/mnt/x"},  // a mount point with --self-check
           {"--json", "/mnt/x"}}) {     // --json without --self-check
    ParsedArgs b = parse(bad);
    CHECK_FALSE(b.options);
    CHECK(b.exit_code == 2);
    CHECK_FALSE(b.output.empty());
  }
  ParsedArgs none = parse({});
  CHECK(none.output.find("MOUNTPOINT is required") != std::string::npos);
}
