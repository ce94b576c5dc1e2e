#include "ops/cuda/conv2d.h"

#include <algorithm>
#include <climits>
#include <stdexcept>
#include <string>

#include "core/cuda/device_guard.h"
#include "core/cuda/gpu_context.h"
#include "core/cuda/library_handles.h"
#include "core/error.h"
#include "ops/cuda/cudnn_descriptors.h"
#include "ops/cuda/conv_algorithm_search.h"
#include "ops/cuda/device_buffer.h"
#include "ops/cuda/layer_kernels.h"
#include "ops/cuda/layout_convert.h"

namespace dt::ops::cuda {

namespace {

void require(bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument("Conv2D: " + what);
}

void require_ptr(const void* ptr, const char* name) {
  if (ptr == nullptr) throw std::invalid_argument(std::string("Conv2D: ") + name + " is null");
}

// The CPU kernel's checks, plus what cuDNN's int dimensions need.
void validate(const Conv2DParams& p) {
  p.validate();
  for (int64_t v : {p.N, p.C, p.H, p.W, p.K, p.R, p.S, p.stride_h, p.stride_w, p.pad_h, p.pad_w, p.dilation_h,
                    p.dilation_w}) {
    require(v <= INT_MAX, "every dimension must fit cuDNN's int");
  }
}

int as_int(int64_t v) { return static_cast<int>(v); }

cudnnDataType_t cudnn_type(core::DType dtype) {
  switch (dtype) {
    case core::DType::kFloat32: return CUDNN_DATA_FLOAT;
    case core::DType::kFloat16: return CUDNN_DATA_HALF;
    case core::DType::kBFloat16: return CUDNN_DATA_BFLOAT16;
    default: break;
  }
  throw std::invalid_argument(std::string("Conv2D: no cuDNN convolution for ") + core::dtype_name(dtype) +
                              " (float32, float16 or bfloat16 only)");
}

}  // namespace

struct Conv2D::Impl {
  std::shared_ptr<core::Context> ctx;
  core::cuda::GpuContext& gpu;
  Conv2DParams p;
  core::DType dtype;
  TensorDescriptor x_desc, y_desc;
  FilterDescriptor w_desc;
  ConvolutionDescriptor conv_desc;
  cudnnConvolutionFwdAlgo_t fwd_algo{};
  cudnnConvolutionBwdDataAlgo_t bwd_data_algo{};
  cudnnConvolutionBwdFilterAlgo_t bwd_filter_algo{};
  size_t fwd_workspace = 0, bwd_data_workspace = 0, bwd_filter_workspace = 0;

  bool nhwc() const { return p.layout == TensorLayout::kNHWC; }
  // The filter's logical dims, for converting it between OIHW and KRSC
  // (the NCHW and NHWC orders of (K, C/groups, R, S)).
  LogicalDims filter_dims() const { return {p.K, p.C / p.groups, p.R, p.S}; }
  size_t filter_bytes() const {
    return static_cast<size_t>(p.K * (p.C / p.groups) * p.R * p.S) * core::dtype_size(dtype);
  }
  // w as cuDNN's filter descriptor says: w itself, or its KRSC copy in krsc.
  const void* filter_for_cudnn(const void* w, DeviceBuffer& krsc) const {
    if (!nhwc()) return w;
    krsc = DeviceBuffer(ctx, filter_bytes());
    convert_layout(*ctx, krsc.get(), TensorLayout::kNHWC, w, TensorLayout::kNCHW, filter_dims(),
                   core::dtype_size(dtype));
    return krsc.get();
  }

  static const Conv2DParams& checked(const Conv2DParams& params) {
    validate(params);
    return params;
  }

  Impl(std::shared_ptr<core::Context> context, const Conv2DParams& params, core::DType data_type)
      : ctx(std::move(context)), gpu(core::cuda::gpu_context_of(*ctx)), p(checked(params)), dtype(data_type) {
    const cudnnDataType_t data = cudnn_type(dtype);
    const bool low_precision = dtype != core::DType::kFloat32;
    core::cuda::DeviceGuard guard(gpu.device_id());
    // Dims are logical (N, C, H, W) in either layout; the format says the order.
    const cudnnTensorFormat_t format = nhwc() ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
    DT_CUDNN_CHECK(cudnnSetTensor4dDescriptor(x_desc.get(), format, data, as_int(p.N), as_int(p.C), as_int(p.H),
                                              as_int(p.W)));
    DT_CUDNN_CHECK(cudnnSetTensor4dDescriptor(y_desc.get(), format, data, as_int(p.N), as_int(p.K),
                                              as_int(p.out_h()), as_int(p.out_w())));
    // OIHW with C/groups input channels per filter, as on the CPU. With NHWC
    // activations cuDNN gets the filter as KRSC (its NHWC filter format),
    // which its native channels-last kernels want; with an NCHW filter it
    // may transpose internally instead. The caller's weights stay OIHW: each
    // call converts them (filter_for_cudnn, and backward_weights for the gradient).
    DT_CUDNN_CHECK(cudnnSetFilter4dDescriptor(w_desc.get(), data, format, as_int(p.K), as_int(p.C / p.groups),
                                              as_int(p.R), as_int(p.S)));
    // Cross-correlation is what PyTorch, MXNet and oneDNN call convolution.
    // The compute type is float32 for every data type: cuDNN's
    // PSEUDO_HALF / PSEUDO_BFLOAT16 configurations, as PyTorch's AMP uses.
    DT_CUDNN_CHECK(cudnnSetConvolution2dDescriptor(conv_desc.get(), as_int(p.pad_h), as_int(p.pad_w),
                                                   as_int(p.stride_h), as_int(p.stride_w), as_int(p.dilation_h),
                                                   as_int(p.dilation_w), CUDNN_CROSS_CORRELATION,
                                                   CUDNN_DATA_FLOAT));
    DT_CUDNN_CHECK(cudnnSetConvolutionGroupCount(conv_desc.get(), as_int(p.groups)));
    // CUDNN_DEFAULT_MATH would let Ampere and later run float32 convolutions
    // in TF32; FMA math keeps them in float32. 16-bit data may use tensor cores.
    // The calls run with this descriptor whatever math type cuDNN listed with
    // the chosen algorithm, so no choice can bring TF32 into float32.
    DT_CUDNN_CHECK(
        cudnnSetConvolutionMathType(conv_desc.get(), low_precision ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH));

    int n = 0, c = 0, h = 0, w = 0;
    DT_CUDNN_CHECK(cudnnGetConvolution2dForwardOutputDim(conv_desc.get(), x_desc.get(), w_desc.get(), &n, &c, &h, &w));
    if (n != p.N || c != p.K || h != p.out_h() || w != p.out_w()) {
      throw core::Error(core::ErrorCode::kInternal, "Conv2D: cuDNN's output shape differs from the CPU kernel's");
    }

    // Chosen once per distinct problem on this context (a search or the
    // heuristics, by MXNET_CUDNN_AUTOTUNE_DEFAULT: ops/cuda/conv_algorithm_search.h).
    ConvProblem problem;
    problem.x = x_desc.get(), problem.y = y_desc.get(), problem.w = w_desc.get(), problem.conv = conv_desc.get();
    const size_t element = core::dtype_size(dtype);
    problem.x_bytes = static_cast<size_t>(p.N * p.C * p.H * p.W) * element;
    problem.w_bytes = static_cast<size_t>(p.K * (p.C / p.groups) * p.R * p.S) * element;
    problem.y_bytes = static_cast<size_t>(p.N * p.K * p.out_h() * p.out_w()) * element;
    problem.float32 = !low_precision;
    const ConvAlgorithms chosen = conv_algorithms(
        ctx, ConvAlgorithmKey::of(p, dtype, low_precision ? ConvMath::kTensorOp : ConvMath::kFma, gpu.device_id()),
        problem);
    fwd_algo = static_cast<cudnnConvolutionFwdAlgo_t>(chosen.forward.algorithm);
    bwd_data_algo = static_cast<cudnnConvolutionBwdDataAlgo_t>(chosen.backward_data.algorithm);
    bwd_filter_algo = static_cast<cudnnConvolutionBwdFilterAlgo_t>(chosen.backward_filter.algorithm);
    fwd_workspace = chosen.forward.workspace_bytes;
    bwd_data_workspace = chosen.backward_data.workspace_bytes;
    bwd_filter_workspace = chosen.backward_filter.workspace_bytes;
    // The context's shared workspace grows now, so that the calls allocate
    // nothing (core/cuda/shared_workspace.h).
    gpu.workspace().reserve(std::max({fwd_workspace, bwd_data_workspace, bwd_filter_workspace}));
  }
};

Conv2D::Conv2D(std::shared_ptr<core::Context> ctx, const Conv2DParams& params, core::DType dtype)
    : impl_(std::make_unique<Impl>(std::move(ctx), params, dtype)) {}
Conv2D::~Conv2D() = default;
Conv2D::Conv2D(Conv2D&&) noexcept = default;
Conv2D& Conv2D::operator=(Conv2D&&) noexcept = default;

const Conv2DParams& Conv2D::params() const { return impl_->p; }
core::DType Conv2D::dtype() const { return impl_->dtype; }

void Conv2D::forward(const void* x, const void* w, const float* b, void* y) {
  Impl& m = *impl_;
  require_ptr(x, "x");
  require_ptr(w, "w");
  require_ptr(y, "y");
  if (m.p.has_bias) require_ptr(b, "b");
  core::cuda::DeviceGuard guard(m.gpu.device_id());
  // float scaling factors for every data type (cuDNN's rule for HALF, BFLOAT16, FLOAT).
  const float one = 1.0f, zero = 0.0f;
  DeviceBuffer krsc;
  w = m.filter_for_cudnn(w, krsc);
  DT_CUDNN_CHECK(cudnnConvolutionForward(m.gpu.cudnn().get(), &one, m.x_desc.get(), x, m.w_desc.get(), w,
                                         m.conv_desc.get(), m.fwd_algo, m.gpu.workspace().get(m.fwd_workspace),
                                         m.fwd_workspace, &zero, m.y_desc.get(), y));
  if (m.p.has_bias) {
    kernels::add_channel_bias(m.gpu.stream(), m.dtype, y, b, m.p.N, m.p.K, m.p.out_h() * m.p.out_w(), m.p.layout);
  }
}

void Conv2D::backward_data(const void* dy, const void* w, void* dx) {
  Impl& m = *impl_;
  require_ptr(dy, "dy");
  require_ptr(w, "w");
  require_ptr(dx, "dx");
  core::cuda::DeviceGuard guard(m.gpu.device_id());
  const float one = 1.0f, zero = 0.0f;
  DeviceBuffer krsc;
  w = m.filter_for_cudnn(w, krsc);
  DT_CUDNN_CHECK(cudnnConvolutionBackwardData(m.gpu.cudnn().get(), &one, m.w_desc.get(), w, m.y_desc.get(), dy,
                                              m.conv_desc.get(), m.bwd_data_algo,
                                              m.gpu.workspace().get(m.bwd_data_workspace), m.bwd_data_workspace,
                                              &zero, m.x_desc.get(), dx));
}

void Conv2D::backward_weights(const void* x, const void* dy, void* dw, float* db) {
  Impl& m = *impl_;
  require_ptr(x, "x");
  require_ptr(dy, "dy");
  require_ptr(dw, "dw");
  if (m.p.has_bias) require_ptr(db, "db");
  core::cuda::DeviceGuard guard(m.gpu.device_id());
  const float one = 1.0f, zero = 0.0f;
  // With NHWC, cuDNN writes the KRSC gradient, converted into the caller's OIHW dw.
  const DeviceBuffer krsc = m.nhwc() ? DeviceBuffer(m.ctx, m.filter_bytes()) : DeviceBuffer();
  DT_CUDNN_CHECK(cudnnConvolutionBackwardFilter(m.gpu.cudnn().get(), &one, m.x_desc.get(), x, m.y_desc.get(), dy,
                                                m.conv_desc.get(), m.bwd_filter_algo,
                                                m.gpu.workspace().get(m.bwd_filter_workspace),
                                                m.bwd_filter_workspace, &zero, m.w_desc.get(),
                                                m.nhwc() ? krsc.get() : dw));
  if (m.nhwc()) {
    convert_layout(*m.ctx, dw, TensorLayout::kNCHW, krsc.get(), TensorLayout::kNHWC, m.filter_dims(),
                   core::dtype_size(m.dtype));
  }
  if (m.p.has_bias) {
    kernels::sum_per_channel(m.gpu.stream(), m.dtype, dy, db, m.p.N, m.p.K, m.p.out_h() * m.p.out_w(), m.p.layout);
  }
}

}  // namespace dt::ops::cuda
