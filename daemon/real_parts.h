// Defines make_real_parts(): the PartsFactory of the shipped daemon, the
// simulated machine or the MSR backend under the real fs::Filesystem.
#pragma once

#include "daemon/daemon.h"

namespace resctrlfs::daemon {

Result<DaemonParts> make_real_parts(const DaemonOptions& opts, fs::InvalidationSink* inval);

}  // namespace resctrlfs::daemon
