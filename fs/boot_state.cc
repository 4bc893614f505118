// Implements save_boot_state_json()/restore_boot_state_json() of FsImpl:
// the state the kernel keeps in memory from one mount to the next until the
// machine reboots (the kernel frees none of it on unmount), so that a
// daemon started on the same mount point after an unmount behaves like a
// remount.
//
// Document (version 1):
//   {"version": 1, "<key>": value, ...   (the settings table's kInBootState
//                                         rows, settings.cc: max_threshold_occupancy,
//                                         max_name_width, mbm_assign_mode, ...)
//    "rmids": {"free": [rmid, ...], "limbo": {"<mon domain>": [rmid, ...]}}}
#include <cerrno>
#include <charconv>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "base/json_input.h"
#include "fs/impl.h"
#include "fs/settings.h"

namespace resctrlfs::fs::internal {

namespace {

using nlohmann::json;

Error bad_boot(const std::string& why) { return Error::log_only(EINVAL, "boot state: " + why); }
Error bad(const std::string& why) { return Error::log_only(EINVAL, why); }

// The RMID free list and limbo marks of the document's "rmids".
Result<void> read_rmid_lists(const JsonIn& rm, std::vector<uint32_t>& free_order,
                             std::map<int, std::set<uint32_t>>& busy) {
  RESCTRLFS_ASSIGN_OR_RETURN(const JsonIn free_list, rm.get("free"));
  RESCTRLFS_ASSIGN_OR_RETURN(const std::vector<JsonIn> frees, free_list.elements());
  for (const JsonIn& f : frees) {
    RESCTRLFS_ASSIGN_OR_RETURN(const uint32_t r, f.as_int<uint32_t>());
    free_order.push_back(r);
  }
  RESCTRLFS_ASSIGN_OR_RETURN(const std::optional<JsonIn> limbo, rm.find("limbo"));
  if (limbo) {
    RESCTRLFS_ASSIGN_OR_RETURN(const auto doms, limbo->members());
    for (const auto& [key, rmids] : doms) {
      int dom = -1;
      const auto [end, ec] = std::from_chars(key.data(), key.data() + key.size(), dom);
      if (key.empty() || ec != std::errc() || end != key.data() + key.size() || dom < 0)
        return bad("bad domain key \"" + key + "\"");
      RESCTRLFS_ASSIGN_OR_RETURN(const std::vector<JsonIn> list, rmids.elements());
      for (const JsonIn& r : list) {
        RESCTRLFS_ASSIGN_OR_RETURN(const uint32_t rmid, r.as_int<uint32_t>());
        busy[dom].insert(rmid);
      }
    }
  }
  return Ok();
}

}  // namespace

std::string FsImpl::save_boot_state_json() {
  std::lock_guard<OwnedMutex> lock(mu_);
  json j;
  j["version"] = 1;
  get_settings(m_, p_, kInBootState, j);
  std::string doc = j.dump();
  if (p_.mon.rmids().initialised()) {
    // Counted groups: every group's RMID but the default group's and
    // those of locksetup/locked groups (which hold none).
    auto counted = [this](const Group& g) {
      return &g != m_.root && g.mode != schemata::GroupMode::PSEUDO_LOCKSETUP &&
             g.mode != schemata::GroupMode::PSEUDO_LOCKED;
    };
    // The pool as an unmount now would leave it: every group's RMID freed
    // in the order unmount frees them.
    std::vector<uint32_t> held;
    if (m_.mounted) {
      for (auto& g : m_.groups)
        if (counted(*g)) held.push_back(p_.mon.rmid_idx(g->closid, g->rmid));
    }
    std::vector<uint32_t> key;
    key.reserve(boot_rmids_key_.size());
    p_.mon.rmids().append_state(key);
    key.push_back(m_.mounted ? 1 : 0);
    key.insert(key.end(), held.begin(), held.end());
    if (key != boot_rmids_key_ || boot_rmids_text_.empty()) {
      const RmidPool::Released after = p_.mon.rmids().after_freeing(held);
      auto write_list = [](const std::vector<uint32_t>& ids, std::string& out) {
        out += '[';
        char buf[16];
        for (size_t i = 0; i < ids.size(); ++i) {
          if (i != 0) out += ',';
          auto r = std::to_chars(buf, buf + sizeof(buf), ids[i]);
          out.append(buf, r.ptr);
        }
        out += ']';
      };
      std::string& text = boot_rmids_text_;
      text.clear();
      text += "{\"free\":";
      write_list(after.free, text);
      text += ",\"limbo\":{";
      bool first = true;
      for (const auto& [d, ids] : after.limbo) {
        if (!first) text += ',';
        first = false;
        text += '"';
        text += std::to_string(d);
        text += "\":";
        write_list(ids, text);
      }
      text += "}}";
      boot_rmids_key_ = std::move(key);
    }
    // `doc` is an object ("version" at least): "rmids" goes in before its
    // closing brace.
    doc.pop_back();
    doc += ",\"rmids\":";
    doc += boot_rmids_text_;
    doc += '}';
  }
  return doc;
}

Result<void> FsImpl::restore_boot_state_json(const std::string& text) {
  CommandLock lock(*this);
  if (m_.mounted) return Error::log_only(EBUSY, "boot state: mounted");
  // The file is outside input: typed access only (base/json_input.h); the
  // try is the last guard of that rule.
  Result<void> r = Ok();
  try {
    r = restore_boot_state_locked(text);
  } catch (const std::exception& e) {
    r = Error::log_only(EINVAL, e.what());
  }
  if (!r.ok()) return bad_boot(r.error().message);
  return r;
}

Result<void> FsImpl::restore_boot_state_locked(const std::string& text) {
  Result<json> parsed = parse_json(text);
  if (!parsed.ok()) return bad("not JSON: " + parsed.error().message);
  const JsonIn j(*parsed);
  if (!j.json().is_object()) return bad("not a JSON object");
  if (Result<int> v = j.int_or<int>("version", 0); !v.ok() || *v != 1)
    return bad("unknown version");

  // Read and check everything first: nothing is applied from a bad document.
  RESCTRLFS_ASSIGN_OR_RETURN(const CheckedSettings settings,
                             check_settings(m_, p_, kInBootState, j));
  std::vector<uint32_t> free_order;
  std::map<int, std::set<uint32_t>> busy;
  RESCTRLFS_ASSIGN_OR_RETURN(const std::optional<JsonIn> rm, j.find("rmids"));
  const bool has_rmids = rm.has_value() && p_.mon.rmids().initialised();
  if (has_rmids) {
    RESCTRLFS_RETURN_IF_ERROR(read_rmid_lists(*rm, free_order, busy));
    RmidPool probe = p_.mon.rmids();
    if (!probe.restore(free_order, busy)) return bad("RMID lists do not fit");
  }

  if (has_rmids) (void)p_.mon.rmids().restore(free_order, busy);
  return apply_settings(m_, p_, settings);
}

}  // namespace resctrlfs::fs::internal
