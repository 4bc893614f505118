// Defines make_real_parts(): the PartsFactory of the shipped daemon, the
// backend hw/platform_factory.h builds (simulated or real) under the real
// fs::Filesystem.
#pragma once

#include "daemon/daemon.h"

namespace resctrlfs::daemon {

Result<DaemonParts> make_real_parts(const DaemonOptions& opts, fs::InvalidationSink* inval);

}  // namespace resctrlfs::daemon
