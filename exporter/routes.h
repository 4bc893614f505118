// Defines the exporter's URL space: /metrics, /api/state, /api/history (the
// samples kept for the page's plots, exporter/history.h), the page (/) and
// its embedded files.
#pragma once

#include <string>

#include "exporter/collector.h"
#include "exporter/http_server.h"

namespace resctrlfs::exporter {

HttpResponse serve(Collector& collector, const std::string& target);

}  // namespace resctrlfs::exporter
