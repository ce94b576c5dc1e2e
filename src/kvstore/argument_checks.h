// The argument checks that every kvstore type makes, with one wording, so
// that a caller sees the same error whichever store it uses.
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

#include "core/dtype.h"
#include "core/ndarray.h"
#include "core/shape.h"
#include "kvstore/kvstore.h"

namespace dt::kvstore {

// Error(kInvalidArgument) "<op>: <keys> keys but <arrays> <what>" unless equal.
void check_lengths(size_t keys, size_t arrays, const char* op, const char* what);
// value must be defined (kInvalidArgument) and hold key's dtype
// (kDtypeMismatch) and shape (kShapeMismatch).
void check_value(Key key, core::DType dtype, const core::Shape& shape, const core::NDArray& value, const char* op);
// init's arguments: equal lengths, defined values, keys that do not repeat
// (kInvalidArgument) and are not initialised yet (kBadState).
void check_init(const std::vector<Key>& keys, const std::vector<core::NDArray>& values,
                const std::function<bool(Key)>& initialised);

}  // namespace dt::kvstore
