// Defines the one way resctrlfs reads JSON that comes from outside the
// process: parse_json() and JsonIn.
//
// The rule, for every such reader (the state journal's snapshot and log,
// the boot-state file, platform profiles, control socket lines, JSON given
// on a command line):
//   - the text is parsed with parse_json(), which never throws, refuses
//     what nlohmann's parser refuses (truncation, garbage, a string that is
//     not UTF-8, a number that overflows a double) and refuses nesting
//     deeper than kMaxJsonDepth before the parser sees it: the parser is
//     iterative, but dump(), copies and comparisons of a json recurse, and
//     100000 '[' would overflow the stack there;
//   - values are read through JsonIn, whose accessors check the type and
//     the range and return Result<T> with the value's path in the message
//     ("$.groups[2].closid: must be an integer in 0..4294967295, not a
//     string"). None of them throws.
// nlohmann's value(), get<T>(), at() and operator[] are not used on such a
// document: value() throws when the key holds another type, get<uint32_t>()
// silently wraps a negative or huge number (and a huge double is undefined
// behaviour), at() throws on a missing key and operator[] on a const json
// with a missing key is undefined. Each reader's entry point still catches
// std::exception once, as a last guard turned into its error.
//
// Header-only: every layer that already uses nlohmann json can use it.
#pragma once

#include <cerrno>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "base/result.h"

namespace resctrlfs {

// Deeper than any document resctrlfs writes (the state is ~7 levels).
inline constexpr size_t kMaxJsonDepth = 64;

namespace json_internal {

// The byte offset where `text` first nests deeper than `max_depth` arrays
// and objects, or npos. Brackets inside strings do not count; the text need
// not be valid JSON (the parser judges that afterwards).
inline size_t too_deep_at(std::string_view text, size_t max_depth) {
  size_t depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;  // the escaped byte cannot end the string
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) return i;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return std::string_view::npos;
}

// nlohmann's messages start with "[json.exception.parse_error.101] ".
inline std::string without_exception_id(const char* what) {
  std::string s(what);
  if (!s.empty() && s[0] == '[') {
    const size_t end = s.find("] ");
    if (end != std::string::npos) s.erase(0, end + 2);
  }
  return s;
}

}  // namespace json_internal

// Parses `text` (see the rule above). EINVAL with the parser's reason
// ("parse error at line 1, column 1: ...") or the depth at which it gave up.
inline Result<nlohmann::json> parse_json(std::string_view text, size_t max_depth = kMaxJsonDepth) {
  if (const size_t at = json_internal::too_deep_at(text, max_depth); at != std::string_view::npos) {
    return Error::make(EINVAL, "nested deeper than " + std::to_string(max_depth) +
                                   " levels at byte " + std::to_string(at));
  }
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    return Error::make(EINVAL, json_internal::without_exception_id(e.what()));
  } catch (const std::exception& e) {  // std::bad_alloc on a huge document
    return Error::make(ENOMEM, e.what());
  }
}

// A value of a parsed outside document and its path from the root ("$",
// "$.groups[2].closid"), with checked accessors. Holds a pointer into the
// document, which must outlive it.
class JsonIn {
 public:
  explicit JsonIn(const nlohmann::json& v, std::string path = "$")
      : v_(&v), path_(std::move(path)) {}

  const nlohmann::json& json() const { return *v_; }
  const std::string& path() const { return path_; }

  // EINVAL "<path>: <why>".
  Error error(std::string_view why) const {
    return Error::make(EINVAL, path_ + ": " + std::string(why));
  }

  // This value when it is an object / an array, else an error.
  Result<JsonIn> object() const {
    if (!v_->is_object()) return mismatch("must be an object");
    return *this;
  }
  Result<JsonIn> array() const {
    if (!v_->is_array()) return mismatch("must be an array");
    return *this;
  }

  // The member `key` of this object: an error when this is not an object or
  // has no such member.
  Result<JsonIn> get(std::string_view key) const {
    RESCTRLFS_ASSIGN_OR_RETURN(std::optional<JsonIn> m, find(key));
    if (!m) return error("lacks \"" + std::string(key) + "\"");
    return std::move(*m);
  }
  // The member `key`, or nullopt when there is none; an error when this is
  // not an object.
  Result<std::optional<JsonIn>> find(std::string_view key) const {
    if (!v_->is_object()) return mismatch("must be an object");
    const auto it = v_->find(key);
    if (it == v_->end()) return std::optional<JsonIn>();
    return std::optional<JsonIn>(JsonIn(*it, member_path(key)));
  }
  // Whether this is an object with a member `key`.
  bool has(std::string_view key) const { return v_->is_object() && v_->contains(key); }

  // The elements of this array (at most `max`), each with its path.
  Result<std::vector<JsonIn>> elements(size_t max = std::numeric_limits<size_t>::max()) const {
    if (!v_->is_array()) return mismatch("must be an array");
    if (v_->size() > max)
      return error("has " + std::to_string(v_->size()) + " elements, more than " +
                   std::to_string(max));
    std::vector<JsonIn> out;
    out.reserve(v_->size());
    size_t i = 0;
    for (const nlohmann::json& e : *v_)
      out.emplace_back(e, path_ + "[" + std::to_string(i++) + "]");
    return out;
  }
  // The elements of the array member `key` of this object; none when it
  // has no such member.
  Result<std::vector<JsonIn>> elements_or_none(
      std::string_view key, size_t max = std::numeric_limits<size_t>::max()) const {
    RESCTRLFS_ASSIGN_OR_RETURN(std::optional<JsonIn> m, find(key));
    if (!m) return std::vector<JsonIn>();
    return m->elements(max);
  }
  // Element `i` of this array: an error when this is not an array or is
  // shorter.
  Result<JsonIn> element(size_t i) const {
    if (!v_->is_array()) return mismatch("must be an array");
    if (i >= v_->size()) return error("lacks element " + std::to_string(i));
    return JsonIn((*v_)[i], path_ + "[" + std::to_string(i) + "]");
  }
  // The members of this object, in the document's (sorted) order.
  Result<std::vector<std::pair<std::string, JsonIn>>> members() const {
    if (!v_->is_object()) return mismatch("must be an object");
    std::vector<std::pair<std::string, JsonIn>> out;
    out.reserve(v_->size());
    for (auto it = v_->begin(); it != v_->end(); ++it)
      out.emplace_back(it.key(), JsonIn(it.value(), member_path(it.key())));
    return out;
  }

  // An integer (not a float, not a boolean) in [lo, hi].
  template <typename T>
  Result<T> as_int(T lo = std::numeric_limits<T>::min(),
                   T hi = std::numeric_limits<T>::max()) const {
    static_assert(std::is_integral_v<T> && !std::is_same_v<T, bool>);
    const std::string want =
        "must be an integer in " + std::to_string(lo) + ".." + std::to_string(hi);
    if (const auto* u = v_->get_ptr<const nlohmann::json::number_unsigned_t*>()) {
      if (std::cmp_less(*u, lo) || std::cmp_greater(*u, hi)) return mismatch(want);
      return static_cast<T>(*u);
    }
    if (const auto* s = v_->get_ptr<const nlohmann::json::number_integer_t*>()) {
      if (std::cmp_less(*s, lo) || std::cmp_greater(*s, hi)) return mismatch(want);
      return static_cast<T>(*s);
    }
    return mismatch(want);
  }
  // A finite number (integer or not) in [lo, hi].
  Result<double> as_number(double lo, double hi) const {
    const std::string want =
        "must be a number in " + nlohmann::json(lo).dump() + ".." + nlohmann::json(hi).dump();
    if (!v_->is_number()) return mismatch(want);
    double d = 0;
    if (const auto* u = v_->get_ptr<const nlohmann::json::number_unsigned_t*>()) {
      d = static_cast<double>(*u);
    } else if (const auto* s = v_->get_ptr<const nlohmann::json::number_integer_t*>()) {
      d = static_cast<double>(*s);
    } else {
      d = *v_->get_ptr<const nlohmann::json::number_float_t*>();
    }
    if (!std::isfinite(d) || d < lo || d > hi) return mismatch(want);
    return d;
  }
  Result<bool> as_bool() const {
    if (const auto* b = v_->get_ptr<const nlohmann::json::boolean_t*>()) return *b;
    return mismatch("must be true or false");
  }
  // A string of at most `max_len` bytes (valid UTF-8: the parser checked).
  Result<std::string> as_string(size_t max_len = std::numeric_limits<size_t>::max()) const {
    const auto* s = v_->get_ptr<const nlohmann::json::string_t*>();
    if (s == nullptr) return mismatch("must be a string");
    if (s->size() > max_len) return error("is longer than " + std::to_string(max_len) + " bytes");
    return *s;
  }

  // Required members of this object.
  template <typename T>
  Result<T> int_at(std::string_view key, T lo = std::numeric_limits<T>::min(),
                   T hi = std::numeric_limits<T>::max()) const {
    RESCTRLFS_ASSIGN_OR_RETURN(JsonIn m, get(key));
    return m.as_int<T>(lo, hi);
  }
  Result<std::string> string_at(std::string_view key,
                                size_t max_len = std::numeric_limits<size_t>::max()) const {
    RESCTRLFS_ASSIGN_OR_RETURN(JsonIn m, get(key));
    return m.as_string(max_len);
  }
  Result<bool> bool_at(std::string_view key) const {
    RESCTRLFS_ASSIGN_OR_RETURN(JsonIn m, get(key));
    return m.as_bool();
  }

  // Optional members of this object: `dflt` when absent, an error when
  // present with another type or out of range (or when this is not an
  // object).
  template <typename T>
  Result<T> int_or(std::string_view key, T dflt, T lo = std::numeric_limits<T>::min(),
                   T hi = std::numeric_limits<T>::max()) const {
    RESCTRLFS_ASSIGN_OR_RETURN(std::optional<JsonIn> m, find(key));
    if (!m) return dflt;
    return m->as_int<T>(lo, hi);
  }
  Result<double> number_or(std::string_view key, double dflt, double lo, double hi) const {
    RESCTRLFS_ASSIGN_OR_RETURN(std::optional<JsonIn> m, find(key));
    if (!m) return dflt;
    return m->as_number(lo, hi);
  }
  Result<bool> bool_or(std::string_view key, bool dflt) const {
    RESCTRLFS_ASSIGN_OR_RETURN(std::optional<JsonIn> m, find(key));
    if (!m) return dflt;
    return m->as_bool();
  }
  Result<std::string> string_or(std::string_view key, std::string dflt,
                                size_t max_len = std::numeric_limits<size_t>::max()) const {
    RESCTRLFS_ASSIGN_OR_RETURN(std::optional<JsonIn> m, find(key));
    if (!m) return dflt;
    return m->as_string(max_len);
  }

 private:
  // "<path>: <want>, not <what this is>".
  Error mismatch(std::string_view want) const {
    std::string what;
    switch (v_->type()) {
      case nlohmann::json::value_t::object:
        what = "an object";
        break;
      case nlohmann::json::value_t::array:
        what = "an array";
        break;
      case nlohmann::json::value_t::string:
        what = "a string";
        break;
      case nlohmann::json::value_t::null:
        what = "null";
        break;
      case nlohmann::json::value_t::discarded:
        what = "nothing";
        break;
      default:  // numbers and booleans: short, and the clearest is the value
        what = v_->dump();
        break;
    }
    return error(std::string(want) + ", not " + what);
  }

  std::string member_path(std::string_view key) const {
    bool plain = !key.empty();
    for (char c : key) {
      plain = plain && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                        (c >= '0' && c <= '9') || c == '_' || c == '-');
    }
    if (plain) return path_ + "." + std::string(key);
    return path_ + "[" +
           nlohmann::json(std::string(key))
               .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) +
           "]";
  }

  const nlohmann::json* v_;
  std::string path_;
};

}  // namespace resctrlfs
