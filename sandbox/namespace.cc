// Implements the mount-namespace operations of namespace.h.
#include "sandbox/namespace.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "sandbox/proc_rewrite.h"

namespace resctrlfs::sandbox {
namespace {

namespace stdfs = std::filesystem;

Error sys_error(const std::string& what) {
  int e = errno;
  return Error::make(e, what + ": " + std::strerror(e));
}

Result<void> do_mount(const char* source, const std::string& target, const char* type,
                      unsigned long flags, const char* data, const std::string& what) {
  if (::mount(source, target.c_str(), type, flags, data) != 0) return sys_error(what);
  return {};
}

}  // namespace

Result<std::string> read_text_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Error::make(errno ? errno : ENOENT, "cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Result<void> write_text_file(const std::string& path, const std::string& content) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return sys_error("cannot create " + path);
  size_t off = 0;
  while (off < content.size()) {
    ssize_t n = ::write(fd, content.data() + off, content.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      Error e = sys_error("cannot write " + path);
      ::close(fd);
      return e;
    }
    off += static_cast<size_t>(n);
  }
  ::close(fd);
  return {};
}

Result<void> enter_private_mount_namespace() {
  if (::unshare(CLONE_NEWNS) != 0) return sys_error("unshare(CLONE_NEWNS)");
  RESCTRLFS_RETURN_IF_ERROR(
      do_mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr, "making mounts private"));
  // The namespace's copy of a resctrl mount of the host would keep it
  // alive: `fusermount3 -u` on the host would succeed while its daemon,
  // still mounted here, went on running for as long as the sandbox does.
  RESCTRLFS_ASSIGN_OR_RETURN(std::string mountinfo, read_text_file("/proc/self/mountinfo"));
  for (const auto& mp : resctrl_mount_points(mountinfo))
    if (::umount2(mp.c_str(), MNT_DETACH) != 0 && errno != EINVAL && errno != ENOENT)
      return sys_error("detaching this namespace's copy of the host's resctrl mount " + mp);
  return {};
}

Result<std::string> make_staging_dir(const std::string& parent) {
  std::string templ = parent + "/resctrlfs-sandbox.XXXXXX";
  if (::mkdtemp(templ.data()) == nullptr) return sys_error("mkdtemp " + templ);
  auto r = do_mount("resctrlfs-sandbox", templ, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=16m",
                    "mounting the staging tmpfs on " + templ);
  if (!r) {
    ::rmdir(templ.c_str());
    return r.error();
  }
  return templ;
}

void remove_staging_dir(const std::string& dir) {
  if (dir.empty()) return;
  ::umount2(dir.c_str(), MNT_DETACH);
  ::rmdir(dir.c_str());
}

Result<void> cover_sys_fs(const std::string& staging) {
  const std::string sys_fs = "/sys/fs";
  RESCTRLFS_ASSIGN_OR_RETURN(std::string mountinfo, read_text_file("/proc/self/mountinfo"));
  // Top-level names under /sys/fs that hold a mount (at them or below them).
  std::set<std::string> with_mounts;
  std::set<std::string> mounts_below;  // sorted: parents before children
  std::istringstream lines(mountinfo);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream f(line);
    std::string id, parent, dev, root, mp;
    f >> id >> parent >> dev >> root >> mp;
    if (mp.rfind(sys_fs + "/", 0) != 0) continue;
    std::string rest = mp.substr(sys_fs.size() + 1);
    mounts_below.insert(mp);
    // A host resctrl (kernel or FUSE) is detached and not kept.
    if (rest.rfind("resctrl", 0) == 0 && (rest.size() == 7 || rest[7] == '/')) continue;
    with_mounts.insert(rest.substr(0, rest.find('/')));
  }
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : stdfs::directory_iterator(sys_fs, ec)) {
    std::string n = e.path().filename().string();
    if (n != "resctrl") names.push_back(n);
  }
  if (ec) return Error::make(ec.value(), "cannot list /sys/fs: " + ec.message());

  const std::string keep = staging + "/keep";
  if (::mkdir(keep.c_str(), 0755) != 0 && errno != EEXIST) return sys_error("mkdir " + keep);
  for (const auto& n : names) {
    if (!with_mounts.count(n)) continue;
    std::string aside = keep + "/" + n;
    if (::mkdir(aside.c_str(), 0755) != 0 && errno != EEXIST) return sys_error("mkdir " + aside);
    RESCTRLFS_RETURN_IF_ERROR(do_mount((sys_fs + "/" + n).c_str(), aside, nullptr, MS_BIND | MS_REC,
                                       nullptr, "binding " + sys_fs + "/" + n + " aside"));
  }
  // Detach the originals so the mount table lists each kept mount once (a
  // covered duplicate would be the first match for mountinfo scanners).
  std::set<std::string> detached;
  for (const auto& mp : mounts_below) {
    bool covered = false;
    for (const auto& d : detached)
      if (mp.rfind(d + "/", 0) == 0) covered = true;
    if (covered) continue;
    if (::umount2(mp.c_str(), MNT_DETACH) == 0) detached.insert(mp);
  }
  RESCTRLFS_RETURN_IF_ERROR(do_mount("resctrlfs-sandbox", sys_fs, "tmpfs",
                                     MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0755,size=1m",
                                     "mounting a tmpfs over /sys/fs"));
  for (const auto& n : names) {
    std::string dst = sys_fs + "/" + n;
    if (::mkdir(dst.c_str(), 0755) != 0 && errno != EEXIST) return sys_error("mkdir " + dst);
    if (!with_mounts.count(n)) continue;
    RESCTRLFS_RETURN_IF_ERROR(do_mount((keep + "/" + n).c_str(), dst, nullptr, MS_MOVE, nullptr,
                                       "moving " + n + " back under /sys/fs"));
  }
  if (::mkdir("/sys/fs/resctrl", 0755) != 0) return sys_error("mkdir /sys/fs/resctrl");
  return {};
}

Result<void> bind_file(const std::string& staging, const std::string& name,
                       const std::string& content, const std::string& target) {
  std::string src = staging + "/" + name;
  RESCTRLFS_RETURN_IF_ERROR(write_text_file(src, content));
  return do_mount(src.c_str(), target, nullptr, MS_BIND, nullptr,
                  "bind-mounting " + src + " over " + target);
}

}  // namespace resctrlfs::sandbox
