#include "ps/transport/request_client.h"

#include <nng/nng.h>
#include <nng/protocol/reqrep0/req.h>

#include <condition_variable>
#include <cstdio>
#include <future>
#include <mutex>
#include <vector>

#include "ps/transport/nng_check.h"
#include "ps/transport/nng_handles.h"

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

struct RequestClient::State {
  // One request slot: an nng context and its aio, reused across requests so a
  // busy client does not open a context per request. Owned by State::all.
  struct PendingRequest {
    State* state = nullptr;
    NngContext ctx;
    Aio aio;
    bool receiving = false;
    std::chrono::steady_clock::time_point deadline;
    std::chrono::milliseconds budget{0};
    Done done;
  };

  std::string url;
  Socket socket;
  std::mutex mutex;
  std::condition_variable connected_cv;
  int pipes = 0;
  bool closed = false;
  std::function<void()> on_disconnect;  // guarded by mutex
  // Requests between acquire() and their nng_ctx_send: close() waits for
  // them, since nng 1.5 may use a context's freed lock when a send races the
  // socket's close (seen as "panic: pthread_mutex_lock" in a heartbeat).
  int sending = 0;
  std::condition_variable sends_done;
  std::vector<std::unique_ptr<PendingRequest>> all;
  std::vector<PendingRequest*> idle;
  core::TrafficCounter traffic;

  static void on_aio(void* arg);
  static void on_pipe_event(nng_pipe pipe, nng_pipe_ev event, void* arg);
  PendingRequest* acquire();  // a free slot; counts the request as sending
  void sent();                // the send was handed to nng
  void finish(PendingRequest* p, std::optional<Error> error, Message reply);
  Error error_for(int rv, const PendingRequest& p);
};

void RequestClient::State::on_pipe_event(nng_pipe, nng_pipe_ev event, void* arg) {
  auto* self = static_cast<State*>(arg);
  std::function<void()> tell;
  {
    std::lock_guard<std::mutex> lock(self->mutex);
    self->pipes += event == NNG_PIPE_EV_ADD_POST ? 1 : -1;
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
    p->ctx = NngContext(ctx);
    nng_aio* aio;
    DT_NNG_CHECK(nng_aio_alloc(&aio, &State::on_aio, p.get()));
    p->aio = Aio(aio);
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
      return Error(error_code_of_nng(rv), "request to " + url + ": " + nng_strerror(rv));
  }
}

void RequestClient::State::finish(PendingRequest* p, std::optional<Error> error, Message reply) {
  Done done = std::move(p->done);
  p->done = nullptr;
  done(std::move(error), std::move(reply));
  std::lock_guard<std::mutex> lock(mutex);
  idle.push_back(p);
}

void RequestClient::State::on_aio(void* arg) {
  auto* p = static_cast<State::PendingRequest*>(arg);
  State* self = p->state;
  const int rv = nng_aio_result(p->aio.get());
  nng_msg* msg = nng_aio_get_msg(p->aio.get());
  nng_aio_set_msg(p->aio.get(), nullptr);
  if (rv != 0) {
    if (msg != nullptr) nng_msg_free(msg);  // a failed send leaves the request with us
    self->finish(p, self->error_for(rv, *p), Message());
    return;
  }
  if (!p->receiving) {
    p->receiving = true;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(p->deadline - std::chrono::steady_clock::now());
    nng_aio_set_timeout(p->aio.get(), static_cast<nng_duration>(std::max<int64_t>(1, left.count())));
    nng_ctx_recv(p->ctx.get(), p->aio.get());
    return;
  }
  self->traffic.received(nng_msg_len(msg));
  self->finish(p, std::nullopt, Message(msg));
}

RequestClient::RequestClient(const std::string& url, std::chrono::milliseconds connect_timeout,
                             size_t max_message_bytes)
    : url_(url), state_(std::make_shared<State>()) {
  State& st = *state_;
  st.url = url;
  nng_socket socket;
  DT_NNG_CHECK(nng_req0_open(&socket));
  st.socket = Socket(socket);
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
  const int rv = nng_dial(socket, url.c_str(), nullptr, NNG_FLAG_NONBLOCK);
  if (rv != 0) throw_nng_error(rv, "dialing " + url);
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
  // Every aio has completed (close() stopped them); free them outside any callback.
  state_->all.clear();
}

void RequestClient::request(Message msg, std::chrono::milliseconds deadline, Done done) {
  if (msg.get() == nullptr) msg = Message::with_capacity(0);
  State::PendingRequest* p;
  try {
    p = state_->acquire();
  } catch (const Error& e) {
    done(e, Message());
    return;
  }
  // Nothing below throws: sent() must follow acquire().
  p->done = std::move(done);
  p->receiving = false;
  p->budget = deadline;
  p->deadline = std::chrono::steady_clock::now() + deadline;
  nng_aio_set_timeout(p->aio.get(), static_cast<nng_duration>(std::max<int64_t>(1, deadline.count())));
  state_->traffic.sent(msg.size());
  nng_aio_set_msg(p->aio.get(), msg.release());
  nng_ctx_send(p->ctx.get(), p->aio.get());
  state_->sent();
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
  std::vector<State::PendingRequest*> requests;
  {
    std::unique_lock<std::mutex> lock(st.mutex);
    if (st.closed) return;
    st.closed = true;
    // Sends already past acquire() reach nng before the socket closes (they
    // then fail with kClosed like any pending request); a send is quick, the
    // wait bounded by it.
    st.sends_done.wait(lock, [&] { return st.sending == 0; });
    for (auto& p : st.all) requests.push_back(p.get());
  }
  // Stop the aios before closing the socket, as RequestServer does: a
  // callback re-arms a receive after its send, and that must not race the
  // socket's teardown. Each pending Done sees kClosed (error_for checks
  // `closed` first, whatever nng reports).
  for (State::PendingRequest* p : requests) p->aio.stop();
  st.socket.close();
  st.connected_cv.notify_all();
}

bool RequestClient::connected() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->pipes > 0;
}

}  // namespace dt::ps
