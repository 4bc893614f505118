// Implements make_real_parts(): hw/'s backend plus fs/'s filesystem.
#include "daemon/real_parts.h"

#include <unistd.h>

namespace resctrlfs::daemon {

Result<DaemonParts> make_real_parts(const DaemonOptions& opts, fs::InvalidationSink* inval) {
  DaemonParts parts;
  if (opts.backend == BackendKind::kMsr) {
    RESCTRLFS_ASSIGN_OR_RETURN(parts.backend,
                               hw::make_msr_backend(opts.broker_socket, opts.rdt, opts.hw_root));
  } else {
    RESCTRLFS_ASSIGN_OR_RETURN(parts.backend, hw::make_sim_backend(opts.platform, opts.rdt));
  }
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
