// Implements PrivateDir (see private_dir.h).
#include "daemon/private_dir.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

namespace resctrlfs::daemon {

namespace {

std::string owner_name(uid_t uid) { return uid == 0 ? "root" : "uid " + std::to_string(uid); }

// What the messages below ask the administrator to do.
std::string remedy(uid_t euid) {
  const std::string who = owner_name(euid);
  return "use a directory only " + who + " can write (chown " +
         (euid == 0 ? std::string("root") : std::to_string(euid)) +
         ", chmod 0700), or let resctrlfsd create it";
}

Error refuse(std::string_view what, const std::string& path, const std::string& why) {
  return Error::make(EPERM, std::string(what) + " " + path + ": " + why);
}

}  // namespace

Result<PrivateDir> PrivateDir::open(const std::string& path_in, std::string_view what,
                                    bool create) {
  std::string path = path_in;
  // "dir/" would follow a symlink named dir even with O_NOFOLLOW.
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  if (path.empty()) return Error::make(EINVAL, std::string(what) + ": empty directory name");
  const uid_t euid = ::geteuid();
  bool created = false;
  if (create) {
    // Parents as mkdir -p makes them, but never writable by group or others
    // (a umask of 0 would leave them so: whoever can write to one could put
    // another directory in the place of the one below it).
    const std::filesystem::path parent = std::filesystem::path(path).parent_path();
    std::filesystem::path made;
    for (const std::filesystem::path& part : parent) {
      made /= part;
      if (::mkdir(made.c_str(), 0755) != 0 && errno != EEXIST) {
        const int e = errno;
        return Error::make(e, std::string(what) + " " + path + ": cannot create " + made.string() +
                                  ": " + std::strerror(e));
      }
    }
    if (::mkdir(path.c_str(), 0700) == 0) {
      created = true;
    } else if (errno != EEXIST) {
      const int e = errno;
      return Error::make(
          e, std::string(what) + " " + path + ": cannot create it: " + std::strerror(e));
    }
  }
  const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    const int e = errno;
    struct stat lst;
    if ((e == ELOOP || e == ENOTDIR) && ::lstat(path.c_str(), &lst) == 0 && S_ISLNK(lst.st_mode)) {
      return refuse(what, path,
                    "is a symbolic link: name the directory itself (another user could "
                    "switch a link, or the directories above it), or let resctrlfsd create it");
    }
    if (e == ENOTDIR)
      return Error::make(ENOTDIR, std::string(what) + " " + path + ": not a directory");
    return Error::make(e, std::string(what) + " " + path + ": " + std::strerror(e));
  }
  PrivateDir dir(fd, path);
  // mkdir's mode went through the umask, which may have taken bits away.
  if (created && ::fchmod(fd, 0700) != 0) {
    const int e = errno;
    return Error::make(e, std::string(what) + " " + path + ": chmod 0700: " + std::strerror(e));
  }
  // Checked on the descriptor: what is checked is what the daemon uses.
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    const int e = errno;
    return Error::make(e, std::string(what) + " " + path + ": " + std::strerror(e));
  }
  if (st.st_uid != euid) {
    return refuse(
        what, path,
        "owned by " + owner_name(st.st_uid) + ", not by " + owner_name(euid) + ": " + remedy(euid));
  }
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof(mode), "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return refuse(what, path,
                  std::string("mode ") + mode + " lets " +
                      ((st.st_mode & S_IWOTH) != 0 ? "others" : "its group") +
                      " write to it: " + remedy(euid));
  }
  return dir;
}

PrivateDir& PrivateDir::operator=(PrivateDir&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = o.fd_;
    path_ = std::move(o.path_);
    o.fd_ = -1;
  }
  return *this;
}

PrivateDir::~PrivateDir() {
  if (fd_ >= 0) ::close(fd_);
}

std::string PrivateDir::file(std::string_view name) const {
  std::string out = path_;
  if (out != "/") out += '/';
  out += name;
  return out;
}

int PrivateDir::release() {
  const int fd = fd_;
  fd_ = -1;
  return fd;
}

}  // namespace resctrlfs::daemon
