// One message on the wire: an owned nng_msg. Move-only, so exactly one owner
// sends or frees it; the body is built in place (one copy-in per send is the
// floor with nng, see TRANSPORT-FACTS) and read in place after receipt.
#pragma once

#include <cstddef>
#include <cstdint>

struct nng_msg;

namespace dt::ps {

class Message {
 public:
  Message() = default;
  // Takes ownership of msg (which may be nullptr: an empty Message).
  explicit Message(nng_msg* msg) noexcept : msg_(msg) {}
  ~Message();
  Message(Message&& other) noexcept : msg_(other.release()) {}
  Message& operator=(Message&& other) noexcept;
  Message(const Message&) = delete;
  Message& operator=(const Message&) = delete;

  // An empty body with room for capacity bytes, so grow() up to that does not
  // reallocate. Throws core::Error(kOutOfMemory) when nng cannot allocate.
  static Message with_capacity(size_t capacity);

  // A new message with the same body (for what must be sent again or kept
  // after this one is sent). Throws like with_capacity.
  Message copy() const;

  // Appends n bytes (uninitialised) to the body and returns them. The pointer
  // stays valid until the next grow()/clear(). Allocates the nng_msg on the
  // first call of a default-constructed Message.
  uint8_t* grow(size_t n);

  const uint8_t* data() const;
  uint8_t* mutable_data();
  size_t size() const;
  bool empty() const { return size() == 0; }
  // Drops the body, keeps the allocation for reuse.
  void clear();

  // The id of the nng pipe (connection) a received message arrived on; 0 for
  // messages built locally.
  uint32_t pipe_id() const;

  // Gives up ownership (nullptr for an empty Message).
  nng_msg* release() noexcept {
    nng_msg* msg = msg_;
    msg_ = nullptr;
    return msg;
  }
  nng_msg* get() const noexcept { return msg_; }

 private:
  nng_msg* msg_ = nullptr;
};

}  // namespace dt::ps
