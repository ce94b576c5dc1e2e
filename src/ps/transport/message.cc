#include "ps/transport/message.h"

#include <nng/nng.h>

#include <cstring>
#include <utility>

#include "net/nng_check.h"

namespace dt::ps {

Message::~Message() {
  if (msg_ != nullptr) nng_msg_free(msg_);
}

Message& Message::operator=(Message&& other) noexcept {
  if (this != &other) {
    if (msg_ != nullptr) nng_msg_free(msg_);
    msg_ = other.release();
  }
  return *this;
}

Message Message::copy() const {
  Message out = with_capacity(size());
  if (size() > 0) std::memcpy(out.grow(size()), data(), size());
  return out;
}

Message Message::with_capacity(size_t capacity) {
  nng_msg* msg = nullptr;
  DT_NNG_CHECK(nng_msg_alloc(&msg, 0));
  Message out(msg);
  DT_NNG_CHECK(nng_msg_reserve(msg, capacity));
  return out;
}

uint8_t* Message::grow(size_t n) {
  if (msg_ == nullptr) DT_NNG_CHECK(nng_msg_alloc(&msg_, 0));
  const size_t old_size = nng_msg_len(msg_);
  // nng_msg_realloc keeps the body and only reallocates beyond the reserve.
  DT_NNG_CHECK(nng_msg_realloc(msg_, old_size + n));
  return static_cast<uint8_t*>(nng_msg_body(msg_)) + old_size;
}

const uint8_t* Message::data() const {
  return msg_ == nullptr ? nullptr : static_cast<const uint8_t*>(nng_msg_body(msg_));
}

uint8_t* Message::mutable_data() {
  return msg_ == nullptr ? nullptr : static_cast<uint8_t*>(nng_msg_body(msg_));
}

size_t Message::size() const { return msg_ == nullptr ? 0 : nng_msg_len(msg_); }

void Message::clear() {
  if (msg_ != nullptr) nng_msg_clear(msg_);
}

uint32_t Message::pipe_id() const {
  if (msg_ == nullptr) return 0;
  const int id = nng_pipe_id(nng_msg_get_pipe(msg_));
  return id > 0 ? static_cast<uint32_t>(id) : 0;
}

}  // namespace dt::ps
