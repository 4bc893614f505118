// Defines the live restart of resctrlfsd (ours; docs/reliability.md): the
// /dev/fuse connection outlives the daemon that serves it, so a crash or an
// upgrade is a pause for the processes using the tree, never ENOTCONN.
//
// Who holds the connection while no daemon runs:
//   - the keeper (`resctrlfsd --keeper ... MOUNTPOINT`): run_keeper()
//     mounts (FuseBridge::mount_connection: libfuse's mount, the options of
//     every other mount of ours), keeps the descriptor, and runs
//     `resctrlfsd -f --fuse-fd N ...` (the same arguments, the program
//     read again from its path at each start, so an upgraded binary is the
//     one that starts), and after a crash, or on SIGHUP (an upgrade), kills
//     what is left of it and starts it again with `--takeover`. It is the
//     same program, not a separate one, so that it parses the options as
//     the daemon does; it runs none of the daemon's code past the mount;
//   - systemd's file descriptor store (`--fd-store`): the daemon mounts,
//     hands the descriptor to systemd (FDSTORE=1, FDNAME=fuse) and, started
//     again after a crash (Restart=on-failure), finds it in LISTEN_FDS.
//
// The kernel's side: the connection lives while any process holds the
// /dev/fuse open file description, which is passed as it is (inherited, or
// through SCM_RIGHTS), never cloned: requests the dead daemon had read sit
// in that description's processing list, and FUSE_NOTIFY_RESEND (Linux 6.9)
// moves them back to the queue for the new daemon (FuseBridge::adopt).
// What the new daemon must give back unchanged: node ids (fs/node_table.h),
// file handles (keys, not pointers: fuse_bridge.cc), the INIT terms
// (kept in STATE_DIR/fuse-init by the first daemon, fed to libfuse by the
// next one, whose reply is not sent).
//
// Threading: run_keeper() is single-threaded and signal-driven.
#pragma once

#include <string>
#include <vector>

#include "daemon/options.h"

namespace resctrlfs::daemon {

// Where the first daemon of a connection keeps its INIT.
inline constexpr char kFuseInitFile[] = "fuse-init";
// The file in the state directory that keeps the counters across a takeover
// (hw/counter_store.h).
inline constexpr char kCounterFile[] = "counters";
// The file in the state directory that keeps the declared workloads
// (`resctrlfsctl workload`) for a takeover: the last accepted request per
// CPU, thread and channel, one control request line each.
inline constexpr char kWorkloadFile[] = "workloads";

// The keeper's main: `args` are the daemon's arguments as given (argv[0]
// first), `opts` their parse. Returns the exit status: 0 once the tree was
// unmounted or the keeper stopped (SIGTERM/SIGINT: the daemon unmounts), 1
// when the mount or the first start failed.
int run_keeper(const DaemonOptions& opts, const std::vector<std::string>& args);

// --fd-store: the descriptor systemd kept for this service under the name
// "fuse" (LISTEN_PID, LISTEN_FDS, LISTEN_FDNAMES), or -1.
int fd_from_systemd();
// Hands `fd` to systemd's store for this service (FDSTORE=1, FDNAME=fuse);
// false (logged) without NOTIFY_SOCKET or when the message fails.
bool store_fd_in_systemd(int fd);
// Drops it from the store again (FDSTOREREMOVE=1): after an unmount.
void remove_fd_from_systemd();

// Whether the kernel resends requests a dead daemon had read
// (FUSE_NOTIFY_RESEND, Linux 6.9): a resend notification on `fd` with
// nothing to resend is harmless; an older kernel refuses it.
bool kernel_resends(int fd);
// A new descriptor on the same connection (FUSE_DEV_IOC_CLONE), or -1. On
// an older kernel each daemon serves a clone only it holds, so that what
// it had read ends with ECONNABORTED when it dies instead of never.
int clone_connection(int fd);

}  // namespace resctrlfs::daemon
