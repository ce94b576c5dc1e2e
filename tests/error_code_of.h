// The error code a call throws: the one helper every test that checks
// Error codes shares, so that "threw nothing" fails the test the same way
// everywhere.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "core/error.h"

namespace dt::test_support {

// The code of the core::Error fn throws, with its message in *message when
// given; a test failure and kInternal when fn throws nothing.
inline core::ErrorCode code_of(const std::function<void()>& fn, std::string* message = nullptr) {
  try {
    fn();
  } catch (const core::Error& e) {
    if (message != nullptr) *message = e.what();
    return e.code();
  }
  ADD_FAILURE() << "no error thrown";
  return core::ErrorCode::kInternal;
}

}  // namespace dt::test_support
