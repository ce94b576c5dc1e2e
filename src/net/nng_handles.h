// RAII owners of nng handles: each closes/frees its handle exactly once, in its
// destructor, so no early return or exception leaks a socket, context or aio.
#pragma once

#include <nng/nng.h>

#include <utility>

namespace dt::net {

class Socket {
 public:
  Socket() = default;
  explicit Socket(nng_socket s) : s_(s) {}
  ~Socket() { close(); }
  Socket(Socket&& o) noexcept : s_(std::exchange(o.s_, NNG_SOCKET_INITIALIZER)) {}
  Socket& operator=(Socket&& o) noexcept {
    if (this != &o) {
      close();
      s_ = std::exchange(o.s_, NNG_SOCKET_INITIALIZER);
    }
    return *this;
  }
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
  nng_socket get() const { return s_; }
  bool valid() const { return nng_socket_id(s_) > 0; }
  // Closing completes every pending operation on the socket with NNG_ECLOSED.
  void close() {
    if (valid()) nng_close(s_);
    s_ = NNG_SOCKET_INITIALIZER;
  }
  // Forgets the socket without closing it: it lives until the process ends.
  void release() { s_ = NNG_SOCKET_INITIALIZER; }

 private:
  nng_socket s_ = NNG_SOCKET_INITIALIZER;
};

class NngContext {
 public:
  NngContext() = default;
  explicit NngContext(nng_ctx c) : c_(c) {}
  ~NngContext() { close(); }
  NngContext(NngContext&& o) noexcept : c_(std::exchange(o.c_, NNG_CTX_INITIALIZER)) {}
  NngContext& operator=(NngContext&& o) noexcept {
    if (this != &o) {
      close();
      c_ = std::exchange(o.c_, NNG_CTX_INITIALIZER);
    }
    return *this;
  }
  NngContext(const NngContext&) = delete;
  NngContext& operator=(const NngContext&) = delete;
  nng_ctx get() const { return c_; }
  void close() {
    if (nng_ctx_id(c_) > 0) nng_ctx_close(c_);
    c_ = NNG_CTX_INITIALIZER;
  }

 private:
  nng_ctx c_ = NNG_CTX_INITIALIZER;
};

// nng_aio_free waits for a running callback to return, so an Aio must not be
// destroyed from inside its own callback.
class Aio {
 public:
  Aio() = default;
  explicit Aio(nng_aio* a) : a_(a) {}
  ~Aio() { reset(); }
  Aio(Aio&& o) noexcept : a_(std::exchange(o.a_, nullptr)) {}
  Aio& operator=(Aio&& o) noexcept {
    if (this != &o) {
      reset();
      a_ = std::exchange(o.a_, nullptr);
    }
    return *this;
  }
  Aio(const Aio&) = delete;
  Aio& operator=(const Aio&) = delete;
  nng_aio* get() const { return a_; }
  void stop() {
    if (a_ != nullptr) nng_aio_stop(a_);
  }
  void reset() {
    if (a_ != nullptr) nng_aio_free(a_);
    a_ = nullptr;
  }

 private:
  nng_aio* a_ = nullptr;
};

}  // namespace dt::net
