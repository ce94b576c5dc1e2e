#include "nn/initializer.h"

#include <cmath>
#include <utility>

#include "core/error.h"
#include "nn/layers/seeded_hash.h"

namespace dt::nn {
namespace {

using core::Error;
using core::ErrorCode;
using layers::fnv1a64;
using layers::splitmix64;

constexpr double kPi = 3.14159265358979323846;

// The random stream is built from integer arithmetic and a handful of libm
// calls only, never from <random>'s distributions, whose algorithms differ
// between standard libraries: the same (seed, name) must give the same
// weights with libstdc++, libc++ and MSVC.

class Random {
 public:
  Random(uint64_t seed, const std::string& name) {
    state_ = layers::mix64(seed) ^ fnv1a64(name);
  }

  // Uniform in [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(splitmix64(state_) >> 11) * 0x1.0p-53; }

  // Standard normal by Box-Muller; both values of a pair are used.
  double normal() {
    if (have_spare_) {
      have_spare_ = false;
      return spare_;
    }
    const double u1 = 1.0 - uniform();  // (0, 1]: log stays finite
    const double u2 = uniform();
    const double radius = std::sqrt(-2.0 * std::log(u1));
    const double angle = 2.0 * kPi * u2;
    spare_ = radius * std::sin(angle);
    have_spare_ = true;
    return radius * std::cos(angle);
  }

 private:
  uint64_t state_;
  double spare_ = 0.0;
  bool have_spare_ = false;
};

// PyTorch's _calculate_fan_in_and_fan_out: dim 1 and dim 0, each times the
// receptive field (the product of the remaining dims).
std::pair<double, double> fans(const core::Shape& shape, const std::string& name, Initializer::Kind kind) {
  if (shape.ndim() < 2) {
    throw Error(ErrorCode::kInvalidArgument,
                std::string("initializer ") + Initializer::kind_name(kind) + " for '" + name +
                    "': fan in and fan out need at least 2 dims, got shape " + shape.to_string());
  }
  double receptive = 1.0;
  for (size_t i = 2; i < shape.ndim(); ++i) receptive *= static_cast<double>(shape[i]);
  const double fan_in = static_cast<double>(shape[1]) * receptive;
  const double fan_out = static_cast<double>(shape[0]) * receptive;
  if (fan_in <= 0.0 || fan_out <= 0.0) {
    throw Error(ErrorCode::kInvalidArgument,
                std::string("initializer ") + Initializer::kind_name(kind) + " for '" + name +
                    "': zero fan in or fan out for shape " + shape.to_string());
  }
  return {fan_in, fan_out};
}

struct KindName {
  Initializer::Kind kind;
  const char* name;
};

constexpr KindName kKindNames[] = {
    {Initializer::Kind::kZeros, "zeros"},
    {Initializer::Kind::kOnes, "ones"},
    {Initializer::Kind::kConstant, "constant"},
    {Initializer::Kind::kUniform, "uniform"},
    {Initializer::Kind::kNormal, "normal"},
    {Initializer::Kind::kXavierUniform, "xavier_uniform"},
    {Initializer::Kind::kXavierNormal, "xavier_normal"},
    {Initializer::Kind::kKaimingUniform, "kaiming_uniform"},
    {Initializer::Kind::kKaimingNormal, "kaiming_normal"},
};

}  // namespace

const char* Initializer::kind_name(Kind kind) {
  for (const KindName& entry : kKindNames) {
    if (entry.kind == kind) return entry.name;
  }
  throw Error(ErrorCode::kInvalidArgument,
              "unknown initializer kind value " + std::to_string(static_cast<int>(kind)));
}

Initializer::Kind Initializer::kind_from_name(const std::string& name) {
  std::string known;
  for (const KindName& entry : kKindNames) {
    if (name == entry.name) return entry.kind;
    known += (known.empty() ? "" : ", ") + std::string(entry.name);
  }
  throw Error(ErrorCode::kInvalidArgument,
              "unknown initializer '" + name + "' (known: " + known + ")");
}

void Initializer::fill(const core::NDArray& array, uint64_t seed, const std::string& name) const {
  if (!array.defined()) {
    throw Error(ErrorCode::kInvalidArgument, "initializer for '" + name + "': array is not allocated");
  }
  if (array.dtype() != core::DType::kFloat32) {
    throw Error(ErrorCode::kDtypeMismatch, "initializer for '" + name + "': needs float32, got " +
                                               core::dtype_name(array.dtype()));
  }
  if (!array.context()->is_cpu()) {
    throw Error(ErrorCode::kNotSupported, "initializer for '" + name + "': needs a CPU array, got one on " +
                                              array.context()->to_string());
  }
  float* out = array.data_as<float>();
  const size_t n = array.size();
  Random rng(seed, name);
  auto fill_uniform = [&](double bound) {
    for (size_t i = 0; i < n; ++i) out[i] = static_cast<float>(bound * (2.0 * rng.uniform() - 1.0));
  };
  auto fill_normal = [&](double stddev) {
    for (size_t i = 0; i < n; ++i) out[i] = static_cast<float>(stddev * rng.normal());
  };
  auto fill_constant = [&](double v) {
    for (size_t i = 0; i < n; ++i) out[i] = static_cast<float>(v);
  };
  switch (kind) {
    case Kind::kZeros:
      fill_constant(0.0);
      return;
    case Kind::kOnes:
      fill_constant(1.0);
      return;
    case Kind::kConstant:
      fill_constant(value);
      return;
    case Kind::kUniform:
      fill_uniform(scale);
      return;
    case Kind::kNormal:
      fill_normal(scale);
      return;
    case Kind::kXavierUniform: {
      const auto [fan_in, fan_out] = fans(array.shape(), name, kind);
      fill_uniform(gain * std::sqrt(6.0 / (fan_in + fan_out)));
      return;
    }
    case Kind::kXavierNormal: {
      const auto [fan_in, fan_out] = fans(array.shape(), name, kind);
      fill_normal(gain * std::sqrt(2.0 / (fan_in + fan_out)));
      return;
    }
    case Kind::kKaimingUniform: {
      const double fan_in = fans(array.shape(), name, kind).first;
      fill_uniform(gain * std::sqrt(3.0 / fan_in));
      return;
    }
    case Kind::kKaimingNormal: {
      const double fan_in = fans(array.shape(), name, kind).first;
      fill_normal(gain / std::sqrt(fan_in));
      return;
    }
  }
  throw Error(ErrorCode::kInvalidArgument,
              "initializer for '" + name + "': unknown kind value " + std::to_string(static_cast<int>(kind)));
}

}  // namespace dt::nn
