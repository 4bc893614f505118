// resctrlfs-exporter: serves a resctrl tree (resctrlfs or the kernel's) as
// Prometheus metrics and a live allocation map over HTTP. It only reads the
// tree's files, so it needs no part of resctrlfs below it.
#include <csignal>
#include <cstdio>
#include <string>

#include <CLI/CLI.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>

#include "base/cli_help.h"
#include "base/version.h"
#include "exporter/collector.h"
#include "exporter/history.h"
#include "exporter/http_server.h"
#include "exporter/routes.h"
#include "exporter/tree.h"

int main(int argc, char** argv) {
  using namespace resctrlfs::exporter;
  std::string root = "/sys/fs/resctrl";
  std::string listen = "127.0.0.1:9835";
  ReaderOptions opts;
  CLI::App app{
      "resctrlfs-exporter: Prometheus metrics (/metrics) and a live cache allocation map (/)\n"
      "of a resctrl tree: resctrlfs or the kernel's resctrl.",
      "resctrlfs-exporter"};
  resctrlfs::use_help_formatter(app);
  app.set_version_flag("--version", std::string("resctrlfs-exporter ") + resctrlfs::kVersion);
  app.add_option("--root", root,
                 "the resctrl mount point (refused, exit status 2, if it is not one)")
      ->capture_default_str();
  app.add_option("--listen", listen,
                 "where to serve: ADDR:PORT, [V6ADDR]:PORT, HOST:PORT (e.g. localhost:9835) or "
                 ":PORT (127.0.0.1); loopback by default")
      ->capture_default_str();
  app.add_flag("--read-available-mbm-cntrs", opts.read_available_mbm_cntrs,
               "in mbm_event mode also read info/L3_MON/available_mbm_cntrs (each read resets "
               "info/last_cmd_status under the kernel)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  auto ep = parse_listen_address(listen);
  if (!ep.ok()) {
    std::fprintf(stderr, "resctrlfs-exporter: %s\n", ep.error().message.c_str());
    return 2;
  }
  if (auto r = check_resctrl_root(root); !r.ok()) {
    std::fprintf(stderr, "resctrlfs-exporter: %s\n", r.error().message.c_str());
    return 2;
  }
  std::signal(SIGPIPE, SIG_IGN);
  TreeReader reader(root, opts);
  Collector collector(reader);
  boost::asio::io_context io;
  HttpServer server(io, [&](const std::string& target) { return serve(collector, target); });
  if (auto r = server.listen(*ep); !r.ok()) {
    std::fprintf(stderr, "resctrlfs-exporter: %s\n", r.error().message.c_str());
    return 1;
  }
  // Samples for the page's plots (/api/history) while no page is open and
  // nothing scrapes.
  Sampler sampler(io, collector);
  sampler.start();
  boost::asio::signal_set signals(io, SIGINT, SIGTERM);
  signals.async_wait([&](const boost::system::error_code&, int) { io.stop(); });
  const auto bound = server.local_endpoint();
  std::fprintf(stderr, "resctrlfs-exporter: serving %s on http://%s%s%s:%u/\n", root.c_str(),
               bound.address().is_v6() ? "[" : "", bound.address().to_string().c_str(),
               bound.address().is_v6() ? "]" : "", bound.port());
  std::fflush(stderr);
  io.run();
  return 0;
}
