#include "ops/cpu/inner_product.h"

#include <stdexcept>
#include <string>
#include <unordered_map>

#include "ops/cpu/scratchpad.h"

namespace dt::ops::cpu {
namespace {

using dnnl::memory;
using tag = memory::format_tag;
constexpr auto f32 = memory::data_type::f32;

void require(bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument("InnerProduct: " + what);
}

void require_ptr(const void* ptr, const char* name) {
  require(ptr != nullptr, std::string(name) + " is null");
}

const InnerProductParams& validated(const InnerProductParams& p) {
  require(p.N > 0 && p.in > 0 && p.out > 0, "N, in, out must be positive");
  return p;
}

}  // namespace

struct InnerProduct::Impl {
  InnerProductParams p;
  dnnl::engine engine;
  dnnl::stream stream;
  Scratchpad scratch;
  dnnl::inner_product_forward fwd;
  dnnl::inner_product_backward_data bwd_data;
  dnnl::inner_product_backward_weights bwd_weights;
  memory x, y, dx, dy, w, dw, bias, diff_bias;

  Impl(const CpuEngine& eng, const InnerProductParams& params)
      : p(validated(params)), engine(eng.engine()), stream(eng.stream()) {
    const memory::desc x_md({p.N, p.in}, f32, tag::nc);
    const memory::desc y_md({p.N, p.out}, f32, tag::nc);
    // Plain weights, not format_tag::any: at the LeNet shapes (64x800x500,
    // 64x500x10) oneDNN's gemm runs equally fast on both, and plain saves a
    // reorder per call. matmul and OpenBLAS sgemm measured no faster.
    const memory::desc w_md({p.out, p.in}, f32, tag::oi);
    const memory::desc b_md({p.out}, f32, tag::x);
    const auto attr = Scratchpad::user_attr();

    const auto fwd_desc =
        p.has_bias ? dnnl::inner_product_forward::desc(dnnl::prop_kind::forward_training, x_md,
                                                       w_md, b_md, y_md)
                   : dnnl::inner_product_forward::desc(dnnl::prop_kind::forward_training, x_md,
                                                       w_md, y_md);
    const dnnl::inner_product_forward::primitive_desc fwd_pd(fwd_desc, attr, engine);
    const dnnl::inner_product_backward_data::primitive_desc bd_pd({x_md, w_md, y_md}, attr,
                                                                  engine, fwd_pd);
    const auto bw_desc =
        p.has_bias ? dnnl::inner_product_backward_weights::desc(x_md, w_md, b_md, y_md)
                   : dnnl::inner_product_backward_weights::desc(x_md, w_md, y_md);
    const dnnl::inner_product_backward_weights::primitive_desc bw_pd(bw_desc, attr, engine,
                                                                     fwd_pd);
    fwd = dnnl::inner_product_forward(fwd_pd);
    bwd_data = dnnl::inner_product_backward_data(bd_pd);
    bwd_weights = dnnl::inner_product_backward_weights(bw_pd);
    w = memory(w_md, engine, DNNL_MEMORY_NONE);
    dw = memory(w_md, engine, DNNL_MEMORY_NONE);
    x = memory(x_md, engine, DNNL_MEMORY_NONE);
    dx = memory(x_md, engine, DNNL_MEMORY_NONE);
    y = memory(y_md, engine, DNNL_MEMORY_NONE);
    dy = memory(y_md, engine, DNNL_MEMORY_NONE);
    bias = memory(b_md, engine, DNNL_MEMORY_NONE);
    diff_bias = memory(b_md, engine, DNNL_MEMORY_NONE);
    scratch.reserve(fwd_pd);
    scratch.reserve(bd_pd);
    scratch.reserve(bw_pd);
    scratch.allocate(engine);
  }
};

InnerProduct::InnerProduct(const CpuEngine& engine, const InnerProductParams& params)
    : impl_(std::make_unique<Impl>(engine, params)) {}
InnerProduct::~InnerProduct() = default;
InnerProduct::InnerProduct(InnerProduct&&) noexcept = default;
InnerProduct& InnerProduct::operator=(InnerProduct&&) noexcept = default;

const InnerProductParams& InnerProduct::params() const { return impl_->p; }

void InnerProduct::forward(const void* x, const void* w, const float* b, void* y) {
  Impl& m = *impl_;
  require_ptr(x, "x");
  require_ptr(w, "w");
  require_ptr(y, "y");
  m.x.set_data_handle(const_cast<void*>(x));
  m.w.set_data_handle(const_cast<void*>(w));
  m.y.set_data_handle(y);
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, m.x},
                                       {DNNL_ARG_WEIGHTS, m.w},
                                       {DNNL_ARG_DST, m.y},
                                       {DNNL_ARG_SCRATCHPAD, m.scratch.memory()}};
  if (m.p.has_bias) {
    require_ptr(b, "b");
    m.bias.set_data_handle(const_cast<float*>(b));
    args.emplace(DNNL_ARG_BIAS, m.bias);
  }
  m.fwd.execute(m.stream, args);
  m.stream.wait();
}

void InnerProduct::backward_data(const void* dy, const void* w, void* dx) {
  Impl& m = *impl_;
  require_ptr(dy, "dy");
  require_ptr(w, "w");
  require_ptr(dx, "dx");
  m.dy.set_data_handle(const_cast<void*>(dy));
  m.w.set_data_handle(const_cast<void*>(w));
  m.dx.set_data_handle(dx);
  m.bwd_data.execute(m.stream, {{DNNL_ARG_DIFF_DST, m.dy},
                                {DNNL_ARG_WEIGHTS, m.w},
                                {DNNL_ARG_DIFF_SRC, m.dx},
                                {DNNL_ARG_SCRATCHPAD, m.scratch.memory()}});
  m.stream.wait();
}

void InnerProduct::backward_weights(const void* x, const void* dy, void* dw, float* db) {
  Impl& m = *impl_;
  require_ptr(x, "x");
  require_ptr(dy, "dy");
  require_ptr(dw, "dw");
  m.x.set_data_handle(const_cast<void*>(x));
  m.dy.set_data_handle(const_cast<void*>(dy));
  m.dw.set_data_handle(dw);
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, m.x},
                                       {DNNL_ARG_DIFF_DST, m.dy},
                                       {DNNL_ARG_DIFF_WEIGHTS, m.dw},
                                       {DNNL_ARG_SCRATCHPAD, m.scratch.memory()}};
  if (m.p.has_bias) {
    require_ptr(db, "db");
    m.diff_bias.set_data_handle(db);
    args.emplace(DNNL_ARG_DIFF_BIAS, m.diff_bias);
  }
  m.bwd_weights.execute(m.stream, args);
  m.stream.wait();
}

}  // namespace dt::ops::cpu
