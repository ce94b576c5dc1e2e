#include "ops/cpu/batch_norm.h"

#include <cmath>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>

#include "ops/cpu/scratchpad.h"

namespace dt::ops::cpu {
namespace {

using dnnl::memory;
using tag = memory::format_tag;
using flags = dnnl::normalization_flags;
constexpr auto f32 = memory::data_type::f32;

void require(bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument("BatchNorm: " + what);
}

void require_ptr(const void* ptr, const char* name) {
  require(ptr != nullptr, std::string(name) + " is null");
}

const BatchNormParams& validated(const BatchNormParams& p) {
  require(p.N > 0 && p.C > 0 && p.H > 0 && p.W > 0, "N, C, H, W must be positive");
  require(std::isfinite(p.eps) && p.eps > 0.0f, "eps must be positive");
  require(p.momentum >= 0.0f && p.momentum <= 1.0f, "momentum must be in [0, 1]");
  return p;
}

// Wraps caller pointers without copying; oneDNN's handle API is not
// const-correct but only reads inputs.
void bind(memory& m, const void* data) { m.set_data_handle(const_cast<void*>(data)); }

}  // namespace

struct BatchNorm::Impl {
  BatchNormParams p;
  dnnl::engine engine;
  dnnl::stream stream;
  Scratchpad scratch;
  dnnl::batch_normalization_forward training, inference;
  dnnl::batch_normalization_backward backward;
  memory src, dst, diff_src, diff_dst;
  memory scale, shift, mean, variance, diff_scale, diff_shift;
  // oneDNN 2.6 lists SHIFT among the backward inputs when use_shift is set
  // and refuses to execute without it, though no gradient depends on beta;
  // an owned buffer keeps beta out of the backward interface.
  memory unused_shift;

  Impl(const CpuEngine& eng, const BatchNormParams& params)
      : p(validated(params)), engine(eng.engine()), stream(eng.stream()) {
    // 2-d input is 4-d with unit spatial extent: the same bytes.
    const memory::desc x(memory::dims{p.N, p.C, p.H, p.W}, f32,
                         p.layout == TensorLayout::kNHWC ? tag::nhwc : tag::nchw);
    const memory::desc c(memory::dims{p.C}, f32, tag::x);
    const auto attr = Scratchpad::user_attr();
    const auto affine = flags::use_scale | flags::use_shift;
    const dnnl::batch_normalization_forward::primitive_desc train_pd(
        {dnnl::prop_kind::forward_training, x, p.eps, affine}, attr, engine);
    const dnnl::batch_normalization_forward::primitive_desc infer_pd(
        {dnnl::prop_kind::forward_inference, x, p.eps, affine | flags::use_global_stats}, attr,
        engine);
    const dnnl::batch_normalization_backward::primitive_desc back_pd(
        {dnnl::prop_kind::backward, x, x, p.eps, affine}, attr, engine, train_pd);
    training = dnnl::batch_normalization_forward(train_pd);
    inference = dnnl::batch_normalization_forward(infer_pd);
    backward = dnnl::batch_normalization_backward(back_pd);
    for (memory* m : {&src, &dst, &diff_src, &diff_dst}) *m = memory(x, engine, DNNL_MEMORY_NONE);
    for (memory* m : {&scale, &shift, &mean, &variance, &diff_scale, &diff_shift}) {
      *m = memory(c, engine, DNNL_MEMORY_NONE);
    }
    unused_shift = memory(c, engine);
    scratch.reserve(train_pd);
    scratch.reserve(infer_pd);
    scratch.reserve(back_pd);
    scratch.allocate(engine);
  }
};

BatchNorm::BatchNorm(const CpuEngine& engine, const BatchNormParams& params)
    : impl_(std::make_unique<Impl>(engine, params)) {}
BatchNorm::~BatchNorm() = default;
BatchNorm::BatchNorm(BatchNorm&&) noexcept = default;
BatchNorm& BatchNorm::operator=(BatchNorm&&) noexcept = default;

const BatchNormParams& BatchNorm::params() const { return impl_->p; }

void BatchNorm::forward_training(const void* x, const float* gamma, const float* beta, void* y,
                                 float* saved_mean, float* saved_var, float* running_mean,
                                 float* running_var) {
  Impl& m = *impl_;
  for (auto [ptr, name] : {std::pair<const void*, const char*>{x, "x"}, {gamma, "gamma"},
                           {beta, "beta"}, {y, "y"}, {saved_mean, "saved_mean"},
                           {saved_var, "saved_var"}, {running_mean, "running_mean"},
                           {running_var, "running_var"}}) {
    require_ptr(ptr, name);
  }
  bind(m.src, x);
  bind(m.scale, gamma);
  bind(m.shift, beta);
  m.dst.set_data_handle(y);
  m.mean.set_data_handle(saved_mean);
  m.variance.set_data_handle(saved_var);
  m.training.execute(m.stream, {{DNNL_ARG_SRC, m.src},
                                {DNNL_ARG_SCALE, m.scale},
                                {DNNL_ARG_SHIFT, m.shift},
                                {DNNL_ARG_DST, m.dst},
                                {DNNL_ARG_MEAN, m.mean},
                                {DNNL_ARG_VARIANCE, m.variance},
                                {DNNL_ARG_SCRATCHPAD, m.scratch.memory()}});
  m.stream.wait();

  const int64_t count = m.p.N * m.p.H * m.p.W;
  const float unbias = count > 1 ? static_cast<float>(count) / static_cast<float>(count - 1) : 1.0f;
  const float mom = m.p.momentum;
  for (int64_t c = 0; c < m.p.C; ++c) {
    running_mean[c] = (1.0f - mom) * running_mean[c] + mom * saved_mean[c];
    running_var[c] = (1.0f - mom) * running_var[c] + mom * saved_var[c] * unbias;
  }
}

void BatchNorm::forward_inference(const void* x, const float* gamma, const float* beta,
                                  const float* running_mean, const float* running_var, void* y) {
  Impl& m = *impl_;
  for (auto [ptr, name] : {std::pair<const void*, const char*>{x, "x"}, {gamma, "gamma"},
                           {beta, "beta"}, {running_mean, "running_mean"},
                           {running_var, "running_var"}, {y, "y"}}) {
    require_ptr(ptr, name);
  }
  bind(m.src, x);
  bind(m.scale, gamma);
  bind(m.shift, beta);
  bind(m.mean, running_mean);
  bind(m.variance, running_var);
  m.dst.set_data_handle(y);
  m.inference.execute(m.stream, {{DNNL_ARG_SRC, m.src},
                                 {DNNL_ARG_SCALE, m.scale},
                                 {DNNL_ARG_SHIFT, m.shift},
                                 {DNNL_ARG_MEAN, m.mean},
                                 {DNNL_ARG_VARIANCE, m.variance},
                                 {DNNL_ARG_DST, m.dst},
                                 {DNNL_ARG_SCRATCHPAD, m.scratch.memory()}});
  m.stream.wait();
}

void BatchNorm::backward(const void* x, const void* dy, const float* gamma,
                         const float* saved_mean, const float* saved_var, void* dx,
                         float* dgamma, float* dbeta) {
  Impl& m = *impl_;
  for (auto [ptr, name] : {std::pair<const void*, const char*>{x, "x"}, {dy, "dy"},
                           {gamma, "gamma"}, {saved_mean, "saved_mean"},
                           {saved_var, "saved_var"}, {dx, "dx"}, {dgamma, "dgamma"},
                           {dbeta, "dbeta"}}) {
    require_ptr(ptr, name);
  }
  bind(m.src, x);
  bind(m.diff_dst, dy);
  bind(m.scale, gamma);
  bind(m.mean, saved_mean);
  bind(m.variance, saved_var);
  m.diff_src.set_data_handle(dx);
  m.diff_scale.set_data_handle(dgamma);
  m.diff_shift.set_data_handle(dbeta);
  m.backward.execute(m.stream, {{DNNL_ARG_SRC, m.src},
                                {DNNL_ARG_DIFF_DST, m.diff_dst},
                                {DNNL_ARG_SCALE, m.scale},
                                {DNNL_ARG_SHIFT, m.unused_shift},
                                {DNNL_ARG_MEAN, m.mean},
                                {DNNL_ARG_VARIANCE, m.variance},
                                {DNNL_ARG_DIFF_SRC, m.diff_src},
                                {DNNL_ARG_DIFF_SCALE, m.diff_scale},
                                {DNNL_ARG_DIFF_SHIFT, m.diff_shift},
                                {DNNL_ARG_SCRATCHPAD, m.scratch.memory()}});
  m.stream.wait();
}

}  // namespace dt::ops::cpu
