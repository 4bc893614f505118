// Defines MountOptions, the resctrl mount's options, and their table: one
// row per option naming where MountOptions keeps it and, for the options
// that are ours, what asks for it and the message a mount fails with on a
// machine without it. Every reader goes through the table: the -o parser
// (daemon/options.cc), the mount check (fs/groups.cc, fs/io_channels.cc),
// the state documents (fs/state.cc) and the journal that reads them back
// (daemon/journal.cc), the self-check (daemon/self_check.cc). A new option
// of ours is its field and its row here, plus, for a resource option, the
// hw/ code that sets hw::Resource::mount_option to its name.
#pragma once

#include <string>
#include <string_view>

namespace resctrlfs::fs {

struct MountOptions {
  bool cdp = false;
  bool cdpl2 = false;
  bool mba_mbps = false;
  bool debug = false;
  bool iordt = false;  // ours: Intel I/O RDT channels in the tree
  bool cba = false;    // ours: the CB (cache bandwidth allocation) resource
  bool stlb = false;   // ours: the STLB QoS resource (schemata line, info/STLB)
  bool tccl3 = false;  // ours: the non-enumerated L3 CAT of Intel TCC parts
  // Whether the resource option `name` (hw::Resource::mount_option) is on.
  bool resource_option(std::string_view name) const;
};

// Who asks for an option.
enum class MountOptionKind {
  kKernel,    // the kernel's (rdt_fs_parameters); checked by fs/groups.cc
  kResource,  // ours: a resource whose hw::Resource::mount_option is its name
  kFeature,   // ours: a feature fs/ checks itself (iordt: fs/io_channels.cc)
};

struct MountOptionRow {
  const char* name;
  bool MountOptions::*flag;
  MountOptionKind kind;
  // Ours: the mount fails with ENODEV "<name>: <missing>" on a machine
  // without what asks for the option.
  const char* missing = nullptr;
  // Ours: the info/ directory only a mount with the option has (how the
  // self-check tells a mount's options, which a FUSE mount's entry in the
  // mount table does not show); null when there is none of its own.
  const char* info_dir = nullptr;
  // Ours: no /proc/cpuinfo flag announces it (model-specific), so the msr
  // backend lets the decoder decide.
  bool model_specific = false;
};

// In the order -o help and the documents list them: the kernel's, then ours.
inline constexpr MountOptionRow kMountOptions[] = {
    {"cdp", &MountOptions::cdp, MountOptionKind::kKernel},
    {"cdpl2", &MountOptions::cdpl2, MountOptionKind::kKernel},
    {"mba_MBps", &MountOptions::mba_mbps, MountOptionKind::kKernel},
    {"debug", &MountOptions::debug, MountOptionKind::kKernel},
    {"iordt", &MountOptions::iordt, MountOptionKind::kFeature,
     "this machine has no I/O RDT channels"},
    {"cba", &MountOptions::cba, MountOptionKind::kResource,
     "this machine has no Cache Bandwidth Allocation", "CB"},
    {"stlb", &MountOptions::stlb, MountOptionKind::kResource, "this machine has no STLB QoS",
     "STLB", /*model_specific=*/true},
    {"tccl3", &MountOptions::tccl3, MountOptionKind::kResource,
     "this machine has no model-specific L3 CAT", nullptr, /*model_specific=*/true},
};

// The row of option `name`, or null.
inline const MountOptionRow* find_mount_option(std::string_view name) {
  for (const MountOptionRow& r : kMountOptions)
    if (name == r.name) return &r;
  return nullptr;
}

// "<name>: <missing>", the refusal of option `flag` on a machine without it.
inline std::string mount_option_missing(bool MountOptions::*flag) {
  for (const MountOptionRow& r : kMountOptions)
    if (r.flag == flag) return std::string(r.name) + ": " + (r.missing ? r.missing : "unavailable");
  return "unavailable";
}

inline bool MountOptions::resource_option(std::string_view name) const {
  const MountOptionRow* r = find_mount_option(name);
  return r != nullptr && r->kind == MountOptionKind::kResource && this->*(r->flag);
}

}  // namespace resctrlfs::fs
