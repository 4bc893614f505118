// Implements make_real_parts(): the platform factory's backend plus fs/'s
// filesystem.
#include "daemon/real_parts.h"

#include <unistd.h>

namespace resctrlfs::daemon {

Result<DaemonParts> make_real_parts(const DaemonOptions& opts, fs::InvalidationSink* inval) {
  DaemonParts parts;
  RESCTRLFS_ASSIGN_OR_RETURN(parts.backend, hw::make_platform(platform_options(opts)));
  parts.tasks = fs::make_proc_task_source();
  fs::FilesystemConfig cfg;
  cfg.arch = parts.backend.arch.get();
  cfg.tasks = parts.tasks.get();
  cfg.inval = inval;
  // kernfs files belong to the mounter (root in practice).
  cfg.mount_uid = getuid();
  cfg.mount_gid = getgid();
  parts.fs = fs::make_filesystem(cfg);
  if (!parts.fs) return Error::make(ENOMEM, "cannot create the filesystem");
  return parts;
}

}  // namespace resctrlfs::daemon
