// Implements the exporter's URL space (see routes.h).
#include "exporter/routes.h"

#include "exporter/web_assets.h"

namespace resctrlfs::exporter {

HttpResponse serve(Collector& collector, const std::string& target) {
  std::string path = target.substr(0, target.find('?'));
  if (path == "/metrics") {
    return {200, "text/plain; version=0.0.4; charset=utf-8", collector.metrics()};
  }
  if (path == "/api/state") return {200, "application/json", collector.api_state()};
  if (path == "/api/history") return {200, "application/json", collector.api_history()};
  if (path == "/") path = "/index.html";
  for (const web::Asset& a : web::kAssets) {
    if (path == a.path) {
      return {200, a.type, std::string(reinterpret_cast<const char*>(a.data), a.size)};
    }
  }
  return {404, "text/plain; charset=utf-8", "not found: " + path + "\n"};
}

}  // namespace resctrlfs::exporter
