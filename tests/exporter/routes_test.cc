// The URL space and the listen-address parser.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "exporter/routes.h"
#include "tests/exporter/tree_fixture.h"

namespace resctrlfs::exporter {
namespace {

using testing::TempTree;

TEST_CASE("routes: /metrics, /api/state, the page and its files", "[routes]") {
  TempTree t;
  t.intel_2s({"g1"});
  t.write("g1/schemata", "    MB:0=30;1=100\n    L3:0=3;1=7ff\n");
  t.write("g1/mode", "exclusive\n");
  TreeReader reader(t.root());
  Collector c(reader);
  HttpResponse r = serve(c, "/metrics");
  CHECK(r.status == 200);
  CHECK(r.content_type == "text/plain; version=0.0.4; charset=utf-8");
  CHECK(r.body.find("node_resctrl_up 1\n") != std::string::npos);
  CHECK(serve(c, "/metrics?x=1").status == 200);

  r = serve(c, "/api/state");
  CHECK(r.status == 200);
  CHECK(r.content_type == "application/json");
  auto j = nlohmann::json::parse(r.body);
  CHECK(j["ok"] == true);
  REQUIRE(j["caches"].size() == 1);
  CHECK(j["caches"][0]["schema"] == "L3");
  CHECK(j["caches"][0]["cbm_len"] == 11);
  CHECK(j["caches"][0]["domains"][1]["id"] == 1);
  REQUIRE(j["groups"].size() == 2);
  CHECK(j["groups"][0]["label"] == "/");
  CHECK(j["groups"][1]["name"] == "g1");
  CHECK(j["groups"][1]["mode"] == "exclusive");
  CHECK(j["groups"][1]["schemata"]["L3"]["0"] == "3");
  CHECK(j["groups"][1]["schemata"]["MB"]["0"] == "30");
  CHECK(j["bandwidth"][0]["schema"] == "MB");

  r = serve(c, "/");
  CHECK(r.status == 200);
  CHECK(r.content_type == "text/html; charset=utf-8");
  CHECK(r.body.find("<script src=\"/app.js\">") != std::string::npos);
  CHECK(r.body.find("id=\"legend\"") != std::string::npos);
  // Nothing on the page is fetched from elsewhere.
  for (const char* f : {"/", "/app.js", "/style.css"}) {
    std::string b = serve(c, f).body;
    // The SVG namespace is a name, not an address that is fetched.
    const std::string svg_ns = "http://www.w3.org/2000/svg";
    for (size_t p; (p = b.find(svg_ns)) != std::string::npos;) b.erase(p, svg_ns.size());
    INFO(f);
    CHECK(!b.empty());
    CHECK(b.find("http://") == std::string::npos);
    CHECK(b.find("https://") == std::string::npos);
    CHECK(b.find("//cdn") == std::string::npos);
  }
  CHECK(serve(c, "/app.js").content_type == "text/javascript; charset=utf-8");
  CHECK(serve(c, "/nope").status == 404);
  CHECK(serve(c, "/../etc/passwd").status == 404);
}

TEST_CASE("listen addresses", "[routes]") {
  auto ep = parse_listen_address("127.0.0.1:9835");
  REQUIRE(ep.ok());
  CHECK(ep->port() == 9835);
  ep = parse_listen_address(":80");
  REQUIRE(ep.ok());
  CHECK(ep->address().to_string() == "127.0.0.1");
  ep = parse_listen_address("[::1]:9000");
  REQUIRE(ep.ok());
  CHECK(ep->address().is_v6());
  ep = parse_listen_address("0.0.0.0:0");
  REQUIRE(ep.ok());
  // A host name is resolved (localhost: its IPv4 address first).
  ep = parse_listen_address("localhost:9835");
  REQUIRE(ep.ok());
  CHECK(ep->address().to_string() == "127.0.0.1");
  CHECK(ep->port() == 9835);
  for (const char* bad : {"", "localhost", "1.2.3.4", "1.2.3.4:", "1.2.3.4:65536", "1.2.3.4:x",
                          "[::1:80", "1.2.3.4:-1", "[localhost]:80"}) {
    INFO(bad);
    auto r = parse_listen_address(bad);
    REQUIRE_FALSE(r.ok());
    // Every refusal lists the forms that work.
    CHECK(r.error().message.find("localhost:9835") != std::string::npos);
    CHECK(r.error().message.find("[::1]:9835") != std::string::npos);
  }
}

}  // namespace
}  // namespace resctrlfs::exporter
