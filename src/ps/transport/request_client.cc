#include "ps/transport/request_client.h"

#include <nng/nng.h>
#include <nng/protocol/reqrep0/req.h>

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <future>
#include <mutex>
#include <vector>

#include "net/auth_handshake.h"
#include "net/nng_check.h"
#include "net/nng_handles.h"
#include "net/tls_config.h"
#include "ps/transport/request_client_state.h"
#include "ps/transport/superseded_reply.h"

namespace dt::ps {

using core::Error;
using core::ErrorCode;

namespace {

std::string seconds_text(std::chrono::milliseconds ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f s", static_cast<double>(ms.count()) / 1000.0);
  return buf;
}

}  // namespace

void RequestClient::State::on_pipe_event(nng_pipe pipe, nng_pipe_ev event, void* arg) {
  auto* self = static_cast<State*>(arg);
  std::function<void()> tell;
  {
    std::lock_guard<std::mutex> lock(self->mutex);
    self->pipes += event == NNG_PIPE_EV_ADD_POST ? 1 : -1;
    const uint32_t id = nng_pipe_id(pipe) > 0 ? static_cast<uint32_t>(nng_pipe_id(pipe)) : 0;
    if (event == NNG_PIPE_EV_ADD_POST) {
      self->current_pipe = id;
    } else {
      if (self->current_pipe == id) self->current_pipe = 0;
      if (self->proven_pipe == id) self->proven_pipe = 0;
    }
    if (event == NNG_PIPE_EV_REM_POST && !self->closed) tell = self->on_disconnect;
  }
  self->connected_cv.notify_all();
  if (tell) tell();
}

RequestClient::State::PendingRequest* RequestClient::State::acquire() {
  std::lock_guard<std::mutex> lock(mutex);
  if (closed) throw Error(ErrorCode::kClosed, "request to " + url + ": the client is closed");
  ++sending;  // request() ends it with sent()
  if (!idle.empty()) {
    PendingRequest* p = idle.back();
    idle.pop_back();
    return p;
  }
  try {
    auto p = std::make_unique<PendingRequest>();
    p->state = this;
    nng_ctx ctx;
    DT_NNG_CHECK(nng_ctx_open(&ctx, socket.get()));
    p->ctx = net::NngContext(ctx);
    nng_aio* aio;
    DT_NNG_CHECK(nng_aio_alloc(&aio, &State::on_aio, p.get()));
    p->aio = net::Aio(aio);
    all.push_back(std::move(p));
  } catch (...) {
    --sending;
    throw;
  }
  return all.back().get();
}

void RequestClient::State::sent() {
  {
    std::lock_guard<std::mutex> lock(mutex);
    --sending;
  }
  sends_done.notify_all();
}

Error RequestClient::State::error_for(int rv, const PendingRequest& p) {
  {
    // Closing the socket drops its connections first, so a request pending
    // at close() may see a reset rather than NNG_ECLOSED.
    std::lock_guard<std::mutex> lock(mutex);
    if (closed) return Error(ErrorCode::kClosed, "request to " + url + ": the client was closed");
  }
  switch (rv) {
    case NNG_ETIMEDOUT:
      return p.receiving ? Error(ErrorCode::kTimedOut, "no reply from " + url + " within " + seconds_text(p.budget))
                         : Error(ErrorCode::kTimedOut, "could not reach " + url + " within " + seconds_text(p.budget));
    case NNG_ECLOSED:
    case NNG_ECANCELED:
      return Error(ErrorCode::kClosed, "request to " + url + ": the client was closed");
    case NNG_ECONNRESET:
    case NNG_ECONNSHUT:
      return Error(ErrorCode::kNetwork, "connection to " + url + " lost while waiting for the reply (peer gone?)");
    default:
      return Error(net::error_code_of_nng(rv), "request to " + url + ": " + nng_strerror(rv));
  }
}

void RequestClient::State::finish(PendingRequest* p, std::optional<Error> error, Message reply) {
  Done done = std::move(p->done);
  p->done = nullptr;
  p->copy = Message();
  done(std::move(error), std::move(reply));
  std::lock_guard<std::mutex> lock(mutex);
  idle.push_back(p);
}

bool RequestClient::State::resend(PendingRequest* p) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(p->deadline - Clock::now());
  if (left.count() <= 0) return false;
  Message again = p->copy.copy();
  p->receiving = false;
  nng_aio_set_timeout(p->aio.get(), static_cast<nng_duration>(std::max<int64_t>(1, left.count())));
  traffic.sent(again.size());
  nng_aio_set_msg(p->aio.get(), again.release());
  nng_ctx_send(p->ctx.get(), p->aio.get());
  return true;
}

void RequestClient::State::on_aio(void* arg) {
  auto* p = static_cast<State::PendingRequest*>(arg);
  State* self = p->state;
  const int rv = nng_aio_result(p->aio.get());
  nng_msg* msg = nng_aio_get_msg(p->aio.get());
  nng_aio_set_msg(p->aio.get(), nullptr);
  if (rv != 0) {
    if (msg != nullptr) nng_msg_free(msg);  // a failed send leaves the request with us
    // PS_RESEND: no reply in time; the same bytes again.
    if (rv == NNG_ETIMEDOUT && p->receiving && p->copy.get() != nullptr && self->resend(p)) return;
    self->finish(p, self->error_for(rv, *p), Message());
    return;
  }
  if (!p->receiving) {
    p->receiving = true;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(p->deadline - std::chrono::steady_clock::now());
    if (p->copy.get() != nullptr) left = std::min(left, p->resend_after);
    nng_aio_set_timeout(p->aio.get(), static_cast<nng_duration>(std::max<int64_t>(1, left.count())));
    nng_ctx_recv(p->ctx.get(), p->aio.get());
    return;
  }
  self->traffic.received(nng_msg_len(msg));
  Message reply(msg);
  if (p->copy.get() != nullptr && is_superseded_reply(reply)) {
    // The server took a later copy of this request for a newer one
    // (PS_RESEND): send it again at once; the server counts it once.
    if (!self->resend(p)) {
      self->finish(p, Error(ErrorCode::kTimedOut, "no reply from " + self->url + " within " + seconds_text(p->budget)),
                   Message());
    }
    return;
  }
  if (!p->raw && net::is_handshake(reply.data(), reply.size())) {
    // The peer refused this connection (this node lacks the job's secret,
    // or the connection changed before it proved itself).
    std::string reason;
    try {
      reason = net::decode_handshake(reply.data(), reply.size()).reason;
    } catch (const Error& e) {
      reason = e.what();
    }
    self->finish(p, Error(ErrorCode::kUnauthenticated, self->url + " refused the request: " + reason), Message());
    return;
  }
  self->finish(p, std::nullopt, std::move(reply));
}

RequestClient::RequestClient(const std::string& url, std::chrono::milliseconds connect_timeout,
                             size_t max_message_bytes, const net::TransportSecurity& security)
    : url_(url), state_(std::make_shared<State>()) {
  State& st = *state_;
  st.url = url;
  nng_socket socket;
  DT_NNG_CHECK(nng_req0_open(&socket));
  st.socket = net::Socket(socket);
  st.secret = security.secret;
  st.weak_self = state_;
  DT_NNG_CHECK(nng_socket_set_size(socket, NNG_OPT_RECVMAXSZ, max_message_bytes));
  // Never resend a request: a resent push would be summed twice. Without
  // resends nng also fails a pending request at once when its connection
  // drops, instead of waiting for the deadline.
  DT_NNG_CHECK(nng_socket_set_ms(socket, NNG_OPT_REQ_RESENDTIME, NNG_DURATION_INFINITE));
  // Reconnect quickly while a peer starts, without spinning.
  DT_NNG_CHECK(nng_socket_set_ms(socket, NNG_OPT_RECONNMINT, 20));
  DT_NNG_CHECK(nng_socket_set_ms(socket, NNG_OPT_RECONNMAXT, 500));
  DT_NNG_CHECK(nng_pipe_notify(socket, NNG_PIPE_EV_ADD_POST, &State::on_pipe_event, &st));
  DT_NNG_CHECK(nng_pipe_notify(socket, NNG_PIPE_EV_REM_POST, &State::on_pipe_event, &st));
  // Non-blocking: a peer that is not up yet is redialed in the background.
  // With TLS files a tcp URL is dialed as tls+tcp (net/tls_config.h).
  const std::string dial_url = net::url_for_transport(url, security.tls);
  nng_dialer dialer;
  int rv = nng_dialer_create(&dialer, socket, dial_url.c_str());
  if (rv != 0) net::throw_nng_error(rv, "dialing " + dial_url);
  if (net::is_tls_url(dial_url)) net::TlsConfig(net::TlsRole::kClient, security.tls).apply(dialer, dial_url);
  rv = nng_dialer_start(dialer, NNG_FLAG_NONBLOCK);
  if (rv != 0) net::throw_nng_error(rv, "dialing " + dial_url);
  if (connect_timeout.count() > 0) {
    std::unique_lock<std::mutex> lock(st.mutex);
    if (!st.connected_cv.wait_for(lock, connect_timeout, [&] { return st.pipes > 0; })) {
      throw Error(ErrorCode::kTimedOut, "no connection to " + url + " within " + seconds_text(connect_timeout));
    }
  }
}

void RequestClient::on_disconnect(std::function<void()> callback) {
  std::lock_guard<std::mutex> lock(state_->mutex);
  state_->on_disconnect = std::move(callback);
}

RequestClient::~RequestClient() {
  close();
  // The contexts went with the socket (after abandon(): they close on the
  // socket that stays), so only the aios are left to free.
  if (state_->abandoned) state_->socket.release();
  state_->all.clear();
}

void RequestClient::State::send_now(Message msg, Clock::time_point deadline, bool raw, Done done,
                                    std::chrono::milliseconds resend_after) {
  if (msg.get() == nullptr) msg = Message::with_capacity(0);
  PendingRequest* p;
  try {
    p = acquire();
  } catch (const Error& e) {
    done(e, Message());
    return;
  }
  // Nothing below throws: sent() must follow acquire().
  const auto now = Clock::now();
  p->done = std::move(done);
  p->receiving = false;
  p->raw = raw;
  p->resend_after = resend_after;
  if (resend_after.count() > 0) {
    p->copy = msg.copy();
    resent = true;
  }
  p->deadline = deadline;
  p->budget = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now);
  nng_aio_set_timeout(p->aio.get(), static_cast<nng_duration>(std::max<int64_t>(1, p->budget.count())));
  traffic.sent(msg.size());
  nng_aio_set_msg(p->aio.get(), msg.release());
  nng_ctx_send(p->ctx.get(), p->aio.get());
  sent();
}


void RequestClient::request(Message msg, std::chrono::milliseconds deadline, Done done,
                            std::chrono::milliseconds resend_after) {
  State& st = *state_;
  const auto due = State::Clock::now() + deadline;
  if (!st.secret) return st.send_now(std::move(msg), due, false, std::move(done), resend_after);
  bool direct = false;
  bool start = false;
  {
    std::lock_guard<std::mutex> lock(st.mutex);
    if (!st.closed) {
      direct = st.proven_pipe != 0 && st.proven_pipe == st.current_pipe;
      if (!direct) {
        st.held.push_back(State::Held{std::move(msg), due, std::move(done), resend_after});
        start = !st.handshaking;
        st.handshaking = true;
      }
    } else {
      direct = true;  // send_now answers kClosed
    }
  }
  if (direct) return st.send_now(std::move(msg), due, false, std::move(done), resend_after);
  if (start) st.start_handshake();
}

core::Traffic RequestClient::traffic() const { return state_->traffic.read(); }

Message RequestClient::call(Message msg, std::chrono::milliseconds deadline) {
  struct Result {
    std::optional<Error> error;
    Message reply;
  };
  auto promise = std::make_shared<std::promise<Result>>();
  std::future<Result> future = promise->get_future();
  request(std::move(msg), deadline, [promise](std::optional<Error> error, Message reply) {
    promise->set_value(Result{std::move(error), std::move(reply)});
  });
  // nng enforces the deadline; the margin only guards against a lost
  // completion turning into a hang.
  if (future.wait_for(deadline + std::chrono::seconds(5)) != std::future_status::ready) {
    throw Error(ErrorCode::kTimedOut, "no reply from " + url_ + " within " + seconds_text(deadline));
  }
  Result result = future.get();
  if (result.error) throw *result.error;
  return std::move(result.reply);
}

void RequestClient::close() {
  State& st = *state_;
  const std::optional<std::vector<State::PendingRequest*>> requests = st.fail_pending();
  if (!requests) return;
  // nng 1.5.2 fails in one of two ways here, depending on the order:
  //  - Its expiry thread detaches a timed-out aio's cancel function and
  //    calls it outside its lock; when the reply completes the aio
  //    meanwhile, nng_aio_stop returns at once, and the late cancel runs
  //    after nng_close has freed the context and the socket's mutex
  //    ("panic: pthread_mutex_lock: Invalid argument"). nng_aio_free waits
  //    for it, so freeing the aios first avoids that: seen with PS_RESEND's
  //    1 ms timeouts (13 in 300 runs of its test; 0 in 300 with the aios
  //    freed first).
  //  - With the aios freed first, nng_close itself has blocked for good
  //    (3 of about 150 replicated-server chaos runs, in the workers'
  //    closing), never in many hundreds of jobs closing in this order.
  // A timeout racing a reply needs timeouts that short, so the aios go
  // first only for a client that resent.
  if (st.resent) {
    for (State::PendingRequest* p : *requests) p->aio.reset();
  }
  st.socket.close();
  st.connected_cv.notify_all();
}

void RequestClient::abandon() {
  State& st = *state_;
  {
    std::lock_guard<std::mutex> lock(st.mutex);
    if (st.closed) return;
    st.abandoned = true;
  }
  st.fail_pending();
  // The socket may still connect (a stalled peer that wakes): no callback
  // into this client, which may be gone by then.
  nng_pipe_notify(st.socket.get(), NNG_PIPE_EV_ADD_POST, nullptr, nullptr);
  nng_pipe_notify(st.socket.get(), NNG_PIPE_EV_REM_POST, nullptr, nullptr);
  st.connected_cv.notify_all();
}

std::optional<std::vector<RequestClient::State::PendingRequest*>> RequestClient::State::fail_pending() {
  State& st = *this;
  std::vector<State::PendingRequest*> requests;
  std::deque<State::Held> held;
  {
    std::unique_lock<std::mutex> lock(st.mutex);
    if (st.closed) return std::nullopt;
    st.closed = true;
    // Sends already past acquire() reach nng before the socket closes (they
    // then fail with kClosed like any pending request); a send is quick, the
    // wait bounded by it.
    st.sends_done.wait(lock, [&] { return st.sending == 0; });
    for (auto& p : st.all) requests.push_back(p.get());
    held.swap(st.held);
  }
  for (State::Held& h : held) h.done(Error(ErrorCode::kClosed, "request to " + st.url + ": the client was closed"), Message());
  // Stop the aios before closing the socket, as RequestServer does: a
  // callback re-arms a receive after its send, and that must not race the
  // socket's teardown. Each pending Done sees kClosed (error_for checks
  // `closed` first, whatever nng reports).
  for (State::PendingRequest* p : requests) p->aio.stop();
  // A callback running while its aio was stopped may have re-armed it (the
  // receive after a send, a PS_RESEND): nng then drops that operation
  // without calling back. No callback runs any more, so whatever still has
  // its Done is answered here.
  for (State::PendingRequest* p : requests) {
    if (p->done) st.finish(p, Error(ErrorCode::kClosed, "request to " + st.url + ": the client was closed"), Message());
  }
  return requests;
}

bool RequestClient::connected() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->pipes > 0;
}

}  // namespace dt::ps
