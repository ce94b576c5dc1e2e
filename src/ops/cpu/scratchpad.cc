#include "ops/cpu/scratchpad.h"

#include <algorithm>

namespace dt::ops::cpu {

dnnl::primitive_attr Scratchpad::user_attr() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

void Scratchpad::reserve(const dnnl::primitive_desc_base& pd) {
  bytes_ = std::max(bytes_, pd.scratchpad_desc().get_size());
}

void Scratchpad::allocate(const dnnl::engine& engine) {
  // A zero-sized memory is still a valid argument, so callers need not
  // special-case primitives without scratch needs.
  const auto size = static_cast<dnnl::memory::dim>(std::max<size_t>(bytes_, 1));
  memory_ = dnnl::memory({{size}, dnnl::memory::data_type::u8, dnnl::memory::format_tag::x},
                         engine);
}

}  // namespace dt::ops::cpu
