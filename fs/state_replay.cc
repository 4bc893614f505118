// Implements StateReplay (fs/state_replay.h): a journal snapshot with its
// log records applied, in document form, for the daemon's restore.
#include "fs/state_replay.h"

#include <cerrno>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

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
  try {
    return start_checked(snapshot);
  } catch (const nlohmann::json::exception& e) {
    return Error::make(EINVAL, std::string("snapshot: ") + e.what());
  }
}

Result<void> StateReplay::start_checked(std::string_view snapshot) {
  using nlohmann::json;
  json j = json::parse(snapshot, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return Error::make(EINVAL, "snapshot: not a JSON object");
  auto g = j.find("groups");
  if (g != j.end() && !g->is_array()) return Error::make(EINVAL, "snapshot: groups not a list");
  if (g == j.end()) j["groups"] = json::array();
  impl_->threads.clear();
  if (auto t = j.find("threads"); t != j.end()) {
    if (!t->is_array()) return Error::make(EINVAL, "snapshot: threads not a list");
    for (const json& e : *t) {
      if (!e.is_array() || e.size() != 3 || !e[0].is_number_integer() ||
          !e[1].is_number_unsigned() || !e[2].is_number_unsigned())
        return Error::make(EINVAL, "snapshot: bad thread entry");
      impl_->threads[e[0].get<pid_t>()] = {e[1].get<uint32_t>(), e[2].get<uint32_t>()};
    }
    j.erase("threads");
  }
  impl_->doc = std::move(j);
  impl_->started = true;
  return Ok();
}

namespace {

using nlohmann::json;

// The CTRL_MON group object named `name` in the document's list, or null.
json* find_named(json& list, const std::string& name) {
  for (json& o : list) {
    if (o.is_object() && o.value("name", std::string()) == name) return &o;
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
  } catch (const nlohmann::json::exception& e) {
    return Error::make(EINVAL, std::string("delta: ") + e.what());
  }
}

Result<void> StateReplay::apply_checked(std::string_view delta) {
  auto bad = [](const std::string& why) { return Error::make(EINVAL, "delta: " + why); };
  if (!impl_->started) return bad("no snapshot");
  json d = json::parse(delta, nullptr, /*allow_exceptions=*/false);
  if (d.is_discarded() || !d.is_object()) return bad("not a JSON object");
  for (auto& [key, v] : d.items()) {
    // A key this version does not know would be silently lost: refuse.
    if (key != "version" && key != "del" && key != "set" && key != "threads")
      return bad("unknown key " + key);
  }
  if (d.value("version", 0) != 1) return bad("unknown version");
  json& groups = impl_->doc["groups"];
  if (auto del = d.find("del"); del != d.end()) {
    if (!del->is_array()) return bad("del not a list");
    for (const json& k : *del) {
      if (!is_key(k)) return bad("bad group key");
      const std::string ctrl = k[0].get<std::string>(), mon = k[1].get<std::string>();
      if (mon.empty()) {
        for (auto it = groups.begin(); it != groups.end(); ++it) {
          if (it->is_object() && it->value("name", std::string()) == ctrl) {
            groups.erase(it);
            break;
          }
        }
        continue;
      }
      json* parent = find_named(groups, ctrl);
      if (parent == nullptr || !parent->contains("mon_groups")) continue;
      json& mons = (*parent)["mon_groups"];
      if (!mons.is_array()) return bad("mon_groups not a list");
      for (auto it = mons.begin(); it != mons.end(); ++it) {
        if (it->is_object() && it->value("name", std::string()) == mon) {
          mons.erase(it);
          break;
        }
      }
    }
  }
  if (auto set = d.find("set"); set != d.end()) {
    if (!set->is_array()) return bad("set not a list");
    for (const json& e : *set) {
      if (!e.is_object() || !e.contains("ctrl") || !e["ctrl"].is_string() || !e.contains("mon") ||
          !e["mon"].is_string() || !e.contains("group") || !e["group"].is_object())
        return bad("bad group entry");
      const std::string ctrl = e["ctrl"].get<std::string>(), mon = e["mon"].get<std::string>();
      json g = e["group"];
      if (g.value("name", std::string("\n")) != (mon.empty() ? ctrl : mon))
        return bad("group entry names another group");
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
      if (parent == nullptr) return bad("MON group " + mon + " without its group " + ctrl);
      json& mons = (*parent)["mon_groups"];
      if (mons.is_null()) mons = json::array();
      if (!mons.is_array()) return bad("mon_groups not a list");
      json* old = find_named(mons, mon);
      if (old != nullptr) {
        *old = std::move(g);
      } else {
        mons.push_back(std::move(g));
      }
    }
  }
  if (auto th = d.find("threads"); th != d.end()) {
    if (!th->is_array()) return bad("threads not a list");
    for (const json& e : *th) {
      if (!e.is_array() || e.empty() || !e[0].is_number_integer()) return bad("bad thread entry");
      const pid_t tid = e[0].get<pid_t>();
      if (e.size() == 1) {
        impl_->threads.erase(tid);
      } else if (e.size() == 3 && e[1].is_number_unsigned() && e[2].is_number_unsigned()) {
        impl_->threads[tid] = {e[1].get<uint32_t>(), e[2].get<uint32_t>()};
      } else {
        return bad("bad thread entry");
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
