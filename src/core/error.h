// The library's one error type. Everything below src/c_api throws dt::core::Error;
// the C boundary turns it into a dt_status plus the thread's last-error message.
#pragma once

#include <stdexcept>
#include <string>

namespace dt::core {

// Same values as dt_status in dt_c_api.h (checked by static_asserts in src/c_api),
// kept separate so that no layer below the C API includes the public header.
enum class ErrorCode : int {
  kInvalidArgument = 1,
  kOutOfMemory = 2,
  kNotSupported = 3,
  kBadState = 4,
  kTimedOut = 5,
  kClosed = 6,
  kNetwork = 7,
  kRemote = 8,
  kProtocol = 9,
  kCuda = 10,
  kNccl = 11,
  kIo = 12,
  kInternal = 13,
  kInvalidHandle = 14,
  kShapeMismatch = 15,
  kDtypeMismatch = 16,
  kNoDevice = 17,
  kNotFound = 18,
  kPeerLost = 19,
  kUnauthenticated = 20,
};

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message)
      : std::runtime_error(message), code_(code) {}
  ErrorCode code() const noexcept { return code_; }

 private:
  ErrorCode code_;
};

// Throws Error(code, message) when cond is false. A function, not a macro, so the
// message expression is only a std::string built by the caller when needed:
// callers write `if (!ok) throw Error(...)` on hot paths instead.
inline void require(bool cond, ErrorCode code, const std::string& message) {
  if (!cond) throw Error(code, message);
}

}  // namespace dt::core
