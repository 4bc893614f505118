// libFuzzer target: the ACPI IRDT parser (hw/x86/irdt.h). Any bytes must
// parse to a table or to an EINVAL error with a message, never crash or read
// out of bounds (ASan). The first byte picks the clear-REGW register width;
// the rest is the blob. A table that parses must be self-consistent: its
// channels lie in the RCSes it lists, their registers in the listed pages,
// and building the parsed description again parses to the same channels.
#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "hw/x86/irdt.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace resctrlfs::hw::x86;
  if (size == 0) return 0;
  const IrdtParseOptions opt{(data[0] & 1) ? 4u : 8u};
  std::span<const uint8_t> blob(data + 1, size - 1);
  auto t = parse_irdt(blob, opt);
  if (!t.ok()) {
    if (t.error().code != EINVAL || t.error().message.empty()) std::abort();
    return 0;
  }
  auto in_pages = [&](uint64_t addr, unsigned w) {
    for (uint64_t a : {addr, addr + w - 1})
      if (!std::binary_search(t->register_pages.begin(), t->register_pages.end(),
                              a & ~(IRDT_PAGE_SIZE - 1)))
        return false;
    return true;
  };
  for (const IoChannel& ch : t->channels) {
    if (ch.rmud >= t->desc.rmuds.size() || ch.devices.empty()) std::abort();
    if (ch.reg_bytes != 2 && ch.reg_bytes != opt.wide_reg_bytes) std::abort();
    if (!in_pages(ch.clos_addr, ch.reg_bytes) || !in_pages(ch.rmid_addr, ch.reg_bytes))
      std::abort();
  }
  auto again = parse_irdt(build_irdt(t->desc), opt);
  if (!again.ok() || again->channels != t->channels) std::abort();
  return 0;
}
