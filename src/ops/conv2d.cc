#include "ops/conv2d.h"

#include <stdexcept>
#include <string>

#include "core/error.h"
#include "ops/cpu/conv2d.h"
#if DT_WITH_CUDNN
#include "ops/cuda/conv2d.h"
#endif

namespace dt::ops {
namespace {

int64_t out_extent(int64_t in, int64_t kernel, int64_t stride, int64_t pad, int64_t dilation) {
  const int64_t span = dilation * (kernel - 1) + 1;
  return (in + 2 * pad - span) / stride + 1;
}

void require(bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument("Conv2D: " + what);
}

}  // namespace

int64_t Conv2DParams::out_h() const { return out_extent(H, R, stride_h, pad_h, dilation_h); }
int64_t Conv2DParams::out_w() const { return out_extent(W, S, stride_w, pad_w, dilation_w); }

void Conv2DParams::validate() const {
  const Conv2DParams& p = *this;
  require(p.N > 0 && p.C > 0 && p.H > 0 && p.W > 0, "N, C, H, W must be positive");
  require(p.K > 0, "K (output channels) must be positive");
  require(p.R > 0 && p.S > 0, "kernel R, S must be positive");
  require(p.stride_h > 0 && p.stride_w > 0, "strides must be positive");
  require(p.pad_h >= 0 && p.pad_w >= 0, "padding must be non-negative");
  require(p.dilation_h > 0 && p.dilation_w > 0, "dilation must be positive (1 = dense)");
  require(p.groups > 0, "groups must be positive");
  require(p.C % p.groups == 0 && p.K % p.groups == 0,
          "C (" + std::to_string(p.C) + ") and K (" + std::to_string(p.K) +
              ") must be divisible by groups (" + std::to_string(p.groups) + ")");
  require(p.out_h() > 0 && p.out_w() > 0,
          "dilated kernel is larger than the padded input (" + std::to_string(p.H) + "x" +
              std::to_string(p.W) + ")");
}

bool gpu_conv2d_available() { return DT_WITH_CUDNN; }

std::unique_ptr<Conv2D> make_conv2d(const Target& target, const Conv2DParams& params) {
  if (!target.on_gpu()) return std::make_unique<cpu::Conv2D>(detail::cpu_engine(target), params);
#if DT_WITH_CUDNN
  return std::make_unique<cuda::Conv2D>(target.context, params, target.dtype);
#else
  throw core::Error(core::ErrorCode::kNotSupported, "Conv2D: no GPU kernel in this build: GPU convolution needs cuDNN");
#endif
}

}  // namespace dt::ops
