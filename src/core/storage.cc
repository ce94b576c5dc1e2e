#include "core/storage.h"

#include "core/error.h"

namespace dt::core {

Storage::Storage(std::shared_ptr<Context> ctx, size_t bytes, bool zero)
    : context_(std::move(ctx)), data_(context_->allocate(bytes)), bytes_(bytes) {
  if (zero) {
    try {
      context_->fill_zero(data_, bytes_);
    } catch (...) {
      context_->deallocate(data_, bytes_);
      throw;
    }
  }
}

Storage::~Storage() { context_->deallocate(data_, bytes_); }

}  // namespace dt::core
