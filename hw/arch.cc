// Implements the /proc/cpuinfo flags a platform implies (hw/backend.h).
#include <algorithm>
#include <string>
#include <vector>

#include "hw/arch.h"
#include "hw/backend.h"

namespace resctrlfs::hw {

std::vector<std::string> cpuinfo_rdt_flags(const PlatformInfo& info) {
  if (info.cpuinfo_flags) return *info.cpuinfo_flags;
  // Ordered by the kernel's feature numbers: word 7 (cat_l3 .. mba), word 9
  // (cqm, rdt_a), word 11 (cqm_llc ..). SMBA/BMEC/ABMC are hidden flags.
  std::vector<std::string> out;
  const Resource& l3 = info.res(ResourceId::L3);
  const Resource& l2 = info.res(ResourceId::L2);
  const bool any_alloc = l3.alloc_capable || l2.alloc_capable ||
                         info.res(ResourceId::MB).alloc_capable ||
                         info.res(ResourceId::SMBA).alloc_capable;
  auto has = [&](EventId e) {
    return std::find(info.mon.events.begin(), info.mon.events.end(), e) != info.mon.events.end();
  };
  if (l3.alloc_capable) out.push_back("cat_l3");
  if (l2.alloc_capable) out.push_back("cat_l2");
  if (l3.alloc_capable && l3.cache.cdp_capable) out.push_back("cdp_l3");
  if (l2.alloc_capable && l2.cache.cdp_capable) out.push_back("cdp_l2");
  if (info.res(ResourceId::MB).alloc_capable) out.push_back("mba");
  if (info.mon.capable) out.push_back("cqm");
  if (any_alloc) out.push_back("rdt_a");
  if (info.mon.capable) {
    out.push_back("cqm_llc");
    if (has(EventId::LLC_OCCUPANCY)) out.push_back("cqm_occup_llc");
    if (has(EventId::MBM_TOTAL)) out.push_back("cqm_mbm_total");
    if (has(EventId::MBM_LOCAL)) out.push_back("cqm_mbm_local");
  }
  return out;
}

}  // namespace resctrlfs::hw
