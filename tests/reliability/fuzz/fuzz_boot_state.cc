// libFuzzer target: the boot-state file (daemon/boot_state.h), which any
// process with access to /run may have damaged. The input is read twice:
// as the whole file (parse_boot_state) and as the Filesystem document in it
// (restore_boot_state_json) on a fresh, unmounted filesystem over the
// simulated AMD machine (BMEC and ABMC present, so every key means
// something). Neither may throw or crash; whatever they say, the
// filesystem must mount afterwards and its boot state must serialise to a
// document it takes back.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "daemon/boot_state.h"
#include "fs/filesystem.h"
#include "hw/backend.h"

namespace {

using namespace resctrlfs;

const hw::Backend& backend() {
  static hw::Backend b = [] {
    auto r = hw::make_sim_backend("amd-2s");
    if (!r.ok()) std::abort();
    return std::move(r.value());
  }();
  return b;
}

// Restores `doc` on a fresh filesystem, then checks that it mounts and that
// its boot state reads back.
void restore_and_mount(const std::string& doc) {
  fs::FilesystemConfig cfg;
  cfg.arch = backend().arch.get();
  auto f = fs::make_filesystem(cfg);
  if (!f) std::abort();
  (void)f->restore_boot_state_json(doc);
  if (!f->mount({}).ok()) std::abort();
  f->unmount();
  const std::string saved = f->save_boot_state_json();
  auto again = fs::make_filesystem(cfg);
  if (!again->restore_boot_state_json(saved).ok()) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string in(reinterpret_cast<const char*>(data), size);
  auto doc = daemon::parse_boot_state(in, "amd-2s", "/sys/fs/resctrl");
  if (doc.ok() && doc->has_value()) restore_and_mount(**doc);
  restore_and_mount(in);
  return 0;
}
