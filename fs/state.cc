// Implements make_filesystem(), status_json() and the journal hooks
// save_state_json()/restore_state_json() of FsImpl.
#include <cerrno>
#include <nlohmann/json.hpp>

#include "fs/cpus.h"
#include "fs/impl.h"

namespace resctrlfs::fs {

namespace internal {

namespace {

const char* mode_str(schemata::GroupMode m) {
  switch (m) {
    case schemata::GroupMode::SHAREABLE:
      return "shareable";
    case schemata::GroupMode::EXCLUSIVE:
      return "exclusive";
    case schemata::GroupMode::PSEUDO_LOCKSETUP:
      return "pseudo-locksetup";
    case schemata::GroupMode::PSEUDO_LOCKED:
      return "pseudo-locked";
  }
  return "shareable";
}

std::string group_path(const Group& g) {
  if (g.type == GroupType::kMon) {
    std::string p = g.parent->name.empty() ? "" : "/" + g.parent->name;
    return p + "/mon_groups/" + g.name;
  }
  return g.name.empty() ? "/" : "/" + g.name;
}

}  // namespace

std::string FsImpl::status_json() {
  std::lock_guard<std::mutex> lock(mu_);
  nlohmann::json j;
  j["platform"] = {{"vendor", info_.vendor},
                   {"family", info_.family},
                   {"model", info_.model},
                   {"nr_cpus", info_.nr_cpus}};
  j["mounted"] = mounted_;
  j["options"] = {{"cdp", opts_.cdp},
                  {"cdpl2", opts_.cdpl2},
                  {"mba_MBps", opts_.mba_mbps},
                  {"debug", opts_.debug}};
  nlohmann::json groups = nlohmann::json::array();
  for (auto& g : groups_) {
    groups.push_back({{"path", group_path(*g)},
                      {"type", g->type == GroupType::kCtrlMon ? "ctrl_mon" : "mon"},
                      {"closid", g->closid},
                      {"rmid", g->rmid},
                      {"mode", mode_str(g->mode)},
                      {"cpus_list", format_cpu_list(g->cpus)}});
  }
  j["groups"] = groups;
  j["closids"] = {{"usable", closids_.size()}, {"free", closids_.free_count()}};
  nlohmann::json limbo = nlohmann::json::object();
  for (int d : rmids_.domains()) limbo[std::to_string(d)] = rmids_.busy_in(d);
  j["rmids"] = {{"num_rmids", rmids_.num_rmids()},
                {"free", rmids_.free_list().size()},
                {"limbo", rmids_.limbo_count()},
                {"busy_per_domain", limbo}};
  j["max_threshold_occupancy"] = threshold_;
  j["mbm_assign_mode"] = mbm_event_mode_ ? "mbm_event" : "default";
  j["tagged_threads"] = thread_tags_.size();
  j["nodes"] = nodes_.size();
  return j.dump();
}

std::string FsImpl::save_state_json() {
  std::lock_guard<std::mutex> lock(mu_);
  return "{}";
}

Result<void> FsImpl::restore_state_json(const std::string& json) {
  return Error::make(ENOSYS, "state restore not implemented");
}

}  // namespace internal

std::unique_ptr<Filesystem> make_filesystem(const FilesystemConfig& cfg) {
  if (cfg.arch == nullptr) return nullptr;
  return std::make_unique<internal::FsImpl>(cfg);
}

}  // namespace resctrlfs::fs
