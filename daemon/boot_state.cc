// Implements the boot-state file (see boot_state.h).
#include "daemon/boot_state.h"

#include <dirent.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <vector>

#include "base/json_input.h"
#include "daemon/private_dir.h"

namespace resctrlfs::daemon {

namespace {

using nlohmann::json;

std::string normalised(const std::string& mountpoint) {
  std::error_code ec;
  std::filesystem::path p = std::filesystem::absolute(mountpoint, ec);
  if (ec) p = mountpoint;
  return p.lexically_normal().string();
}

std::string escaped_name(const std::string& mountpoint) {
  std::string name;
  for (unsigned char c : normalised(mountpoint)) {
    if (c == '/') {
      name += '_';
    } else if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               c == '.' || c == '-') {
      name += static_cast<char>(c);
    } else {
      char hex[4];
      std::snprintf(hex, sizeof(hex), "%%%02X", c);
      name += hex;
    }
  }
  return name + ".json";
}

// A boot-state file's path split into its directory and its name.
struct DirAndName {
  std::string dir;
  std::string name;
};
DirAndName split(const std::string& path) {
  const std::filesystem::path p(path);
  return {p.parent_path().string(), p.filename().string()};
}

Error boot_error(const std::string& path, int e) {
  return Error::make(e, "boot state " + path + ": " + std::strerror(e));
}

}  // namespace

std::string boot_state_path(const std::string& dir, const std::string& mountpoint,
                            const std::string& ns_identity) {
  return (std::filesystem::path(dir) / (ns_identity + escaped_name(mountpoint))).string();
}

void remove_stale_boot_states(const std::string& dir, const std::string& mountpoint,
                              const std::string& ns_key, const std::string& keep) {
  if (ns_key.empty()) return;
  const std::string prefix = ns_key + "-", suffix = escaped_name(mountpoint);
  Result<PrivateDir> pdir = PrivateDir::open(dir, "boot state", false);
  if (!pdir.ok()) return;
  // Listed and removed through the checked descriptor, not by path.
  const int list_fd = ::fcntl(pdir->fd(), F_DUPFD_CLOEXEC, 0);
  if (list_fd < 0) return;
  DIR* d = ::fdopendir(list_fd);
  if (d == nullptr) {
    ::close(list_fd);
    return;
  }
  std::vector<std::string> doomed;
  const std::string keep_name = std::filesystem::path(keep).filename().string();
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name.size() <= prefix.size() + suffix.size() || name.compare(0, prefix.size(), prefix) ||
        name.compare(name.size() - suffix.size(), suffix.size(), suffix))
      continue;
    // The middle is "<pid>-<start>": digits, one dash, digits.
    const std::string mid = name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
    const size_t dash = mid.find('-');
    if (dash == 0 || dash == std::string::npos || dash + 1 == mid.size() ||
        mid.find_first_not_of("0123456789-") != std::string::npos ||
        mid.find('-', dash + 1) != std::string::npos)
      continue;
    if (name != keep_name) doomed.push_back(name);
  }
  ::closedir(d);
  for (const std::string& name : doomed) (void)::unlinkat(pdir->fd(), name.c_str(), 0);
}

Result<std::optional<std::string>> parse_boot_state(std::string_view text,
                                                    const std::string& platform,
                                                    const std::string& mountpoint,
                                                    int64_t* saved_boottime_ms) {
  // Outside input (a file anyone with access to /run may have damaged):
  // typed access only (base/json_input.h); the try is the last guard.
  try {
    Result<json> parsed = parse_json(text);
    if (!parsed.ok()) return Error::make(EINVAL, "not JSON: " + parsed.error().message);
    const JsonIn j(*parsed);
    if (!j.json().is_object()) return Error::make(EINVAL, "not a boot-state document");
    RESCTRLFS_ASSIGN_OR_RETURN(const int version, j.int_at<int>("version"));
    if (version != 1) return Error::make(EINVAL, "unknown version " + std::to_string(version));
    RESCTRLFS_ASSIGN_OR_RETURN(const JsonIn state, j.get("state"));
    RESCTRLFS_RETURN_IF_ERROR(state.object());
    RESCTRLFS_ASSIGN_OR_RETURN(const std::string file_platform, j.string_or("platform", ""));
    RESCTRLFS_ASSIGN_OR_RETURN(const std::string file_mountpoint, j.string_or("mountpoint", ""));
    int64_t saved = -1;
    if (j.json().contains("saved_boottime_ms")) {
      RESCTRLFS_ASSIGN_OR_RETURN(saved, j.int_at<int64_t>("saved_boottime_ms", 0));
    }
    if (saved_boottime_ms != nullptr) *saved_boottime_ms = saved;
    // Another machine shape or another mount point: not this "boot".
    if (file_platform != platform || file_mountpoint != normalised(mountpoint))
      return std::optional<std::string>();
    return std::optional<std::string>(state.json().dump());
  } catch (const std::exception& e) {
    return Error::make(EINVAL, e.what());
  }
}

int64_t boottime_ms() {
  timespec ts{};
  ::clock_gettime(CLOCK_BOOTTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

Result<std::optional<std::string>> read_boot_state(const std::string& path,
                                                   const std::string& platform,
                                                   const std::string& mountpoint,
                                                   int64_t* saved_boottime_ms) {
  const DirAndName where = split(path);
  Result<PrivateDir> pdir = PrivateDir::open(where.dir, "boot state", false);
  if (!pdir.ok()) {
    if (pdir.error().code == ENOENT) return std::optional<std::string>();
    return std::move(pdir).error();
  }
  const int fd = ::openat(pdir->fd(), where.name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return std::optional<std::string>();
    return boot_error(path, errno);
  }
  std::string text;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int e = errno;
      ::close(fd);
      return boot_error(path, e);
    }
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  Result<std::optional<std::string>> doc =
      parse_boot_state(text, platform, mountpoint, saved_boottime_ms);
  if (!doc.ok()) return Error::make(EINVAL, "boot state " + path + ": " + doc.error().message);
  return doc;
}

Result<void> write_boot_state(const std::string& path, const std::string& platform,
                              const std::string& mountpoint, const std::string& state_json,
                              int64_t saved_boottime_ms) {
  // fs/'s document goes in as it is (~40 KiB at 4096 RMIDs: parsing and
  // printing it again here cost more than writing it); read_boot_state()
  // checks all of it on the way back. The keys are in the order a JSON
  // library prints an object's keys.
  if (state_json.size() < 2 || state_json.front() != '{' || state_json.back() != '}')
    return Error::make(EINVAL, "boot state: not a JSON object");
  const DirAndName where = split(path);
  RESCTRLFS_ASSIGN_OR_RETURN(PrivateDir pdir, PrivateDir::open(where.dir, "boot state", true));
  const std::string tmp_name = where.name + ".tmp";
  const std::string tmp = path + ".tmp";
  std::string text = "{\"mountpoint\":";
  text += json(normalised(mountpoint)).dump();
  text += ",\"platform\":";
  text += json(platform).dump();
  if (saved_boottime_ms >= 0) text += ",\"saved_boottime_ms\":" + std::to_string(saved_boottime_ms);
  text += ",\"state\":";
  text += state_json;
  text += ",\"version\":1}\n";
  // A new file, never one found under the temporary name.
  if (::unlinkat(pdir.fd(), tmp_name.c_str(), 0) != 0 && errno != ENOENT)
    return boot_error(tmp, errno);
  int fd = ::openat(pdir.fd(), tmp_name.c_str(),
                    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) return boot_error(tmp, errno);
  const ssize_t n = ::write(fd, text.data(), text.size());
  const int werr = errno;
  ::close(fd);
  if (n != static_cast<ssize_t>(text.size())) {
    ::unlinkat(pdir.fd(), tmp_name.c_str(), 0);
    return Error::make(n < 0 ? werr : EIO, "boot state " + tmp + ": short write");
  }
  if (::renameat(pdir.fd(), tmp_name.c_str(), pdir.fd(), where.name.c_str()) != 0) {
    const int e = errno;
    ::unlinkat(pdir.fd(), tmp_name.c_str(), 0);
    return boot_error(path, e);
  }
  return Ok();
}

Result<std::string> set_boot_state_aside(const std::string& path) {
  const DirAndName where = split(path);
  RESCTRLFS_ASSIGN_OR_RETURN(PrivateDir pdir, PrivateDir::open(where.dir, "boot state", false));
  const std::string aside_name = where.name + kBootStateRejectedSuffix;
  if (::renameat(pdir.fd(), where.name.c_str(), pdir.fd(), aside_name.c_str()) != 0)
    return boot_error(path, errno);
  return path + kBootStateRejectedSuffix;
}

}  // namespace resctrlfs::daemon
