// The two locks of fs/ (fs/impl.h, "Locking"): a command waiting on the
// hardware inside a BlockingSection (as a broker round trip does) leaves
// lookups, listings and reads of files that need no register answered,
// showing the configuration before the command, and a node a forget would
// free meanwhile is freed when the command ends.
#include <catch2/catch.hpp>
#include <chrono>
#include <future>
#include <string>
#include <thread>

#include "base/blocking.h"
#include "tests/fs/fake_arch.h"
#include "tests/fs/harness.h"

namespace resctrlfs::fs::testing {
namespace {

hw::PlatformInfo cat_platform() {
  hw::PlatformInfo p = FakeArch::base_platform(4);
  FakeArch::add_l3_cat(p, 8, 4);
  return p;
}

// Holds the next update_ctrls() in a BlockingSection until release().
class SlowMachine {
 public:
  explicit SlowMachine(FakeArch& arch) : arch_(arch) {
    arch_.on_update = [this] {
      arch_.on_update = nullptr;  // only the first update waits
      BlockingSection waiting;
      entered_.set_value();
      released_.get_future().wait();
    };
  }
  ~SlowMachine() { release(); }
  void wait_entered() { entered_.get_future().wait(); }
  void release() {
    if (!done_) released_.set_value();
    done_ = true;
  }

 private:
  FakeArch& arch_;
  std::promise<void> entered_;
  std::promise<void> released_;
  bool done_ = false;
};

// Runs `f` on another thread; whether it finished within a minute (a bound
// against a hang, not a timing check: it returns at once when it works).
template <typename F>
bool answers(F f) {
  std::future<void> r = std::async(std::launch::async, f);
  return r.wait_for(std::chrono::seconds(60)) == std::future_status::ready;
}

TEST_CASE("a command waiting on the hardware leaves reads answered", "[locking]") {
  FakeFixture k(cat_platform());
  Shell& sh = *k.sh;
  REQUIRE(sh.mkdir("/g") == 0);
  const std::string before = sh.cat("/g/schemata");
  REQUIRE(before == "L3:0=ff;1=ff\n");

  SlowMachine slow(k.arch);
  int rc = -1;
  std::thread writer([&] { rc = sh.echo("/g/schemata", "L3:0=1"); });
  slow.wait_entered();
  std::string mask, schemata, root;
  std::set<std::string> names;
  const bool answered = answers([&] {
    Shell reader(*k.fs);
    mask = reader.cat("/info/L3/cbm_mask");
    schemata = reader.cat("/g/schemata");
    root = reader.cat("/schemata");
    names = reader.ls("/");
  });
  slow.release();
  writer.join();
  REQUIRE(answered);
  CHECK(mask == "ff\n");
  CHECK(schemata == before);  // the old configuration until the command is done
  CHECK(root == "L3:0=ff;1=ff\n");
  CHECK(names.count("g") == 1);
  CHECK(names.count("info") == 1);
  CHECK(rc == 0);
  CHECK(sh.cat("/g/schemata") == "L3:0=1;1=ff\n");
  CHECK(sh.lcs() == "ok\n");
}

TEST_CASE("a forget during a command frees the node when the command ends", "[locking]") {
  FakeFixture k(cat_platform());
  Shell& sh = *k.sh;
  REQUIRE(sh.mkdir("/g") == 0);
  REQUIRE(sh.mkdir("/h") == 0);
  Result<Attr> h = k.fs->lookup(kRootIno, "h");
  REQUIRE(h.ok());
  Result<Attr> file = k.fs->lookup(h->ino, "schemata");
  REQUIRE(file.ok());
  REQUIRE(sh.rmdir("/h") == 0);
  REQUIRE(k.fs->getattr(file->ino).ok());  // removed, still referenced

  SlowMachine slow(k.arch);
  int rc = -1;
  std::thread writer([&] { rc = sh.echo("/g/schemata", "L3:0=1"); });
  slow.wait_entered();
  bool kept = false;
  const bool answered = answers([&] {
    k.fs->forget(file->ino, 1);
    kept = k.fs->getattr(file->ino).ok();
  });
  slow.release();
  writer.join();
  REQUIRE(answered);
  CHECK(kept);  // the command may still point at it
  CHECK(rc == 0);
  CHECK(k.fs->getattr(file->ino).error().code == ENOENT);
}

}  // namespace
}  // namespace resctrlfs::fs::testing
