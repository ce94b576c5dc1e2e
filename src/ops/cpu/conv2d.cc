#include "ops/cpu/conv2d.h"

#include <stdexcept>
#include <string>
#include <unordered_map>

#include "ops/cpu/layout_bridge.h"
#include "ops/cpu/scratchpad.h"

namespace dt::ops::cpu {
namespace {

using dnnl::memory;
using tag = memory::format_tag;
using Dir = LayoutBridge::Direction;
constexpr auto f32 = memory::data_type::f32;

void require_ptr(const void* ptr, const char* name) {
  if (ptr == nullptr) throw std::invalid_argument(std::string("Conv2D: ") + name + " is null");
}

}  // namespace

struct Conv2D::Impl {
  Conv2DParams p;
  dnnl::engine engine;
  dnnl::stream stream;
  Scratchpad scratch;

  dnnl::convolution_forward fwd;
  dnnl::convolution_backward_data bwd_data;
  dnnl::convolution_backward_weights bwd_weights;

  LayoutBridge fwd_x, fwd_w, fwd_y;
  LayoutBridge bd_dy, bd_w, bd_dx;
  LayoutBridge bw_x, bw_dy, bw_dw;
  memory bias;  // bias and its gradient are 1-d: plain is the only layout
  memory diff_bias;

  Impl(const CpuEngine& eng, const Conv2DParams& params)
      : p(params), engine(eng.engine()), stream(eng.stream()) {
    p.validate();
    const memory::dims x_dims{p.N, p.C, p.H, p.W};
    const memory::dims y_dims{p.N, p.K, p.out_h(), p.out_w()};
    const memory::dims b_dims{p.K};
    const bool grouped = p.groups > 1;
    const memory::dims w_dims =
        grouped ? memory::dims{p.groups, p.K / p.groups, p.C / p.groups, p.R, p.S}
                : memory::dims{p.K, p.C, p.R, p.S};
    // The caller's activations, in either layout; oneDNN's dims stay the
    // logical NCHW and the tag says where each element lives.
    const tag act = p.layout == TensorLayout::kNHWC ? tag::nhwc : tag::nchw;
    const memory::desc x_plain(x_dims, f32, act);
    const memory::desc y_plain(y_dims, f32, act);
    const memory::desc w_plain(w_dims, f32, grouped ? tag::goihw : tag::oihw);
    const memory::desc b_plain(b_dims, f32, tag::x);
    const memory::desc x_any(x_dims, f32, tag::any);
    const memory::desc y_any(y_dims, f32, tag::any);
    const memory::desc w_any(w_dims, f32, tag::any);

    const memory::dims strides{p.stride_h, p.stride_w};
    // oneDNN counts dilation as the gap between taps (0 = dense).
    const memory::dims dilates{p.dilation_h - 1, p.dilation_w - 1};
    const memory::dims pad{p.pad_h, p.pad_w};
    const auto algo = dnnl::algorithm::convolution_direct;
    const auto attr = Scratchpad::user_attr();

    // forward_training, not inference: the backward primitives need it as hint.
    auto make_fwd = [&](const memory::desc& x) {
      const auto desc =
          p.has_bias ? dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, algo, x,
                                                       w_any, b_plain, y_any, strides, dilates,
                                                       pad, pad)
                     : dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, algo, x,
                                                       w_any, y_any, strides, dilates, pad, pad);
      return dnnl::convolution_forward::primitive_desc(desc, attr, engine);
    };
    auto make_bd = [&](const memory::desc& x, const dnnl::convolution_forward::primitive_desc& hint) {
      return dnnl::convolution_backward_data::primitive_desc(
          dnnl::convolution_backward_data::desc(algo, x, w_any, y_any, strides, dilates, pad, pad),
          attr, engine, hint);
    };
    auto make_bw = [&](const memory::desc& x, const dnnl::convolution_forward::primitive_desc& hint) {
      const auto desc =
          p.has_bias ? dnnl::convolution_backward_weights::desc(algo, x, w_any, b_plain, y_any,
                                                                strides, dilates, pad, pad)
                     : dnnl::convolution_backward_weights::desc(algo, x, w_any, y_any, strides,
                                                                dilates, pad, pad);
      return dnnl::convolution_backward_weights::primitive_desc(desc, attr, engine, hint);
    };
    auto fwd_pd = make_fwd(x_any);
    auto bd_pd = make_bd(x_any, fwd_pd);
    auto bw_pd = make_bw(x_any, fwd_pd);
    // With few input channels (a network's first layer) a blocked layout pads
    // C up to the SIMD width, multiplying the work; the plain-layout kernels
    // are then faster (measured 2-5x on the LeNet and CIFAR stems).
    auto pads_channels = [&](const memory::desc& d) { return d.data.padded_dims[1] >= 2 * p.C; };
    if (pads_channels(fwd_pd.src_desc()) || pads_channels(bd_pd.diff_src_desc()) ||
        pads_channels(bw_pd.src_desc())) {
      fwd_pd = make_fwd(x_plain);
      bd_pd = make_bd(x_plain, fwd_pd);
      bw_pd = make_bw(x_plain, fwd_pd);
    }

    fwd = dnnl::convolution_forward(fwd_pd);
    bwd_data = dnnl::convolution_backward_data(bd_pd);
    bwd_weights = dnnl::convolution_backward_weights(bw_pd);

    fwd_x = LayoutBridge(engine, x_plain, fwd_pd.src_desc(), Dir::kInput);
    fwd_w = LayoutBridge(engine, w_plain, fwd_pd.weights_desc(), Dir::kInput);
    fwd_y = LayoutBridge(engine, y_plain, fwd_pd.dst_desc(), Dir::kOutput);
    bd_dy = LayoutBridge(engine, y_plain, bd_pd.diff_dst_desc(), Dir::kInput);
    bd_w = LayoutBridge(engine, w_plain, bd_pd.weights_desc(), Dir::kInput);
    bd_dx = LayoutBridge(engine, x_plain, bd_pd.diff_src_desc(), Dir::kOutput);
    bw_x = LayoutBridge(engine, x_plain, bw_pd.src_desc(), Dir::kInput);
    bw_dy = LayoutBridge(engine, y_plain, bw_pd.diff_dst_desc(), Dir::kInput);
    bw_dw = LayoutBridge(engine, w_plain, bw_pd.diff_weights_desc(), Dir::kOutput);
    bias = memory(b_plain, engine, DNNL_MEMORY_NONE);
    diff_bias = memory(b_plain, engine, DNNL_MEMORY_NONE);

    scratch.reserve(fwd_pd);
    scratch.reserve(bd_pd);
    scratch.reserve(bw_pd);
    scratch.allocate(engine);
  }
};

Conv2D::Conv2D(const CpuEngine& engine, const Conv2DParams& params)
    : impl_(std::make_unique<Impl>(engine, params)) {}
Conv2D::~Conv2D() = default;
Conv2D::Conv2D(Conv2D&&) noexcept = default;
Conv2D& Conv2D::operator=(Conv2D&&) noexcept = default;

const Conv2DParams& Conv2D::params() const { return impl_->p; }

void Conv2D::forward(const void* x, const void* w, const float* b, void* y) {
  Impl& m = *impl_;
  require_ptr(x, "x");
  require_ptr(w, "w");
  require_ptr(y, "y");
  std::unordered_map<int, memory> args{
      {DNNL_ARG_SRC, m.fwd_x.input(x, m.stream)},
      {DNNL_ARG_WEIGHTS, m.fwd_w.input(w, m.stream)},
      {DNNL_ARG_DST, m.fwd_y.output(y)},
      {DNNL_ARG_SCRATCHPAD, m.scratch.memory()},
  };
  if (m.p.has_bias) {
    require_ptr(b, "b");
    m.bias.set_data_handle(const_cast<float*>(b));
    args.emplace(DNNL_ARG_BIAS, m.bias);
  }
  m.fwd.execute(m.stream, args);
  m.fwd_y.commit(m.stream);
  m.stream.wait();
}

void Conv2D::backward_data(const void* dy, const void* w, void* dx) {
  Impl& m = *impl_;
  require_ptr(dy, "dy");
  require_ptr(w, "w");
  require_ptr(dx, "dx");
  m.bwd_data.execute(m.stream, {{DNNL_ARG_DIFF_DST, m.bd_dy.input(dy, m.stream)},
                                {DNNL_ARG_WEIGHTS, m.bd_w.input(w, m.stream)},
                                {DNNL_ARG_DIFF_SRC, m.bd_dx.output(dx)},
                                {DNNL_ARG_SCRATCHPAD, m.scratch.memory()}});
  m.bd_dx.commit(m.stream);
  m.stream.wait();
}

void Conv2D::backward_weights(const void* x, const void* dy, void* dw, float* db) {
  Impl& m = *impl_;
  require_ptr(x, "x");
  require_ptr(dy, "dy");
  require_ptr(dw, "dw");
  std::unordered_map<int, memory> args{
      {DNNL_ARG_SRC, m.bw_x.input(x, m.stream)},
      {DNNL_ARG_DIFF_DST, m.bw_dy.input(dy, m.stream)},
      {DNNL_ARG_DIFF_WEIGHTS, m.bw_dw.output(dw)},
      {DNNL_ARG_SCRATCHPAD, m.scratch.memory()},
  };
  if (m.p.has_bias) {
    require_ptr(db, "db");
    m.diff_bias.set_data_handle(db);
    args.emplace(DNNL_ARG_DIFF_BIAS, m.diff_bias);
  }
  m.bwd_weights.execute(m.stream, args);
  m.bw_dw.commit(m.stream);
  m.stream.wait();
}

}  // namespace dt::ops::cpu
