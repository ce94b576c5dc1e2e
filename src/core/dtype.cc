#include "core/dtype.h"

#include "core/error.h"

namespace dt::core {

bool is_valid_dtype(int value) { return value >= 0 && value < kNumDTypes; }

size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return 4;
    case DType::kFloat16: return 2;
    case DType::kBFloat16: return 2;
    case DType::kFloat64: return 8;
    case DType::kInt32: return 4;
    case DType::kInt64: return 8;
    case DType::kUInt8: return 1;
  }
  throw Error(ErrorCode::kInvalidArgument, "unknown dtype " + std::to_string(static_cast<int>(dtype)));
}

bool is_floating(DType dtype) {
  return dtype == DType::kFloat32 || dtype == DType::kFloat16 || dtype == DType::kBFloat16 ||
         dtype == DType::kFloat64;
}

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return "F32";
    case DType::kFloat16: return "F16";
    case DType::kBFloat16: return "BF16";
    case DType::kFloat64: return "F64";
    case DType::kInt32: return "I32";
    case DType::kInt64: return "I64";
    case DType::kUInt8: return "U8";
  }
  return "?";
}

DType dtype_from_name(const std::string& name) {
  for (int i = 0; i < kNumDTypes; ++i) {
    if (name == dtype_name(static_cast<DType>(i))) return static_cast<DType>(i);
  }
  throw Error(ErrorCode::kIo, "unsupported dtype \"" + name + "\"");
}

namespace {
uint32_t bits_of(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}
float float_of(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}
}  // namespace

uint16_t float_to_half(float value) {
  const uint32_t f = bits_of(value);
  const uint32_t sign = (f >> 16) & 0x8000u;
  const uint32_t abs = f & 0x7fffffffu;
  if (abs >= 0x7f800000u) {  // Inf or NaN; keep NaN quiet and non-zero.
    return static_cast<uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x0200u : 0u));
  }
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to Inf
  if (abs < 0x38800000u) {
    // Subnormal half (or zero): add 0.5 as a float so the FPU rounds to the
    // nearest multiple of 2^-24, the half subnormal step.
    const float magic = float_of(0x3f000000u);  // 0.5
    const float rounded = float_of(abs) + magic;
    return static_cast<uint16_t>(sign | (bits_of(rounded) - bits_of(magic)));
  }
  // Normal: rebias the exponent and round the 13 dropped mantissa bits to even.
  const uint32_t odd = (abs >> 13) & 1u;
  const uint32_t rebased = abs + 0xc8000fffu + odd;  // -(127-15)<<23 plus rounding
  return static_cast<uint16_t>(sign | (rebased >> 13));
}

float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu;
  const uint32_t mantissa = h & 0x3ffu;
  if (exponent == 0x1f) return float_of(sign | 0x7f800000u | (mantissa << 13));
  if (exponent == 0) {
    // Subnormal or zero: value = mantissa * 2^-24, exact in float.
    const float magnitude = static_cast<float>(mantissa) * float_of(0x33800000u);
    return float_of(sign | bits_of(magnitude));
  }
  return float_of(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

uint16_t float_to_bfloat16(float value) {
  const uint32_t f = bits_of(value);
  if ((f & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((f >> 16) | 0x0040u);
  const uint32_t rounding = 0x7fffu + ((f >> 16) & 1u);
  return static_cast<uint16_t>((f + rounding) >> 16);
}

float bfloat16_to_float(uint16_t bits) { return float_of(static_cast<uint32_t>(bits) << 16); }

}  // namespace dt::core
