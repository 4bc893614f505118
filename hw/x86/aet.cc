// Implements the AET layouts and AetTelemetry (see aet.h).
#include "hw/x86/aet.h"

#include <algorithm>
#include <set>
#include <string>
#include <string_view>

namespace resctrlfs::hw::x86 {

const std::vector<AetEventGroup>& aet_event_groups() {
  // From Intel's PMT XML files for the RMID-ENERGY and RMID-PERF
  // aggregators of each part: RMIDs, counters per RMID, status words.
  static const std::vector<AetEventGroup> groups = {
      {PmtFeature::kPerRmidEnergy,
       AET_GUID_CWF_ENERGY,
       576,
       3,
       {{EventId::CORE_ENERGY, 0, 18}, {EventId::ACTIVITY, 1, 18}}},
      {PmtFeature::kPerRmidEnergy,
       AET_GUID_DMR_ENERGY,
       256,
       3,
       {{EventId::CORE_ENERGY, 0, 18}, {EventId::ACTIVITY, 1, 18}}},
      {PmtFeature::kPerRmidPerf,
       AET_GUID_CWF_PERF,
       576,
       3,
       {{EventId::STALLS_LLC_HIT, 0, 0},
        {EventId::C1_RES, 1, 0},
        {EventId::UNHALTED_CORE_CYCLES, 2, 0},
        {EventId::STALLS_LLC_MISS, 3, 0},
        {EventId::AUTO_C6_RES, 4, 0},
        {EventId::UNHALTED_REF_CYCLES, 5, 0},
        {EventId::UOPS_RETIRED, 6, 0}}},
      {PmtFeature::kPerRmidPerf,
       AET_GUID_DMR_PERF,
       256,
       3,
       {{EventId::UNHALTED_REF_CYCLES, 0, 0},
        {EventId::UNHALTED_CORE_CYCLES, 1, 0},
        {EventId::INST_RETIRED, 2, 0},
        {EventId::PCNT, 3, 0}}},
  };
  return groups;
}

const AetEventGroup* aet_event_group(uint32_t guid) {
  for (const AetEventGroup& g : aet_event_groups())
    if (g.guid == guid) return &g;
  return nullptr;
}

namespace {

const char* feature_name(PmtFeature f) {
  return f == PmtFeature::kPerRmidEnergy ? "energy" : "perf";
}

// Whether an rdt= token ("perf" or "perf:<hex guid>") names layout `g`.
bool token_names(std::string_view tok, const AetEventGroup& g) {
  const size_t colon = tok.find(':');
  if (tok.substr(0, colon) != feature_name(g.feature)) return false;
  if (colon == std::string_view::npos) return true;
  const std::optional<uint32_t> guid = parse_aet_guid(tok.substr(colon + 1));
  return guid && (*guid == 0 || *guid == g.guid);
}

bool forced(const std::vector<std::string>& tokens, const AetEventGroup& g) {
  return std::any_of(tokens.begin(), tokens.end(),
                     [&](const std::string& t) { return token_names(t, g); });
}

}  // namespace

std::optional<uint32_t> parse_aet_guid(std::string_view hex) {
  if (hex.size() > 2 && hex[0] == '0' && (hex[1] == 'x' || hex[1] == 'X')) hex.remove_prefix(2);
  if (hex.empty() || hex.size() > 8 ||
      hex.find_first_not_of("0123456789abcdefABCDEF") != std::string_view::npos)
    return std::nullopt;
  return static_cast<uint32_t>(std::stoul(std::string(hex), nullptr, 16));
}

AetTelemetry::AetTelemetry(std::shared_ptr<PmtTelemetryDevice> dev, PlatformInfo& info,
                           const RdtOptions& rdt)
    : dev_(std::move(dev)) {
  MonCaps& caps = info.res(ResourceId::PERF_PKG).mon;
  caps = MonCaps{};
  caps.scope = Scope::PACKAGE;
  if (!dev_) return;
  regions_ = dev_->pmt_regions();

  std::set<int> packages;
  for (unsigned c : info.online.cpus()) {
    if (c < info.cpu_ids(Scope::PACKAGE).size() && info.cpu_ids(Scope::PACKAGE)[c] >= 0)
      packages.insert(info.cpu_ids(Scope::PACKAGE)[c]);
  }

  for (const AetEventGroup& g : aet_event_groups()) {
    if (forced(rdt.force_off, g)) continue;
    Enabled e{&g, {}};
    bool sufficient = true;
    unsigned rmids = g.num_rmids;
    for (size_t i = 0; i < regions_.size(); ++i) {
      const PmtRegion& r = regions_[i];
      if (r.feature != g.feature || r.guid != g.guid) continue;
      // Aggregators of an unknown package or of the wrong size are never read.
      if (packages.count(r.package_id) == 0 || r.size != g.mmio_size()) continue;
      e.regions.push_back(i);
      if (r.num_rmids < g.num_rmids) sufficient = false;
      rmids = std::min(rmids, r.num_rmids);
    }
    if (e.regions.empty() || (!sufficient && !forced(rdt.force_on, g))) continue;
    const int index = static_cast<int>(enabled_.size());
    bool any = false;
    for (const AetEventDesc& d : g.events) {
      Owner& o = owner_[static_cast<int>(d.id)];
      if (o.enabled >= 0) continue;  // an earlier layout already provides it
      if (d.binary_bits > kMaxBinaryBits || (d.binary_bits != 0 && !event_is_floating_point(d.id)))
        continue;
      o.enabled = index;
      o.desc = &d;
      any = true;
    }
    if (!any) continue;
    enabled_.push_back(std::move(e));
    caps.num_rmids = caps.num_rmids == 0 ? rmids : std::min(caps.num_rmids, rmids);
  }
  if (enabled_.empty()) return;

  caps.capable = true;
  for (int id = 0; id <= static_cast<int>(EventId::PCNT); ++id) {
    if (owner_[id].enabled >= 0)
      caps.events.push_back(MonEvent{static_cast<EventId>(id), owner_[id].desc->binary_bits});
  }
  for (int pkg : packages) {
    MonDomain d;
    d.id = pkg;
    d.cpus = CpuMask(info.nr_cpus);
    for (unsigned c : info.online.cpus()) {
      if (c < info.cpu_ids(Scope::PACKAGE).size() && info.cpu_ids(Scope::PACKAGE)[c] == pkg)
        d.cpus.set(c);
    }
    caps.mon_domains.push_back(std::move(d));
  }
}

CounterValue AetTelemetry::read(int package_id, uint32_t rmid, EventId ev) {
  const int id = static_cast<int>(ev);
  if (id < 0 || id > static_cast<int>(EventId::PCNT) || owner_[id].enabled < 0)
    return {ReadError::kError, 0};
  const Enabled& e = enabled_[owner_[id].enabled];
  const uint64_t off = e.group->counter_offset(rmid, owner_[id].desc->idx);
  if (off + sizeof(uint64_t) > e.group->mmio_size()) return {ReadError::kError, 0};
  bool valid = false;
  uint64_t total = 0;
  for (size_t i : e.regions) {
    if (regions_[i].package_id != package_id) continue;
    Result<uint64_t> v = dev_->pmt_read64(i, off);
    if (!v.ok() || (*v & PMT_DATA_VALID) == 0) continue;
    total += *v & PMT_DATA_MASK;
    valid = true;
  }
  if (!valid) return {ReadError::kUnavailable, 0};
  return {ReadError::kNone, total};
}

}  // namespace resctrlfs::hw::x86
