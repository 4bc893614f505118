// Declares IoChannels, the part behind Intel I/O RDT in the tree (ours,
// only with the `iordt` mount option): info/IO/<channel> listing each
// channel's devices and the groups' `channels` file that moves a channel
// into a group, whose CLOSID/RMID then tag the channel's device traffic.
// A channel is in exactly one group: the default group at mount, its
// group's parent after an rmdir. Internal to fs/.
//
// Locking: like every part, assumes FsImpl::mu_ is held.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fs/parts.h"

namespace resctrlfs::fs::internal {

class IoChannels final : public Part {
 public:
  explicit IoChannels(Model& m) : Part(m) {}
  bool cond_iordt() const { return m_.opts.iordt; }
  // Refuses `iordt` on a machine without channels or without tagging.
  Result<void> check_mount(const MountOptions& opts) const;
  // After the default group exists: every channel into it, tagging on. A
  // failed hardware write refuses the mount (its errno, "iordt: ..." text);
  // the channels are then left for unmount() to reset.
  Result<void> mount();
  // Every channel back to CLOSID 0 / RMID 0, tagging off.
  void unmount();
  // info/IO and one file per channel.
  void build_info(Node* info);
  // Group `g` goes away: its channels go to its parent (a MON group's
  // CTRL_MON group, else the default group).
  void group_gone(const Group* g);
  // Group `g`'s CLOSID changed (a MON group moved to another parent).
  void retag(Group* g);
  // The journal: the channels outside the default group, by id, each with
  // its group; and one channel put back into group `g` at a restore (EINVAL
  // for a channel this mount does not list).
  std::vector<std::pair<uint32_t, const Group*>> assignments() const;
  // Whether a channel is in group `g` itself (its device traffic carries
  // g's RMID).
  bool has_channel(const Group* g) const {
    for (const auto& [id, owner] : owner_)
      if (owner == g) return true;
    return false;
  }
  Result<void> restore(uint32_t id, Group* g);
  Result<std::string> show_channel_devices(const Node& n);
  Result<std::string> show_channels(const Node& n);
  Result<void> write_channels(Node& n, std::string_view data, const Caller& c);

 private:
  const hw::IoChannelInfo* find(uint32_t id) const;
  // Tags channel `ch` with `g`'s CLOSID and RMID and records `g` as its group.
  Result<void> move(const hw::IoChannelInfo& ch, Group* g);
  // mount()'s refusal: "iordt: <what>: <the hardware's text>" with its errno.
  static Error mount_failed(const Error& e, const std::string& what);

  std::vector<hw::IoChannelInfo> chans_;
  std::map<uint32_t, Group*> owner_;
};

}  // namespace resctrlfs::fs::internal
