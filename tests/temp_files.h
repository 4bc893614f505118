// Temporary directories and whole-file reads and writes for the unit tests,
// so that each test file does not carry its own copy.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <system_error>

namespace resctrlfs::test {

// A directory made by mkdtemp(3) from `name` (e.g. "journal-test") and removed
// with everything in it at the end of the scope. With `prefer_shm`, on tmpfs
// (/dev/shm) when there is one: for tests that fsync thousands of times.
struct TempDir {
  explicit TempDir(const std::string& name, bool prefer_shm = false) {
    if (prefer_shm) path = make("/dev/shm/resctrlfs-" + name + ".XXXXXX");
    if (path.empty()) path = make("/tmp/resctrlfs-" + name + ".XXXXXX");
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string path;

 private:
  static std::string make(std::string tmpl) {
    return ::mkdtemp(tmpl.data()) != nullptr ? tmpl : std::string();
  }
};

inline std::string read_file(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline void write_file(const std::string& p, const std::string& data) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << data;
}

}  // namespace resctrlfs::test
