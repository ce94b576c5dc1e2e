#include "ops/cpu/eltwise.h"

#include <stdexcept>
#include <string>

#include "ops/cpu/scratchpad.h"

namespace dt::ops::cpu {
namespace {

using dnnl::memory;

void require_ptr(const void* ptr, const char* name) {
  if (ptr == nullptr) throw std::invalid_argument(std::string("Eltwise: ") + name + " is null");
}

// The *_use_dst_for_bwd variants compute the same forward and let backward
// read y instead of x.
dnnl::algorithm algorithm_for(Activation kind) {
  switch (kind) {
    case Activation::kRelu:
      return dnnl::algorithm::eltwise_relu_use_dst_for_bwd;
    case Activation::kSigmoid:
      return dnnl::algorithm::eltwise_logistic_use_dst_for_bwd;
    case Activation::kTanh:
      return dnnl::algorithm::eltwise_tanh_use_dst_for_bwd;
  }
  throw std::invalid_argument("Eltwise: unknown activation " +
                              std::to_string(static_cast<int>(kind)));
}

}  // namespace

struct Eltwise::Impl {
  Activation kind;
  int64_t count;
  dnnl::engine engine;
  dnnl::stream stream;
  Scratchpad scratch;
  dnnl::eltwise_forward fwd;
  dnnl::eltwise_backward bwd;
  memory src, dst, diff_src, diff_dst;

  Impl(const CpuEngine& eng, Activation k, int64_t n)
      : kind(k), count(n), engine(eng.engine()), stream(eng.stream()) {
    if (n <= 0) throw std::invalid_argument("Eltwise: count must be positive");
    const dnnl::algorithm algo = algorithm_for(k);
    const memory::desc md({n}, memory::data_type::f32, memory::format_tag::x);
    const auto attr = Scratchpad::user_attr();
    const dnnl::eltwise_forward::primitive_desc fwd_pd(
        {dnnl::prop_kind::forward_training, algo, md, 0.0f, 0.0f}, attr, engine);
    const dnnl::eltwise_backward::primitive_desc bwd_pd({algo, md, md, 0.0f, 0.0f}, attr, engine,
                                                        fwd_pd);
    fwd = dnnl::eltwise_forward(fwd_pd);
    bwd = dnnl::eltwise_backward(bwd_pd);
    for (memory* m : {&src, &dst, &diff_src, &diff_dst}) *m = memory(md, engine, DNNL_MEMORY_NONE);
    scratch.reserve(fwd_pd);
    scratch.reserve(bwd_pd);
    scratch.allocate(engine);
  }
};

Eltwise::Eltwise(const CpuEngine& engine, Activation kind, int64_t count)
    : impl_(std::make_unique<Impl>(engine, kind, count)) {}
Eltwise::~Eltwise() = default;
Eltwise::Eltwise(Eltwise&&) noexcept = default;
Eltwise& Eltwise::operator=(Eltwise&&) noexcept = default;

Activation Eltwise::kind() const { return impl_->kind; }
int64_t Eltwise::count() const { return impl_->count; }

void Eltwise::forward(const void* x, void* y) {
  Impl& m = *impl_;
  require_ptr(x, "x");
  require_ptr(y, "y");
  m.src.set_data_handle(const_cast<void*>(x));
  m.dst.set_data_handle(y);
  m.fwd.execute(m.stream, {{DNNL_ARG_SRC, m.src},
                           {DNNL_ARG_DST, m.dst},
                           {DNNL_ARG_SCRATCHPAD, m.scratch.memory()}});
  m.stream.wait();
}

void Eltwise::backward(const void* y, const void* dy, void* dx) {
  Impl& m = *impl_;
  require_ptr(y, "y");
  require_ptr(dy, "dy");
  require_ptr(dx, "dx");
  m.dst.set_data_handle(const_cast<void*>(y));
  m.diff_dst.set_data_handle(const_cast<void*>(dy));
  m.diff_src.set_data_handle(dx);
  m.bwd.execute(m.stream, {{DNNL_ARG_DST, m.dst},
                           {DNNL_ARG_DIFF_DST, m.diff_dst},
                           {DNNL_ARG_DIFF_SRC, m.diff_src},
                           {DNNL_ARG_SCRATCHPAD, m.scratch.memory()}});
  m.stream.wait();
}

}  // namespace dt::ops::cpu
