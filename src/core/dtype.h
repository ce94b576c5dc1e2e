// Element types and the conversions between them, including the two 16-bit
// float formats that have no C++ type.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace dt::core {

// Same values as dt_dtype in dt_c_api.h.
enum class DType : int {
  kFloat32 = 0,
  kFloat16 = 1,
  kBFloat16 = 2,
  kFloat64 = 3,
  kInt32 = 4,
  kInt64 = 5,
  kUInt8 = 6,
};

constexpr int kNumDTypes = 7;

bool is_valid_dtype(int value);
size_t dtype_size(DType dtype);
bool is_floating(DType dtype);
// The safetensors spelling: "F32", "F16", "BF16", "F64", "I32", "I64", "U8".
const char* dtype_name(DType dtype);
// Inverse of dtype_name; throws Error(kIo) naming the text for an unknown one,
// since unknown dtype names only ever come from files.
DType dtype_from_name(const std::string& name);

// IEEE binary16 and bfloat16 conversions, round to nearest even; NaN stays NaN.
uint16_t float_to_half(float value);
float half_to_float(uint16_t bits);
uint16_t float_to_bfloat16(float value);
float bfloat16_to_float(uint16_t bits);

}  // namespace dt::core
