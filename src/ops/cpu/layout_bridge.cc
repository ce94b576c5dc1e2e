#include "ops/cpu/layout_bridge.h"

namespace dt::ops::cpu {

LayoutBridge::LayoutBridge(const dnnl::engine& engine, const dnnl::memory::desc& plain,
                           const dnnl::memory::desc& internal, Direction direction)
    : user_(plain, engine, DNNL_MEMORY_NONE), reorders_(plain != internal) {
  if (!reorders_) return;
  internal_ = dnnl::memory(internal, engine);
  reorder_ = direction == Direction::kInput ? dnnl::reorder(user_, internal_)
                                            : dnnl::reorder(internal_, user_);
}

const dnnl::memory& LayoutBridge::input(const void* data, const dnnl::stream& stream) {
  // oneDNN's handle API is not const-correct; a reorder source is only read.
  user_.set_data_handle(const_cast<void*>(data));
  if (!reorders_) return user_;
  reorder_.execute(stream, user_, internal_);
  return internal_;
}

const dnnl::memory& LayoutBridge::output(void* data) {
  user_.set_data_handle(data);
  return reorders_ ? internal_ : user_;
}

void LayoutBridge::commit(const dnnl::stream& stream) {
  if (reorders_) reorder_.execute(stream, internal_, user_);
}

}  // namespace dt::ops::cpu
