#include "kvstore/argument_checks.h"

#include <string>

#include "core/error.h"

namespace dt::kvstore {

using core::Error;
using core::ErrorCode;

void check_lengths(size_t keys, size_t arrays, const char* op, const char* what) {
  if (keys != arrays) {
    throw Error(ErrorCode::kInvalidArgument, std::string(op) + ": " + std::to_string(keys) + " keys but " +
                                                 std::to_string(arrays) + " " + what);
  }
}

void check_value(Key key, core::DType dtype, const core::Shape& shape, const core::NDArray& value, const char* op) {
  if (!value.defined()) {
    throw Error(ErrorCode::kInvalidArgument, std::string(op) + ": an array for key " + std::to_string(key) + " is empty");
  }
  if (value.dtype() != dtype) {
    throw Error(ErrorCode::kDtypeMismatch, std::string(op) + ": key " + std::to_string(key) + " holds " +
                                               core::dtype_name(dtype) + ", got " + core::dtype_name(value.dtype()));
  }
  if (value.shape() != shape) {
    throw Error(ErrorCode::kShapeMismatch, std::string(op) + ": key " + std::to_string(key) + " was initialised as " +
                                               shape.to_string() + ", got " + value.shape().to_string());
  }
}

void check_init(const std::vector<Key>& keys, const std::vector<core::NDArray>& values,
                const std::function<bool(Key)>& initialised) {
  check_lengths(keys.size(), values.size(), "init", "values");
  for (size_t i = 0; i < keys.size(); ++i) {
    if (initialised(keys[i])) {
      throw Error(ErrorCode::kBadState, "init: key " + std::to_string(keys[i]) + " is already initialised");
    }
    if (!values[i].defined()) throw Error(ErrorCode::kInvalidArgument, "init: value " + std::to_string(i) + " is empty");
    for (size_t j = 0; j < i; ++j) {
      if (keys[j] == keys[i]) throw Error(ErrorCode::kInvalidArgument, "init: key " + std::to_string(keys[i]) + " repeats");
    }
  }
}

}  // namespace dt::kvstore
