// libFuzzer target: the LWP codecs (hw/x86/lwp_format.h). Any bytes must
// decode to records or an error, never crash; whatever decodes must encode
// back to the same bytes, and print as one JSON object. The first byte picks
// an LWPCB shape (slot count, proposal or shipped slot offset) for the LWPCB
// decoder, which must round-trip the same way, and a shape for the
// shipped-layout LWPCB decoder, which must give back every byte.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "hw/x86/lwp_format.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace resctrlfs::lwp;
  auto recs = decode_records(data, size);
  if (recs.ok()) {
    std::string back = encode_records(*recs);
    if (back.size() != size || std::memcmp(back.data(), data, size) != 0) std::abort();
    for (const auto& r : *recs) {
      std::string j = record_json(r);
      if (j.empty() || j.front() != '{' || j.back() != '}') std::abort();
    }
  }
  if (size >= 1) {
    const size_t n_events = data[0] & 7;
    const size_t offset = (data[0] & 8) ? 0x80 : kLwpcbHeaderSize;
    auto cb = decode_lwpcb(data + 1, size - 1, n_events, offset);
    if (cb.ok()) {
      auto again = encode_lwpcb(*cb, offset);
      if (!again.ok()) std::abort();
      // The decoded fields re-encode to the bytes they came from (the gap
      // between the header and a shipped-offset slot array is not kept).
      if (std::memcmp(again->data(), data + 1, kLwpcbHeaderSize) != 0) std::abort();
      if (std::memcmp(again->data() + offset, data + 1 + offset, 8 * n_events) != 0) std::abort();
    }
  }
  if (size >= 1) {
    // The shipped layout: slot count from the low bits, offset 72 or 128.
    const size_t n_events = data[0] & 3;
    const size_t offset = (data[0] & 4) ? kShippedEventOffset : kShippedHeaderSize;
    auto cb = decode_shipped_lwpcb(data + 1, size - 1, n_events, offset);
    if (cb.ok()) {
      auto again = encode_shipped_lwpcb(*cb, offset);
      if (!again.ok() || again->size() != offset + 8 * n_events) std::abort();
      // Reserved bytes decode only when zero, so the bytes come back whole.
      if (std::memcmp(again->data(), data + 1, again->size()) != 0) std::abort();
    }
  }
  return 0;
}
