#include "net/nng_check.h"

namespace dt::net {

core::ErrorCode error_code_of_nng(int rv) {
  switch (rv) {
    case NNG_ETIMEDOUT:
      return core::ErrorCode::kTimedOut;
    case NNG_ECLOSED:
      return core::ErrorCode::kClosed;
    case NNG_ENOMEM:
      return core::ErrorCode::kOutOfMemory;
    case NNG_EINVAL:
    case NNG_EADDRINVAL:
      return core::ErrorCode::kInvalidArgument;
    default:
      return core::ErrorCode::kNetwork;
  }
}

void throw_nng_error(int rv, const std::string& what) {
  std::string text = what + ": " + nng_strerror(rv);
  // nng's own text ("Address in use") is easy to miss in a long call site.
  if (rv == NNG_EADDRINUSE) text += " (address in use: another process holds this port or path)";
  throw core::Error(error_code_of_nng(rv), text);
}

}  // namespace dt::net
