// Result<T>: a value or an Error, the way every library function reports
// failure. Errors are values with context ("file:line:col: field: what,
// expected ..."), never exceptions across module boundaries and never silent
// defaults. Invariant: exactly one of value()/error() is valid.
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace ix {

// Error is a human-readable message that already carries its context.
struct Error {
  std::string message;
};

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}            // NOLINT: implicit by design
  Result(Error error) : v_(std::move(error)) {}        // NOLINT: implicit by design

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  const Error& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

// Status is a Result with no value.
struct Ok {};
using Status = Result<Ok>;

}  // namespace ix
