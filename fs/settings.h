// Defines the settings table: the settings the kernel keeps from one mount
// to the next until reboot (max_threshold_occupancy, the counter assignment
// mode, the event filters, ...), one row each with its key in the documents
// and how to get, check and apply its value. The journal's state document
// (state.cc writes it, state_restore.cc reads it), the boot state
// (boot_state.cc) and status (state.cc) all read the table: a new
// persistent setting is its row in settings.cc. Internal to fs/.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <span>
#include <utility>
#include <vector>

#include "base/json_input.h"
#include "base/result.h"
#include "fs/parts.h"

namespace resctrlfs::fs::internal {

// The documents a setting is in (a mask of them).
enum SettingDoc : uint8_t {
  kInJournal = 1,    // the journal's state document, under "settings"
  kInBootState = 2,  // the boot-state document, at its top level
  kInStatus = 4,     // status_json(), at its top level
};

// One setting. A value travels as JSON: get() gives it as the documents
// hold it, check() turns a document's value into one apply() takes (or
// EINVAL with the value's path and what is wrong), apply() puts it in place.
struct Setting {
  const char* key;
  uint8_t docs;
  nlohmann::json (*get)(const Model& m, Parts& p);
  Result<nlohmann::json> (*check)(const Model& m, Parts& p, const JsonIn& v);
  Result<void> (*apply)(Model& m, Parts& p, const nlohmann::json& v);
  // Whether get() has a value to write (null: always).
  bool (*present)(const Model& m) = nullptr;
};

// Every setting, in the order they are applied: a mode switch resets the
// settings after it.
std::span<const Setting> settings_table();

// Adds the settings of `doc` to the object `out`, each under its key.
void get_settings(const Model& m, Parts& p, SettingDoc doc, nlohmann::json& out);

// The settings of `doc` that the object `in` has, checked, in the table's
// order; nothing applied. The first fault is the result.
using CheckedSettings = std::vector<std::pair<const Setting*, nlohmann::json>>;
Result<CheckedSettings> check_settings(const Model& m, Parts& p, SettingDoc doc, const JsonIn& in);

// Applies checked settings in order; stops at the first failure.
Result<void> apply_settings(Model& m, Parts& p, const CheckedSettings& checked);

}  // namespace resctrlfs::fs::internal
