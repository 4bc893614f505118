// Defines the text transformations the sandbox applies to /proc files so
// that unmodified resctrl clients see the FUSE mount as the kernel's
// resctrl: /proc/filesystems gains `nodev\tresctrl`, /proc/cpuinfo's flags
// carry the RDT flags of the simulated platform, and a process's mounts /
// mountinfo show the mount at the resctrl mount point with type `resctrl`.
//
// Pure functions over text, so they are unit-tested without root.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace resctrlfs::sandbox {

// Every /proc/cpuinfo flag the kernel derives from RDT/PQoS feature bits, in
// the order the sandbox emits them. A host flag in this list that the
// platform lacks is removed from the fake cpuinfo.
const std::vector<std::string>& rdt_cpuinfo_flags();

// Returns `cpuinfo` with every `flags` line's RDT flags replaced by
// `platform_flags` (appended after the remaining host flags, in the order in
// which they are given, duplicates dropped). Other lines are unchanged.
std::string rewrite_cpuinfo(std::string_view cpuinfo,
                            const std::vector<std::string>& platform_flags);

// Returns `cpuinfo` with the per-processor topology and cache lines of the
// platform: `physical id` becomes packages[N] for `processor : N`,
// `siblings` the number of CPUs in that package, `cpu cores` siblings
// divided by the host's threads per core (siblings / cpu cores of the
// block, at least 1), and `cache size` becomes `cache_size_kb KB` (added
// after `cpu MHz`, or else `stepping`, when the host has none; left alone
// when cache_size_kb is 0). A processor outside `packages` or with a
// negative package keeps its lines.
std::string rewrite_cpuinfo_topology(std::string_view cpuinfo, const std::vector<int>& packages,
                                     uint64_t cache_size_kb);

// A /proc/cpuinfo of cores.size() processors (virtual CPUs, --cpus
// platform), each a copy of the host's first processor block with
// `processor`, `core id`, `apicid` and `initial apicid` of its own (the
// APIC ids are the CPU numbers); the platform's packages, cache size, flags
// and vendor are then applied by the functions above and below. Empty when
// the host's text has no processor block.
std::string virtual_cpuinfo(std::string_view host_cpuinfo, const std::vector<int>& cores);

// Returns `cpuinfo` with the value of every `vendor_id` line replaced by
// `vendor` (unchanged when `vendor` is empty). Tools that choose their
// tests by vendor read this line; the processor itself still identifies as
// the host's.
std::string rewrite_cpuinfo_vendor(std::string_view cpuinfo, const std::string& vendor);

// Returns `filesystems` with a `nodev\tresctrl` line appended (unless the
// exact line is already present).
std::string add_resctrl_filesystem(std::string_view filesystems);

// The resctrl mount options (cdp, cdpl2, mba_MBps, debug) found in a
// comma-separated `-o` option string, in the kernel's show order.
std::vector<std::string> resctrl_mount_options(std::string_view o_options);

// Rewrites a /proc/<pid>/mounts text: the line whose mount point is
// `mountpoint` becomes `resctrl MOUNTPOINT resctrl PER_MOUNT_OPTS[,OPTS] 0 0`,
// keeping the generic per-mount options (rw, nosuid, relatime, ...) and
// dropping the FUSE super options (user_id=, group_id=, ...). If several
// lines match, the last one (the visible mount) is rewritten.
std::string rewrite_mounts(std::string_view mounts, std::string_view mountpoint,
                           const std::vector<std::string>& resctrl_opts);

// Same for a mountinfo text: fstype and source become `resctrl`, the super
// options become `rw|ro[,OPTS]`; ids, device, root and per-mount options and
// optional fields are kept.
std::string rewrite_mountinfo(std::string_view mountinfo, std::string_view mountpoint,
                              const std::vector<std::string>& resctrl_opts);

// What mount(2)'s data string asks of resctrl, parsed as the kernel's
// legacy parser does (generic_parse_monolithic, then vfs_parse_fs_param):
// comma-separated items, the superblock flags (ro, rw, sync, ...) taken by
// the VFS, `source=` accepted only when mount(2) was given no source, the
// flags cdp, cdpl2, mba_MBps and debug (rdt_fs_parameters), anything else
// EINVAL. `message` is the line the kernel logs for a refusal (it has none
// for some).
struct ResctrlMountData {
  std::vector<std::string> options;  // resctrl's, in the kernel's show order
  int error = 0;                     // 0 or EINVAL
  std::string message;               // e.g. "resctrl: Unknown parameter 'foo'"
};
ResctrlMountData parse_resctrl_mount_data(std::string_view data, bool has_source);

// A mountinfo text with every mount of some devices rewritten as resctrl.
struct MountTableRewrite {
  std::string text;
  std::vector<size_t> lines;                      // the rewritten lines' indices
  std::vector<std::string> mountpoints;           // and their (escaped) mount points
  std::vector<std::vector<std::string>> options;  // and their resctrl options
  size_t line_count = 0;                          // lines in the table
};

// A device (MAJOR:MINOR as mountinfo shows it) of a resctrlfs mount and the
// resctrl options it was mounted with.
struct ResctrlDevice {
  std::string device;
  std::vector<std::string> options;
};

// Rewrites, as rewrite_mountinfo does, every line whose device field
// (MAJOR:MINOR) is `device`: the mount and any bind of it, wherever it is
// mounted in that process's view.
MountTableRewrite rewrite_mountinfo_of_device(std::string_view mountinfo, std::string_view device,
                                              const std::vector<std::string>& resctrl_opts);

// The same for several devices, each line with its device's options.
MountTableRewrite rewrite_mountinfo_of_devices(std::string_view mountinfo,
                                               const std::vector<ResctrlDevice>& devices);

// Rewrites the /proc/<pid>/mounts lines of the mounts that `mountinfo` (the
// same process's table, read just before) rewrote: by position when both
// list the same number of mounts, else by mount point; each with the
// options of its mountinfo line.
std::string rewrite_mounts_like(std::string_view mounts, const MountTableRewrite& mountinfo);

// The mount points (unescaped) of every resctrl mount in a mountinfo text,
// the kernel's (`resctrl`) and resctrlfs's FUSE ones (`fuse.resctrl`),
// deepest first, so that detaching them in this order never detaches a
// parent before a mount below it.
std::vector<std::string> resctrl_mount_points(std::string_view mountinfo);

// True if `mountinfo` has a mount at `mountpoint`.
bool has_mount(std::string_view mountinfo, std::string_view mountpoint);

}  // namespace resctrlfs::sandbox
