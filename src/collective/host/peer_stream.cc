#include "collective/host/peer_stream.h"

#include <algorithm>
#include <cstdio>

#include "core/error.h"

namespace dt::collective::host {

using core::Error;
using core::ErrorCode;

PeerStream::PeerStream(nng_stream* stream, int peer, double timeout_s)
    : stream_(stream),
      peer_(peer),
      timeout_(std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::duration<double>(timeout_s))) {
  int rv = nng_aio_alloc(&send_aio_, &PeerStream::on_send, this);
  if (rv == 0) rv = nng_aio_alloc(&recv_aio_, nullptr, nullptr);
  if (rv != 0) {
    if (send_aio_ != nullptr) nng_aio_free(send_aio_);
    nng_stream_free(stream_);
    throw Error(ErrorCode::kOutOfMemory, std::string("host communicator: nng_aio_alloc: ") + nng_strerror(rv));
  }
}

PeerStream::~PeerStream() {
  nng_stream_close(stream_);
  // Stopping waits for a running send callback, which cannot re-post on a
  // closed stream.
  nng_aio_stop(send_aio_);
  nng_aio_stop(recv_aio_);
  nng_aio_free(send_aio_);
  nng_aio_free(recv_aio_);
  nng_stream_free(stream_);
}

void PeerStream::close() {
  closed_here_ = true;
  nng_stream_close(stream_);
}

nng_duration PeerStream::ms_left(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  if (left <= 0) return 0;
  return static_cast<nng_duration>(std::min<int64_t>(left, INT32_MAX));
}

void PeerStream::start_send(const void* head, size_t head_bytes, const void* data, size_t bytes) {
  std::lock_guard<std::mutex> lock(send_mu_);
  send_niov_ = 0;
  if (head_bytes > 0) send_iov_[send_niov_++] = nng_iov{const_cast<void*>(head), head_bytes};
  if (bytes > 0) send_iov_[send_niov_++] = nng_iov{const_cast<void*>(data), bytes};
  send_left_ = head_bytes + bytes;
  send_rv_ = 0;
  send_deadline_ = Clock::now() + timeout_;
  send_busy_ = send_left_ > 0;
  if (send_busy_) post_send_locked();
}

void PeerStream::post_send_locked() {
  const nng_duration ms = ms_left(send_deadline_);
  if (ms == 0) {
    send_rv_ = NNG_ETIMEDOUT;
    send_busy_ = false;
    send_cv_.notify_all();
    return;
  }
  nng_aio_set_iov(send_aio_, send_niov_, send_iov_);
  nng_aio_set_timeout(send_aio_, ms);
  // A send that completes at once still finishes through nng's task queue,
  // so on_send never runs inside this call (send_mu_ is held).
  nng_stream_send(stream_, send_aio_);
}

void PeerStream::on_send(void* arg) {
  auto* self = static_cast<PeerStream*>(arg);
  const int rv = nng_aio_result(self->send_aio_);
  std::lock_guard<std::mutex> lock(self->send_mu_);
  if (rv == 0) {
    size_t sent = nng_aio_count(self->send_aio_);
    self->traffic_.sent(sent);
    self->send_left_ -= sent;
    if (self->send_left_ > 0) {
      unsigned kept = 0;
      for (unsigned i = 0; i < self->send_niov_; ++i) {
        nng_iov iov = self->send_iov_[i];
        const size_t skip = std::min(sent, iov.iov_len);
        sent -= skip;
        iov.iov_buf = static_cast<uint8_t*>(iov.iov_buf) + skip;
        iov.iov_len -= skip;
        if (iov.iov_len > 0) self->send_iov_[kept++] = iov;
      }
      self->send_niov_ = kept;
      self->post_send_locked();
      return;
    }
  }
  self->send_rv_ = rv;
  self->send_busy_ = false;
  self->send_cv_.notify_all();
}

void PeerStream::wait_send(const char* what) {
  std::unique_lock<std::mutex> lock(send_mu_);
  const LinkWatch::Scope noted(send_busy_ ? link_watch_ : nullptr, peer_, what, LinkWatch::Direction::kSend);
  // nng expires the aio at the deadline; the margin only guards against a
  // transport that does not.
  if (!send_cv_.wait_until(lock, send_deadline_ + std::chrono::seconds(1), [&] { return !send_busy_; })) {
    nng_aio_abort(send_aio_, NNG_ETIMEDOUT);
    send_cv_.wait(lock, [&] { return !send_busy_; });
  }
  if (send_rv_ != 0) throw_failure(send_rv_, what, "send to");
}

void PeerStream::start_recv(void* data, size_t bytes) {
  recv_ptr_ = static_cast<uint8_t*>(data);
  recv_left_ = bytes;
  recv_deadline_ = Clock::now() + timeout_;
  recv_posted_ = bytes > 0;
  if (!recv_posted_) return;
  nng_iov iov{recv_ptr_, recv_left_};
  nng_aio_set_iov(recv_aio_, 1, &iov);
  nng_aio_set_timeout(recv_aio_, ms_left(recv_deadline_));
  nng_stream_recv(stream_, recv_aio_);
}

void PeerStream::wait_recv(const char* what) {
  const LinkWatch::Scope noted(recv_posted_ ? link_watch_ : nullptr, peer_, what, LinkWatch::Direction::kReceive);
  while (recv_posted_) {
    nng_aio_wait(recv_aio_);
    const int rv = nng_aio_result(recv_aio_);
    if (rv != 0) {
      recv_posted_ = false;
      throw_failure(rv, what, "receive from");
    }
    const size_t got = nng_aio_count(recv_aio_);
    traffic_.received(got);
    recv_ptr_ += got;
    recv_left_ -= got;
    if (recv_left_ == 0) {
      recv_posted_ = false;
      return;
    }
    const nng_duration ms = ms_left(recv_deadline_);
    if (ms == 0) {
      recv_posted_ = false;
      throw_failure(NNG_ETIMEDOUT, what, "receive from");
    }
    nng_iov iov{recv_ptr_, recv_left_};
    nng_aio_set_iov(recv_aio_, 1, &iov);
    nng_aio_set_timeout(recv_aio_, ms);
    nng_stream_recv(stream_, recv_aio_);
  }
}

void PeerStream::throw_failure(int rv, const char* what, const char* direction) const {
  const std::string who = peer_ >= 0 ? "rank " + std::to_string(peer_) : std::string("an unidentified peer");
  if (rv == NNG_ETIMEDOUT) {
    char seconds[32];
    std::snprintf(seconds, sizeof seconds, "%g", std::chrono::duration<double>(timeout_).count());
    throw Error(ErrorCode::kTimedOut,
                std::string(what) + ": timed out after " + seconds + " s waiting to " + direction + " " + who);
  }
  if (rv == NNG_ECLOSED && closed_here_) {
    throw Error(ErrorCode::kPeerLost, std::string(what) + ": the link to " + who + " was closed on this side");
  }
  if (rv == NNG_ECONNSHUT || rv == NNG_ECONNRESET || rv == NNG_ECLOSED) {
    throw Error(ErrorCode::kPeerLost, std::string(what) + ": " + who + " closed its link");
  }
  throw Error(ErrorCode::kPeerLost,
              std::string(what) + ": the link to " + who + " broke (" + nng_strerror(rv) + ")");
}

}  // namespace dt::collective::host
