#include "ops/cpu/pooling.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "ops/cpu/scratchpad.h"

namespace dt::ops::cpu {
namespace {

using dnnl::memory;
using tag = memory::format_tag;
constexpr auto f32 = memory::data_type::f32;

void require(bool ok, const char* kernel, const std::string& what) {
  if (!ok) throw std::invalid_argument(std::string(kernel) + ": " + what);
}

void require_ptr(const void* ptr, const char* kernel, const char* name) {
  require(ptr != nullptr, kernel, std::string(name) + " is null");
}

void validate(const Pool2DParams& p, const char* kernel) {
  require(p.N > 0 && p.C > 0 && p.H > 0 && p.W > 0, kernel, "N, C, H, W must be positive");
  require(p.kernel_h > 0 && p.kernel_w > 0, kernel, "kernel must be positive");
  require(p.stride_h > 0 && p.stride_w > 0, kernel, "strides must be positive");
  require(p.pad_h >= 0 && p.pad_w >= 0, kernel, "padding must be non-negative");
  // A window lying wholly in padding would have no input to take from.
  require(2 * p.pad_h <= p.kernel_h && 2 * p.pad_w <= p.kernel_w, kernel,
          "padding must be at most half the kernel");
  require(p.out_h() > 0 && p.out_w() > 0, kernel, "kernel is larger than the padded input");
}

// Below this many input elements (128 KiB) the loops stay on the calling
// thread: waking the pool would cost more than the work.
constexpr int64_t kParallelMin = 1 << 15;

// oneDNN average pooling on plain NCHW or NHWC. It keeps no workspace, so one
// forward primitive serves training and inference.
struct AvgPoolPrimitives {
  dnnl::engine engine;
  dnnl::stream stream;
  Scratchpad scratch;
  dnnl::pooling_forward forward;
  dnnl::pooling_backward backward;
  memory src, dst, diff_src, diff_dst;

  AvgPoolPrimitives(const CpuEngine& eng, const Pool2DParams& p, dnnl::algorithm algo)
      : engine(eng.engine()), stream(eng.stream()) {
    const tag act = p.layout == TensorLayout::kNHWC ? tag::nhwc : tag::nchw;
    const memory::desc x(memory::dims{p.N, p.C, p.H, p.W}, f32, act);
    const memory::desc y(memory::dims{p.N, p.C, p.out_h(), p.out_w()}, f32, act);
    const memory::dims strides{p.stride_h, p.stride_w};
    const memory::dims kernel{p.kernel_h, p.kernel_w};
    const memory::dims pad{p.pad_h, p.pad_w};
    const auto attr = Scratchpad::user_attr();
    const dnnl::pooling_forward::primitive_desc train_pd(
        {dnnl::prop_kind::forward_training, algo, x, y, strides, kernel, pad, pad}, attr, engine);
    const dnnl::pooling_backward::primitive_desc back_pd(
        {algo, x, y, strides, kernel, pad, pad}, attr, engine, train_pd);
    forward = dnnl::pooling_forward(train_pd);
    backward = dnnl::pooling_backward(back_pd);
    src = memory(x, engine, DNNL_MEMORY_NONE);
    diff_src = memory(x, engine, DNNL_MEMORY_NONE);
    dst = memory(y, engine, DNNL_MEMORY_NONE);
    diff_dst = memory(y, engine, DNNL_MEMORY_NONE);
    scratch.reserve(train_pd);
    scratch.reserve(back_pd);
    scratch.allocate(engine);
  }

  void run_forward(const void* x, void* y) {
    src.set_data_handle(const_cast<void*>(x));
    dst.set_data_handle(y);
    forward.execute(stream, {{DNNL_ARG_SRC, src},
                             {DNNL_ARG_DST, dst},
                             {DNNL_ARG_SCRATCHPAD, scratch.memory()}});
    stream.wait();
  }

  void run_backward(const void* dy, void* dx) {
    diff_dst.set_data_handle(const_cast<void*>(dy));
    diff_src.set_data_handle(dx);
    backward.execute(stream, {{DNNL_ARG_DIFF_DST, diff_dst},
                              {DNNL_ARG_DIFF_SRC, diff_src},
                              {DNNL_ARG_SCRATCHPAD, scratch.memory()}});
    stream.wait();
  }
};

}  // namespace

// Max pooling is plain loops over the planes of (n, c), whose elements are
// adjacent in NCHW and C apart in NHWC (layout_plane_base/step): oneDNN 2.6 only has its reference
// kernel for plain layouts, and the blocked jit kernel plus the reorders to
// reach it measured no faster than these loops (LeNet pool1: 2.9 ms and
// 1.9 ms forward against about 0.5 ms here on 2 cores).
struct MaxPool2D::Impl {
  Pool2DParams p;
  int threads;
  // Per output, the offset of its maximum within the input plane.
  std::vector<int32_t> argmax;
  bool have_argmax = false;

  Impl(const CpuEngine& engine, const Pool2DParams& params)
      : p(params), threads(engine.num_threads()) {
    validate(p, "MaxPool2D");
    require(p.H * p.W <= std::numeric_limits<int32_t>::max(), "MaxPool2D",
            "H * W must fit in 32 bits");
    argmax.resize(static_cast<size_t>(p.N * p.C * p.out_h() * p.out_w()));
  }

  // The layout is a template argument so that NCHW's step is the constant 1.
  template <bool kRecord, TensorLayout kLayout>
  void forward(const float* x, float* y) {
    const int64_t planes = p.N * p.C, P = p.out_h(), Q = p.out_w();
    const int64_t in_plane = p.H * p.W, out_plane = P * Q;
    const int64_t step = layout_plane_step(kLayout, p.C);
#pragma omp parallel for schedule(static) num_threads(threads) if (planes * in_plane > kParallelMin)
    for (int64_t plane = 0; plane < planes; ++plane) {
      const int64_t n = plane / p.C, c = plane % p.C;
      // xp[i * step]: position i = h * W + w of the plane.
      const float* xp = x + layout_plane_base(kLayout, n, c, p.C, in_plane);
      float* yp = y + layout_plane_base(kLayout, n, c, p.C, out_plane);
      int32_t* ap = argmax.data() + plane * out_plane;
      for (int64_t oh = 0; oh < P; ++oh) {
        const int64_t h0 = oh * p.stride_h - p.pad_h;
        const int64_t hs = std::max<int64_t>(h0, 0), he = std::min(h0 + p.kernel_h, p.H);
        for (int64_t ow = 0; ow < Q; ++ow) {
          const int64_t w0 = ow * p.stride_w - p.pad_w;
          const int64_t ws = std::max<int64_t>(w0, 0), we = std::min(w0 + p.kernel_w, p.W);
          int64_t best_at = hs * p.W + ws;
          float best = xp[best_at * step];
          bool saw_nan = false;
          // Branch-free select: on random data an if-based max mispredicts
          // about every other tap, which measured 4x slower.
          for (int64_t h = hs; h < he; ++h) {
            for (int64_t w = ws; w < we; ++w) {
              const float v = xp[(h * p.W + w) * step];
              const bool greater = v > best;
              saw_nan |= v != v;
              best_at = greater ? h * p.W + w : best_at;
              best = greater ? v : best;
            }
          }
          // NaN wins, as in PyTorch, so a diverging net shows it; rare, so
          // the window is scanned again only then.
          if (saw_nan) {
            for (int64_t h = hs; h < he && !std::isnan(best); ++h) {
              for (int64_t w = ws; w < we; ++w) {
                if (std::isnan(xp[(h * p.W + w) * step])) {
                  best_at = h * p.W + w;
                  best = xp[best_at * step];
                  break;
                }
              }
            }
          }
          yp[(oh * Q + ow) * step] = best;
          if (kRecord) ap[oh * Q + ow] = static_cast<int32_t>(best_at);
        }
      }
    }
  }

  template <bool kRecord>
  void forward(const float* x, float* y) {
    if (p.layout == TensorLayout::kNHWC) {
      forward<kRecord, TensorLayout::kNHWC>(x, y);
    } else {
      forward<kRecord, TensorLayout::kNCHW>(x, y);
    }
  }

  void backward(const float* dy, float* dx) const {
    const int64_t planes = p.N * p.C, in_plane = p.H * p.W, out_plane = p.out_h() * p.out_w();
    const int64_t step = layout_plane_step(p.layout, p.C);
    // In NHWC a plane's elements are interleaved with the others': clear all first.
    if (step != 1) std::fill(dx, dx + planes * in_plane, 0.0f);
#pragma omp parallel for schedule(static) num_threads(threads) if (planes * in_plane > kParallelMin)
    for (int64_t plane = 0; plane < planes; ++plane) {
      const int64_t n = plane / p.C, c = plane % p.C;
      float* dxp = dx + layout_plane_base(p.layout, n, c, p.C, in_plane);
      const float* dyp = dy + layout_plane_base(p.layout, n, c, p.C, out_plane);
      const int32_t* ap = argmax.data() + plane * out_plane;
      if (step == 1) std::fill(dxp, dxp + in_plane, 0.0f);
      for (int64_t o = 0; o < out_plane; ++o) dxp[ap[o] * step] += dyp[o * step];
    }
  }
};

MaxPool2D::MaxPool2D(const CpuEngine& engine, const Pool2DParams& params)
    : impl_(std::make_unique<Impl>(engine, params)) {}
MaxPool2D::~MaxPool2D() = default;
MaxPool2D::MaxPool2D(MaxPool2D&&) noexcept = default;
MaxPool2D& MaxPool2D::operator=(MaxPool2D&&) noexcept = default;

const Pool2DParams& MaxPool2D::params() const { return impl_->p; }

void MaxPool2D::forward_training(const void* x, void* y) {
  require_ptr(x, "MaxPool2D", "x");
  require_ptr(y, "MaxPool2D", "y");
  impl_->forward<true>(static_cast<const float*>(x), static_cast<float*>(y));
  impl_->have_argmax = true;
}

void MaxPool2D::forward_inference(const void* x, void* y) {
  require_ptr(x, "MaxPool2D", "x");
  require_ptr(y, "MaxPool2D", "y");
  impl_->forward<false>(static_cast<const float*>(x), static_cast<float*>(y));
}

void MaxPool2D::backward(const void* dy, void* dx) {
  if (!impl_->have_argmax) {
    throw std::logic_error("MaxPool2D: backward before any forward_training");
  }
  require_ptr(dy, "MaxPool2D", "dy");
  require_ptr(dx, "MaxPool2D", "dx");
  impl_->backward(static_cast<const float*>(dy), static_cast<float*>(dx));
}

struct AvgPool2D::Impl {
  Pool2DParams p;
  AvgPoolPrimitives prims;

  static const Pool2DParams& checked(const Pool2DParams& p) {
    validate(p, "AvgPool2D");
    return p;
  }
  Impl(const CpuEngine& engine, const Pool2DParams& params, bool count_include_pad)
      : p(checked(params)),
        prims(engine, p,
              count_include_pad ? dnnl::algorithm::pooling_avg_include_padding
                                : dnnl::algorithm::pooling_avg_exclude_padding) {}
};

AvgPool2D::AvgPool2D(const CpuEngine& engine, const Pool2DParams& params, bool count_include_pad)
    : impl_(std::make_unique<Impl>(engine, params, count_include_pad)) {}
AvgPool2D::~AvgPool2D() = default;
AvgPool2D::AvgPool2D(AvgPool2D&&) noexcept = default;
AvgPool2D& AvgPool2D::operator=(AvgPool2D&&) noexcept = default;

const Pool2DParams& AvgPool2D::params() const { return impl_->p; }

void AvgPool2D::forward(const void* x, void* y) {
  require_ptr(x, "AvgPool2D", "x");
  require_ptr(y, "AvgPool2D", "y");
  impl_->prims.run_forward(x, y);
}

void AvgPool2D::backward(const void* dy, void* dx) {
  require_ptr(dy, "AvgPool2D", "dy");
  require_ptr(dx, "AvgPool2D", "dx");
  impl_->prims.run_backward(dy, dx);
}

GlobalAvgPool2D::GlobalAvgPool2D(const CpuEngine& engine, int64_t N, int64_t C, int64_t H,
                                 int64_t W, TensorLayout layout)
    : threads_(engine.num_threads()), rows_(N * C), plane_(H * W), channels_(C), layout_(layout) {
  require(N > 0 && C > 0 && H > 0 && W > 0, "GlobalAvgPool2D", "N, C, H, W must be positive");
}

void GlobalAvgPool2D::forward(const void* x_data, void* y_data) const {
  const float* x = static_cast<const float*>(x_data);
  float* y = static_cast<float*>(y_data);
  require_ptr(x, "GlobalAvgPool2D", "x");
  require_ptr(y, "GlobalAvgPool2D", "y");
  const float scale = 1.0f / static_cast<float>(plane_);
#pragma omp parallel for schedule(static) num_threads(threads_) if (rows_ * plane_ > kParallelMin)
  for (int64_t r = 0; r < rows_; ++r) {
    const float* row = x + layout_plane_base(layout_, r / channels_, r % channels_, channels_, plane_);
    const int64_t step = layout_plane_step(layout_, channels_);
    float sum = 0.0f;
    for (int64_t i = 0; i < plane_; ++i) sum += row[i * step];
    y[r] = sum * scale;
  }
}

void GlobalAvgPool2D::backward(const void* dy_data, void* dx_data) const {
  const float* dy = static_cast<const float*>(dy_data);
  float* dx = static_cast<float*>(dx_data);
  require_ptr(dy, "GlobalAvgPool2D", "dy");
  require_ptr(dx, "GlobalAvgPool2D", "dx");
  const float scale = 1.0f / static_cast<float>(plane_);
#pragma omp parallel for schedule(static) num_threads(threads_) if (rows_ * plane_ > kParallelMin)
  for (int64_t r = 0; r < rows_; ++r) {
    const float g = dy[r] * scale;
    float* row = dx + layout_plane_base(layout_, r / channels_, r % channels_, channels_, plane_);
    const int64_t step = layout_plane_step(layout_, channels_);
    for (int64_t i = 0; i < plane_; ++i) row[i * step] = g;
  }
}

}  // namespace dt::ops::cpu
