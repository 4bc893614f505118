// Defines the mount-namespace operations of the sandbox: entering a private
// mount namespace, covering /sys/fs with a tmpfs that keeps the mounts
// below it (the cgroup tree runc needs), and bind-mounting generated files
// over /proc and sysfs files. Every function is a thin wrapper over the
// syscalls that turns failures into Errors naming the path and errno.
#pragma once

#include <string>
#include <vector>

#include "base/result.h"

namespace resctrlfs::sandbox {

// unshare(CLONE_NEWNS) and make every mount private, so nothing the sandbox
// mounts propagates to the host; then detach the namespace's copies of the
// host's resctrl mounts, so the sandbox never keeps one (or its daemon)
// alive after the host unmounts it.
Result<void> enter_private_mount_namespace();

// Creates a directory under `parent` (mkdtemp) and mounts a small tmpfs on
// it inside the current namespace; generated files live there. Returns the
// directory.
Result<std::string> make_staging_dir(const std::string& parent);

// Unmounts the staging tmpfs (lazily) and removes its directory.
void remove_staging_dir(const std::string& dir);

// Mounts a tmpfs over /sys/fs, moving every mount found below /sys/fs
// (cgroup tree, fusectl, bpf, ...) back onto it, recreating the other
// top-level names as empty directories, and creating `/sys/fs/resctrl`.
// `staging` holds the moved trees in between.
Result<void> cover_sys_fs(const std::string& staging);

// Writes `content` to staging/`name` and bind-mounts it over `target`.
Result<void> bind_file(const std::string& staging, const std::string& name,
                       const std::string& content, const std::string& target);

Result<std::string> read_text_file(const std::string& path);
Result<void> write_text_file(const std::string& path, const std::string& content);

}  // namespace resctrlfs::sandbox
