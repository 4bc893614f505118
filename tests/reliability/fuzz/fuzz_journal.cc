// libFuzzer target: the state journal's decoder. A hostile or damaged
// state.json must decode to an error or to a record that encodes back to
// the same body; the body parser must never throw.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "daemon/journal.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace resctrlfs::daemon;
  std::string_view in(reinterpret_cast<const char*>(data), size);
  auto rec = decode_journal_record(in);
  if (rec.ok()) {
    if (rec->generation == 0) std::abort();
    auto again = decode_journal_record(encode_journal_record(*rec));
    if (!again.ok() || again->body != rec->body || again->generation != rec->generation)
      std::abort();
    (void)parse_journal_body(rec->body);
  }
  (void)parse_journal_body(in);
  return 0;
}
