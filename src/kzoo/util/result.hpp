// Errors as values. A fallible function returns Result<T>: either the value or
// an Error whose message a user can act on (what went wrong, where, and how to
// fix it). Exceptions are reserved for "cannot go on" (bugs, out of memory).
#pragma once

#include <string>
#include <utility>

#include <tl/expected.hpp>

namespace kzoo {

struct Error {
  std::string message;
};

template <class T>
using Result = tl::expected<T, Error>;

// Result<void> success value: `return ok();`
inline tl::expected<void, Error> ok() { return {}; }

inline tl::unexpected<Error> fail(std::string message) {
  return tl::unexpected<Error>(Error{std::move(message)});
}

}  // namespace kzoo
