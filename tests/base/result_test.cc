// Unit tests of base/result.h's two kinds of error text: a user's (what a
// resctrl command leaves in last_cmd_status) and a log's (Error::log_only),
// which no user-visible text may carry on.
#include "base/result.h"

#include <catch2/catch.hpp>

namespace resctrlfs {
namespace {

Result<void> passes_on(Result<void> inner) {
  RESCTRLFS_RETURN_IF_ERROR(inner);
  return Ok();
}

TEST_CASE("Error: a user's text is what last_cmd_status gets", "[result]") {
  const Error e = Error::make(EINVAL, "Overlaps with exclusive group\n");
  CHECK(e.code == EINVAL);
  CHECK(e.for_user);
  CHECK(e.user_text() == "Overlaps with exclusive group\n");
  CHECK(Error::make(ENOENT).user_text().empty());
}

TEST_CASE("Error: log text stays out of what a user reads", "[result]") {
  const Error e = Error::log_only(EINVAL, "state: not JSON");
  CHECK(e.code == EINVAL);
  CHECK_FALSE(e.for_user);
  CHECK(e.message == "state: not JSON");
  CHECK(e.user_text().empty());
}

TEST_CASE("Error: passing an error on keeps its kind", "[result]") {
  Result<void> r = passes_on(Error::log_only(EIO, "delta: bad group key"));
  REQUIRE_FALSE(r.ok());
  CHECK_FALSE(r.error().for_user);
  CHECK(r.error().user_text().empty());
  r = passes_on(Error::make(EBUSY, "Busy\n"));
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().user_text() == "Busy\n");
}

}  // namespace
}  // namespace resctrlfs
