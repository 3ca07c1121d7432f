// Status and Result<T>: errors the user can cause come back as values
// (style.md, "Errors"). Messages name the file, line or packet and what was
// expected, e.g. "run.trace:17: unknown kind 'CALLX' (expected CALL, RET or
// MSG)". Asserts are kept for our own bugs.
#ifndef BBPROF_BASE_STATUS_H_
#define BBPROF_BASE_STATUS_H_

#include <cassert>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace bbprof {

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  static Status Ok() { return Status(); }
  static Status Error(std::string message) {
    Status s;
    s.message_ = std::move(message);
    s.ok_ = false;
    return s;
  }

  bool ok() const { return ok_; }
  const std::string& message() const { return message_; }

  // Prefixes the message with context, e.g. a file name: "FILE: message".
  Status WithContext(const std::string& context) const {
    if (ok_) return *this;
    return Error(context + ": " + message_);
  }

 private:
  bool ok_ = true;
  std::string message_;
};

// A value or an error Status (a small std::expected until C++23).
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {  // NOLINT
    assert(!std::get<Status>(v_).ok() && "Result from an OK status");
  }

  bool ok() const { return std::holds_alternative<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T& value() & { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }

  Status status() const {
    if (ok()) return Status::Ok();
    return std::get<Status>(v_);
  }

 private:
  std::variant<T, Status> v_;
};

}  // namespace bbprof

// Early return on error, as in Abseil/DuckDB.
#define BBPROF_RETURN_IF_ERROR(expr)              \
  do {                                            \
    ::bbprof::Status bbprof_status_ = (expr);     \
    if (!bbprof_status_.ok()) return bbprof_status_; \
  } while (0)

// `BBPROF_ASSIGN_OR_RETURN(lhs, expr)`: lhs = the value of the Result that
// expr gives, or return its error Status. lhs may declare a variable
// (`BBPROF_ASSIGN_OR_RETURN(double x, GetNumber(...))`).
#define BBPROF_STATUS_CONCAT_INNER(a, b) a##b
#define BBPROF_STATUS_CONCAT(a, b) BBPROF_STATUS_CONCAT_INNER(a, b)
#define BBPROF_ASSIGN_OR_RETURN(lhs, expr)                                     \
  BBPROF_ASSIGN_OR_RETURN_IMPL(BBPROF_STATUS_CONCAT(bbprof_result_, __LINE__), \
                               lhs, expr)
#define BBPROF_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                 \
  if (!tmp.ok()) return tmp.status();                \
  lhs = std::move(tmp).value()

#endif  // BBPROF_BASE_STATUS_H_
