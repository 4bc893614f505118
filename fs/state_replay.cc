// Implements StateReplay (fs/state_replay.h): a journal snapshot with its
// log records applied, in document form, for the daemon's restore.
#include "fs/state_replay.h"

#include <algorithm>
#include <cerrno>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "base/json_input.h"

namespace resctrlfs::fs {

struct StateReplay::Impl {
  nlohmann::json doc;
  // The threads as a map while deltas apply: a delta touches a few of
  // possibly 100k.
  std::map<pid_t, std::pair<uint32_t, uint32_t>> threads;
  bool started = false;
};

StateReplay::StateReplay() : impl_(std::make_unique<Impl>()) {}
StateReplay::~StateReplay() = default;

Result<void> StateReplay::start(std::string_view snapshot) {
  // Outside input: typed access only (base/json_input.h); this try is the
  // last guard of that rule.
  try {
    return start_checked(snapshot);
  } catch (const std::exception& e) {
    return Error::log_only(EINVAL, std::string("snapshot: ") + e.what());
  }
}

namespace {

using nlohmann::json;

// A thread entry [tid, closid, rmid] (or [tid] in a delta when `gone_ok`).
struct ThreadEntry {
  pid_t tid = 0;
  std::optional<std::pair<uint32_t, uint32_t>> tags;
};
Result<ThreadEntry> thread_entry(const JsonIn& e, bool gone_ok) {
  RESCTRLFS_ASSIGN_OR_RETURN(std::vector<JsonIn> v, e.elements(3));
  if (v.size() != 3 && !(gone_ok && v.size() == 1))
    return e.error(gone_ok ? "must be [tid] or [tid, closid, rmid]"
                           : "must be [tid, closid, rmid]");
  ThreadEntry t;
  RESCTRLFS_ASSIGN_OR_RETURN(t.tid, v[0].as_int<pid_t>(1));
  if (v.size() == 3) {
    RESCTRLFS_ASSIGN_OR_RETURN(const uint32_t closid, v[1].as_int<uint32_t>());
    RESCTRLFS_ASSIGN_OR_RETURN(const uint32_t rmid, v[2].as_int<uint32_t>());
    t.tags = std::make_pair(closid, rmid);
  }
  return t;
}

// The "name" of a group object, when it is one with a string name.
const std::string* name_of(const json& o) {
  if (!o.is_object()) return nullptr;
  auto it = o.find("name");
  return it == o.end() ? nullptr : it->get_ptr<const std::string*>();
}

}  // namespace

Result<void> StateReplay::start_checked(std::string_view snapshot) {
  Result<json> parsed = parse_json(snapshot);
  if (!parsed.ok()) return Error::log_only(EINVAL, "snapshot: not JSON: " + parsed.error().message);
  json& j = *parsed;
  if (!j.is_object()) return Error::log_only(EINVAL, "snapshot: not a JSON object");
  auto g = j.find("groups");
  if (g != j.end() && !g->is_array()) return Error::log_only(EINVAL, "snapshot: groups not a list");
  if (g == j.end()) j["groups"] = json::array();
  impl_->threads.clear();
  if (auto t = j.find("threads"); t != j.end()) {
    Result<std::vector<JsonIn>> list = JsonIn(*t, "$.threads").elements();
    if (!list.ok()) return Error::log_only(EINVAL, "snapshot: " + list.error().message);
    for (const JsonIn& e : *list) {
      Result<ThreadEntry> te = thread_entry(e, /*gone_ok=*/false);
      if (!te.ok())
        return Error::log_only(EINVAL, "snapshot: bad thread entry: " + te.error().message);
      impl_->threads[te->tid] = *te->tags;
    }
    j.erase("threads");
  }
  impl_->doc = std::move(j);
  impl_->started = true;
  return Ok();
}

namespace {

// The CTRL_MON group object named `name` in the document's list, or null.
json* find_named(json& list, const std::string& name) {
  for (json& o : list) {
    if (const std::string* n = name_of(o); n != nullptr && *n == name) return &o;
  }
  return nullptr;
}

bool is_key(const json& k) {
  return k.is_array() && k.size() == 2 && k[0].is_string() && k[1].is_string();
}

}  // namespace

Result<void> StateReplay::apply(std::string_view delta) {
  // The log is outside input: a value of an unexpected type fails the
  // delta, never the daemon.
  try {
    return apply_checked(delta);
  } catch (const std::exception& e) {
    return Error::log_only(EINVAL, std::string("delta: ") + e.what());
  }
}

namespace {

Error delta_bad(const std::string& why) { return Error::log_only(EINVAL, "delta: " + why); }

// The delta's "del": group keys whose entries leave the document.
Result<void> apply_del(const json& del, json& groups) {
  if (!del.is_array()) return delta_bad("del not a list");
  for (const json& k : del) {
    if (!is_key(k)) return delta_bad("bad group key");
    const std::string ctrl = k[0].get<std::string>(), mon = k[1].get<std::string>();
    if (mon.empty()) {
      for (auto it = groups.begin(); it != groups.end(); ++it) {
        if (const std::string* n = name_of(*it); n != nullptr && *n == ctrl) {
          groups.erase(it);
          break;
        }
      }
      continue;
    }
    json* parent = find_named(groups, ctrl);
    if (parent == nullptr || !parent->contains("mon_groups")) continue;
    json& mons = (*parent)["mon_groups"];
    if (!mons.is_array()) return delta_bad("mon_groups not a list");
    for (auto it = mons.begin(); it != mons.end(); ++it) {
      if (const std::string* n = name_of(*it); n != nullptr && *n == mon) {
        mons.erase(it);
        break;
      }
    }
  }
  return Ok();
}

// The delta's "set": group entries that replace (or join) the document's.
Result<void> apply_set(const json& set, json& groups) {
  if (!set.is_array()) return delta_bad("set not a list");
  for (const json& e : set) {
    if (!e.is_object() || !e.contains("ctrl") || !e["ctrl"].is_string() || !e.contains("mon") ||
        !e["mon"].is_string() || !e.contains("group") || !e["group"].is_object())
      return delta_bad("bad group entry");
    const std::string ctrl = e["ctrl"].get<std::string>(), mon = e["mon"].get<std::string>();
    json g = e["group"];
    if (const std::string* n = name_of(g); n == nullptr || *n != (mon.empty() ? ctrl : mon))
      return delta_bad("group entry names another group");
    json* parent = find_named(groups, ctrl);
    if (mon.empty()) {
      json mons = json::array();
      if (parent != nullptr && parent->contains("mon_groups")) mons = (*parent)["mon_groups"];
      g["mon_groups"] = std::move(mons);
      if (parent != nullptr) {
        *parent = std::move(g);
      } else {
        groups.push_back(std::move(g));
      }
      continue;
    }
    if (parent == nullptr) return delta_bad("MON group " + mon + " without its group " + ctrl);
    json& mons = (*parent)["mon_groups"];
    if (mons.is_null()) mons = json::array();
    if (!mons.is_array()) return delta_bad("mon_groups not a list");
    json* old = find_named(mons, mon);
    if (old != nullptr) {
      *old = std::move(g);
    } else {
      mons.push_back(std::move(g));
    }
  }
  return Ok();
}

}  // namespace

Result<void> StateReplay::apply_checked(std::string_view delta) {
  if (!impl_->started) return delta_bad("no snapshot");
  Result<json> parsed = parse_json(delta);
  if (!parsed.ok()) return delta_bad("not JSON: " + parsed.error().message);
  const json& d = *parsed;
  if (!d.is_object()) return delta_bad("not a JSON object");
  for (auto& [key, v] : d.items()) {
    // A key this version does not know would be silently lost: refuse.
    // "req": the daemon journal's command id (daemon/journal.h), not ours.
    if (key != "version" && key != "del" && key != "set" && key != "threads" &&
        key != "next_node_base" && key != "req")
      return delta_bad("unknown key " + key);
  }
  if (Result<int> v = JsonIn(d).int_or<int>("version", 0); !v.ok() || *v != 1)
    return delta_bad("unknown version");
  json& groups = impl_->doc["groups"];
  if (auto del = d.find("del"); del != d.end()) RESCTRLFS_RETURN_IF_ERROR(apply_del(*del, groups));
  if (auto set = d.find("set"); set != d.end()) RESCTRLFS_RETURN_IF_ERROR(apply_set(*set, groups));
  if (auto nb = d.find("next_node_base"); nb != d.end()) {
    Result<uint32_t> v = JsonIn(*nb, "$.next_node_base").as_int<uint32_t>();
    if (!v.ok()) return delta_bad(v.error().message);
    impl_->doc["next_node_base"] = *v;
  }
  if (auto th = d.find("threads"); th != d.end()) {
    Result<std::vector<JsonIn>> list = JsonIn(*th, "$.threads").elements();
    if (!list.ok()) return delta_bad(list.error().message);
    for (const JsonIn& e : *list) {
      Result<ThreadEntry> te = thread_entry(e, /*gone_ok=*/true);
      if (!te.ok()) return delta_bad("bad thread entry: " + te.error().message);
      if (te->tags) {
        impl_->threads[te->tid] = *te->tags;
      } else {
        impl_->threads.erase(te->tid);
      }
    }
  }
  return Ok();
}

std::string StateReplay::finish() {
  json j = impl_->doc;
  json threads = json::array();
  for (auto& [tid, tags] : impl_->threads) threads.push_back({tid, tags.first, tags.second});
  j["threads"] = std::move(threads);
  return j.dump();
}

}  // namespace resctrlfs::fs
