// Defines the daemon's boot-state file: what the kernel keeps in memory from
// one resctrl mount to the next until reboot (fs::Filesystem's
// save_boot_state_json()), kept for the next daemon mounted on the same
// mount point. The file lives on /run, a tmpfs, so that it goes away at
// reboot like the kernel's memory; it is named after the mount point so that
// daemons on different mount points (tests use temporary ones) never see
// each other's settings.
//
// File: {"version": 1, "platform": "<name>", "mountpoint": "<abs path>",
//        "saved_boottime_ms": <CLOCK_BOOTTIME when written>,
//        "state": {<the Filesystem's document>}}.
// The time (optional in a file) tells the next daemon how long nothing ran
// the kernel's 1 s limbo worker: the kernel's goes on while resctrl is
// unmounted, so a remount after a pause finds the clean RMIDs freed.
//
// The directory holding these files must be private to the daemon's uid
// (PrivateDir in private_dir.h: owned by it, writable by nobody else, not a
// symlink): the functions below fail with EPERM (and remove nothing) in any
// other, and reach every file through the directory's descriptor, never
// following a symlink at a file's name (ELOOP).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"

namespace resctrlfs::daemon {

// A boot-state file that cannot be applied is renamed with this suffix.
inline constexpr const char* kBootStateRejectedSuffix = ".rejected";

// The file for `mountpoint` (made absolute and normalised) in `dir`: the
// path with '/' written as '_' and every byte other than [A-Za-z0-9.-] as
// %XX, so that distinct mount points never share a file, after the mount
// namespace's identity when one is given (MountNamespace::identity(),
// "mnt-<inode>-<pid>-<start>"), so that namespaces never share one either:
// "mnt-4026531841-1-2_sys_fs_resctrl.json".
std::string boot_state_path(const std::string& dir, const std::string& mountpoint,
                            const std::string& ns_identity = {});

// Removes the files in `dir` for `mountpoint` left by dead namespaces that
// had the inode number of `ns_key` ("mnt-<inode>"): every
// "<ns_key>-<pid>-<start><mount point>.json" other than `keep`. Nothing in a
// directory that is not private (see below).
void remove_stale_boot_states(const std::string& dir, const std::string& mountpoint,
                              const std::string& ns_key, const std::string& keep);

// The Filesystem document stored for (`platform`, `mountpoint`) in `path`, or
// nothing when there is no file or it was written for another platform or
// mount point. EINVAL for a file that is not such a document. With
// `saved_boottime_ms`, it gets the file's saved_boottime_ms (-1 if absent).
Result<std::optional<std::string>> read_boot_state(const std::string& path,
                                                   const std::string& platform,
                                                   const std::string& mountpoint,
                                                   int64_t* saved_boottime_ms = nullptr);

// The Filesystem document in the text of a boot-state file, or nothing when
// it was written for another platform or mount point. EINVAL with the reason
// (the JSON path of what is wrong) for text that is not such a document.
Result<std::optional<std::string>> parse_boot_state(std::string_view text,
                                                    const std::string& platform,
                                                    const std::string& mountpoint,
                                                    int64_t* saved_boottime_ms = nullptr);

// Renames the file at `path` to `path` + kBootStateRejectedSuffix; the new
// path.
Result<std::string> set_boot_state_aside(const std::string& path);

// Replaces `path` atomically (temporary file + rename), creating its
// directory (mode 0700) if needed. `state_json` is fs/'s document, written
// as it is: EINVAL if it is not even shaped like a JSON object.
// `saved_boottime_ms` (not written when negative) is the CLOCK_BOOTTIME
// time in ms at which the writer stopped running the limbo worker.
Result<void> write_boot_state(const std::string& path, const std::string& platform,
                              const std::string& mountpoint, const std::string& state_json,
                              int64_t saved_boottime_ms = -1);

// CLOCK_BOOTTIME in ms (counts suspend, resets at boot like the file).
int64_t boottime_ms();

}  // namespace resctrlfs::daemon
