// Implements IoChannels (fs/io_channels.h): Intel I/O RDT channels in the
// tree, ours, behind the `iordt` mount option. The names follow the Linux
// RFC series that was posted for it and not merged: info/IO/<channel>
// lists the devices on a channel as SSSS:BB:DD.F.VCn, and a group's
// `channels` file moves a channel into the group.
#include "fs/io_channels.h"

#include <cerrno>
#include <cstdio>
#include <optional>

#include "fs/file_rows.h"
#include "fs/kstr.h"

namespace resctrlfs::fs::internal {

namespace {

std::string channel_name(uint32_t id) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "%#x", id);
  return buf;
}

}  // namespace

Result<void> IoChannels::check_mount(const MountOptions& opts) const {
  if (!opts.iordt) return Ok();
  const hw::IoTagCaps caps = m_.arch->io_tag_caps();
  if (m_.arch->io_channels().empty() || !(caps.alloc || caps.mon))
    return Error::make(ENODEV, mount_option_missing(&MountOptions::iordt));
  return Ok();
}

Result<void> IoChannels::mount() {
  chans_.clear();
  owner_.clear();
  if (!m_.opts.iordt) return Ok();
  chans_ = m_.arch->io_channels();
  // A mount does not half-succeed: a channel whose tags could not be
  // written would carry whatever tags it had before (another mount's, a
  // crashed daemon's), and with tagging off no channel would be confined or
  // counted although every group lists its channels as applied. Either
  // failure refuses the mount, with the hardware's errno and a message in
  // the daemon's log; the caller then resets what was written, as an
  // unmount does.
  for (const hw::IoChannelInfo& ch : chans_) {
    owner_[ch.id] = m_.root;
    Result<void> r = move(ch, m_.root);
    if (!r.ok())
      return mount_failed(r.error(), "writing the default group's tags to channel " +
                                         channel_name(ch.id) + " failed");
  }
  const hw::IoTagCaps caps = m_.arch->io_tag_caps();
  Result<void> r = m_.arch->set_io_tagging(caps.alloc, caps.mon);
  if (!r.ok()) return mount_failed(r.error(), "turning channel tagging on failed");
  return Ok();
}

Error IoChannels::mount_failed(const Error& e, const std::string& what) {
  std::string text = "iordt: " + what;
  std::string_view why = e.message;
  while (!why.empty() && why.back() == '\n') why.remove_suffix(1);
  if (!why.empty()) text += ": " + std::string(why);
  return Error::make(e.code, text);
}

void IoChannels::unmount() {
  if (chans_.empty()) return;
  // As the RFC did: the channels leave every group at unmount. They go back
  // to the tags of power-on (CLOSID 0, RMID 0) and stop being applied.
  for (const hw::IoChannelInfo& ch : chans_) (void)m_.arch->set_io_channel_tags(ch.id, 0, 0);
  (void)m_.arch->set_io_tagging(false, false);
  chans_.clear();
  owner_.clear();
}

void IoChannels::build_info(Node* info) {
  if (!m_.opts.iordt) return;
  static const FileRow kDevicesRow = {.name = "",
                                      .mode = 0444,
                                      .flags = 0,  // never added by the file table's flags
                                      .show = show_fn<&IoChannels::show_channel_devices>};
  Node* dir = m_.nodes.add(info, "IO", NodeKind::kInfoMon, S_IFDIR | 0755, m_.mount_uid,
                           m_.mount_gid, m_.now_seconds());
  for (const hw::IoChannelInfo& ch : chans_) {
    Node* f = m_.nodes.add(dir, channel_name(ch.id), NodeKind::kFile, S_IFREG | 0444, m_.mount_uid,
                           m_.mount_gid, m_.now_seconds());
    f->row = &kDevicesRow;
    f->domain = static_cast<int>(ch.id);
  }
}

const hw::IoChannelInfo* IoChannels::find(uint32_t id) const {
  for (const hw::IoChannelInfo& ch : chans_)
    if (ch.id == id) return &ch;
  return nullptr;
}

Result<void> IoChannels::move(const hw::IoChannelInfo& ch, Group* g) {
  RESCTRLFS_RETURN_IF_ERROR(m_.arch->set_io_channel_tags(ch.id, g->closid, g->rmid));
  owner_[ch.id] = g;
  return Ok();
}

void IoChannels::group_gone(const Group* g) {
  if (chans_.empty()) return;
  Group* to = g->type == GroupType::kMon && g->parent != nullptr ? g->parent : m_.root;
  for (const hw::IoChannelInfo& ch : chans_) {
    auto it = owner_.find(ch.id);
    if (it == owner_.end() || it->second != g) continue;
    // A failed write leaves the channel's tags unknown; it still belongs to
    // the surviving group, and the next move writes them again.
    (void)move(ch, to);
    it->second = to;
    m_.changes.all();  // the journal's channel list is in no group's record
  }
}

std::vector<std::pair<uint32_t, const Group*>> IoChannels::assignments() const {
  std::vector<std::pair<uint32_t, const Group*>> out;
  for (const hw::IoChannelInfo& ch : chans_) {
    auto it = owner_.find(ch.id);
    if (it != owner_.end() && it->second != m_.root) out.emplace_back(ch.id, it->second);
  }
  return out;
}

Result<void> IoChannels::restore(uint32_t id, Group* g) {
  const hw::IoChannelInfo* ch = find(id);
  if (ch == nullptr) return Error::make(EINVAL, "no channel " + channel_name(id));
  return move(*ch, g);
}

void IoChannels::retag(Group* g) {
  for (const hw::IoChannelInfo& ch : chans_) {
    auto it = owner_.find(ch.id);
    if (it == owner_.end() || it->second != g) continue;
    (void)move(ch, g);
    m_.changes.all();  // the group's name in the channel list changed too
  }
}

Result<std::string> IoChannels::show_channel_devices(const Node& n) {
  const hw::IoChannelInfo* ch = find(static_cast<uint32_t>(n.domain));
  std::string out;
  if (ch == nullptr) return out;
  for (const hw::IoChannelDevice& d : ch->devices) {
    out += d.bdf;
    out += ".VC" + std::to_string(d.vc) + "\n";
  }
  return out;
}

Result<std::string> IoChannels::show_channels(const Node& n) {
  const Group* g = n.group;
  std::string out;
  for (const hw::IoChannelInfo& ch : chans_) {
    auto it = owner_.find(ch.id);
    if (it != owner_.end() && it->second == g) out += channel_name(ch.id) + "\n";
  }
  return out;
}

Result<void> IoChannels::write_channels(Node& n, std::string_view data, const Caller&) {
  Group* g = n.group;
  if (g == nullptr) return fail(ENOENT, "");
  // As for tasks: a group whose CLOSID is (being) given to a region takes
  // no new members.
  if (g->mode == schemata::GroupMode::PSEUDO_LOCKSETUP ||
      g->mode == schemata::GroupMode::PSEUDO_LOCKED)
    return fail(EINVAL, "Pseudo-locking in progress\n");
  // Channel numbers (0x-prefixed hex, octal or decimal) separated by
  // commas, as the tasks file takes pids, moved one after the other; the
  // first failure stops the write and the channels moved before it stay
  // moved.
  const hw::IoTagCaps caps = m_.arch->io_tag_caps();
  std::optional<std::string_view> buf = kstr::c_string(data);
  while (buf && !buf->empty() && (*buf)[0] != '\n') {
    const std::string item(kstr::strim(kstr::strsep(buf, ",")));
    uint32_t id = 0;
    if (kstr::kstrtouint(item, 0, id) != 0) return fail(EINVAL, "Invalid channel " + item + "\n");
    const hw::IoChannelInfo* ch = find(id);
    if (ch == nullptr) return fail(EINVAL, "Unknown channel " + item + "\n");
    // A tag the channel cannot carry, or the machine does not apply, would
    // leave the channel counted or confined where the group says it is not.
    if (g->closid != 0 && !(ch->clos_tagging && caps.alloc))
      return fail(EINVAL, "Channel " + channel_name(id) + " has no CLOS tagging\n");
    if (g->rmid != 0 && !(ch->rmid_tagging && caps.mon))
      return fail(EINVAL, "Channel " + channel_name(id) + " has no RMID tagging\n");
    RESCTRLFS_RETURN_IF_ERROR(move(*ch, g));
  }
  return Ok();
}

// The row of group directories for Intel I/O RDT (ours), with the iordt
// mount option.
FileRows io_channel_file_rows() {
  static const FileRow kRows[] = {
      {.name = "channels",
       .mode = 0644,
       .flags = kBase,
       .show = show_fn<&IoChannels::show_channels>,
       .write = write_fn<&IoChannels::write_channels>,
       .cond = cond_fn<&IoChannels::cond_iordt>,
       .read_status = true},
  };
  return kRows;
}

}  // namespace resctrlfs::fs::internal
