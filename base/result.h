// Defines Result<T>: a value or an error (errno + a message for a user, or
// a message for a log only).
//
// Errors are values in resctrlfs. Every layer returns Result<T>; exceptions
// never cross a layer boundary. An Error made with Error::make() carries
// text a user reads: for a resctrl command, what resctrl puts into
// info/last_cmd_status, written exactly as the kernel words it, including
// the trailing "\n" where the kernel has one (the kernel's
// rdt_last_cmd_puts() texts; see "last_cmd_status" in
// Documentation/filesystems/resctrl.rst); for a tool, what it prints. One
// made with Error::log_only() carries text for an operator's log (why a
// saved state or a journal record was refused, say): fs/ never puts it into
// last_cmd_status, and an error built on it adds none of it there.
#pragma once

#include <cassert>
#include <cerrno>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace resctrlfs {

// An errno value plus the text of the failure, for a user or for a log.
// A user's `message` may be empty: the kernel fails some commands without a
// message (for example an unknown domain id in a schemata write).
struct Error {
  int code = EINVAL;
  std::string message;
  bool for_user = true;  // false: `message` is log text only

  static Error make(int code, std::string message = {}) { return Error{code, std::move(message)}; }
  static Error log_only(int code, std::string text) { return Error{code, std::move(text), false}; }
  // What a user reads (last_cmd_status): the message, or nothing when it is
  // log text only.
  std::string_view user_text() const { return for_user ? std::string_view(message) : ""; }
};

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  Result(Error e) : v_(std::move(e)) {}      // NOLINT(google-explicit-constructor)

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & {
    assert(ok());
    return std::get<0>(v_);
  }
  const T& value() const& {
    assert(ok());
    return std::get<0>(v_);
  }
  T&& value() && {
    assert(ok());
    return std::get<0>(std::move(v_));
  }
  // The value, or `dflt` when this holds an error.
  T value_or(T dflt) const& { return ok() ? std::get<0>(v_) : std::move(dflt); }
  T value_or(T dflt) && { return ok() ? std::get<0>(std::move(v_)) : std::move(dflt); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const Error& error() const& {
    assert(!ok());
    return std::get<1>(v_);
  }
  Error&& error() && {
    assert(!ok());
    return std::get<1>(std::move(v_));
  }

 private:
  std::variant<T, Error> v_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error e) : err_(std::move(e)), ok_(false) {}  // NOLINT(google-explicit-constructor)

  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const Error& error() const& {
    assert(!ok_);
    return err_;
  }
  Error&& error() && {
    assert(!ok_);
    return std::move(err_);
  }

 private:
  Error err_;
  bool ok_ = true;
};

inline Result<void> Ok() { return {}; }

}  // namespace resctrlfs

// Propagates an error from an expression yielding Result<...>.
#define RESCTRLFS_RETURN_IF_ERROR(expr)                                       \
  do {                                                                        \
    auto resctrlfs_status_ = (expr);                                          \
    if (!resctrlfs_status_.ok()) return std::move(resctrlfs_status_).error(); \
  } while (0)

#define RESCTRLFS_CONCAT_INNER_(a, b) a##b
#define RESCTRLFS_CONCAT_(a, b) RESCTRLFS_CONCAT_INNER_(a, b)
// Declares `lhs` from a Result<T> expression, or returns its error.
#define RESCTRLFS_ASSIGN_OR_RETURN(lhs, expr)                            \
  auto RESCTRLFS_CONCAT_(resctrlfs_r_, __LINE__) = (expr);               \
  if (!RESCTRLFS_CONCAT_(resctrlfs_r_, __LINE__).ok())                   \
    return std::move(RESCTRLFS_CONCAT_(resctrlfs_r_, __LINE__)).error(); \
  lhs = std::move(RESCTRLFS_CONCAT_(resctrlfs_r_, __LINE__)).value()
