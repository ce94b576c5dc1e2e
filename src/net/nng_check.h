// nng return codes as dt::core::Error (the RAII owners of nng handles are in
// net/nng_handles.h). The error text names the call so a failure in
// a log says which step of the transport broke.
#pragma once

#include <nng/nng.h>

#include <string>

#include "core/error.h"

namespace dt::net {

// The ErrorCode an nng error maps to: NNG_ETIMEDOUT -> kTimedOut,
// NNG_ECLOSED -> kClosed, NNG_ENOMEM -> kOutOfMemory, NNG_EINVAL/NNG_EADDRINVAL
// -> kInvalidArgument, everything else -> kNetwork.
core::ErrorCode error_code_of_nng(int rv);

// "<what>: <nng_strerror(rv)>", with "address in use" spelled out for
// NNG_EADDRINUSE so the cause is obvious in a launcher's log.
[[noreturn]] void throw_nng_error(int rv, const std::string& what);

}  // namespace dt::net

// Throws core::Error for a non-zero nng result, naming the call expression.
#define DT_NNG_CHECK(call)                                  \
  do {                                                      \
    const int dt_nng_rv_ = (call);                          \
    if (dt_nng_rv_ != 0) ::dt::net::throw_nng_error(dt_nng_rv_, #call); \
  } while (0)
