// libFuzzer target: the state journal's decoders. A hostile or damaged
// state.json must decode to an error or to a record that encodes back to
// the same body; the body parser must never throw. A damaged state.log
// must decode to an error or to records that encode back to the same
// bytes, and replaying its records as deltas must never throw.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "daemon/journal.h"
#include "fs/state_replay.h"

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
  auto log = decode_log(in);
  if (log.ok()) {
    std::string again;
    for (const JournalRecord& r : log->records) again += encode_log_record(r.generation, r.body);
    if (again != in.substr(0, log->valid_bytes)) std::abort();
    resctrlfs::fs::StateReplay replay;
    if (!replay.start(R"({"groups":[{"name":"","mon_groups":[]}],"threads":[]})").ok())
      std::abort();
    for (const JournalRecord& r : log->records) (void)replay.apply(r.body);
    (void)replay.finish();
  }
  resctrlfs::fs::StateReplay direct;
  if (direct.start(in).ok()) (void)direct.finish();
  return 0;
}
