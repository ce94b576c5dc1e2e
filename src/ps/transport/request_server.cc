#include "ps/transport/request_server.h"

#include <nng/nng.h>
#include <nng/protocol/reqrep0/rep.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>
#include <utility>

#include "ps/transport/frame.h"
#include "ps/transport/nng_check.h"
#include "ps/transport/nng_handles.h"

namespace dt::ps {

using core::Error;
using core::ErrorCode;

namespace {

// tcp://host:0 with the port the listener got.
std::string with_bound_port(const std::string& url, nng_listener listener) {
  if (url.rfind("tcp", 0) != 0) return url;
  int port = 0;
  if (nng_listener_get_int(listener, NNG_OPT_TCP_BOUND_PORT, &port) != 0) return url;
  const size_t colon = url.rfind(':');
  if (colon == std::string::npos) return url;
  return url.substr(0, colon + 1) + std::to_string(port);
}

}  // namespace

struct RequestServer::State {
  // One nng context: receives a request, waits for its reply, sends it,
  // receives the next. `closing` stops a late reply from sending after close.
  struct Slot {
    State* state = nullptr;
    NngContext ctx;
    Aio aio;
    std::mutex mutex;
    bool closing = false;
  };

  // The Reply handed to the handler: once only, and a no-op after the server
  // is gone (it holds the state weakly, and checks `closing` under the slot's
  // mutex so no send starts after the destructor began).
  struct ReplyToken {
    std::weak_ptr<State> state;
    Slot* slot;
    std::atomic<bool> used{false};
  };

  Socket socket;
  std::vector<std::unique_ptr<Slot>> slots;
  Handler handler;
  PipeClosed on_pipe_closed;
  std::atomic<bool> stopping{false};
  std::vector<std::string> bound;

  std::mutex queue_mutex;
  std::condition_variable queue_cv;
  std::deque<std::pair<Message, State::Slot*>> queue;
  std::vector<std::thread> threads;
  std::weak_ptr<State> weak_self;

  static void on_aio(void* arg);
  static void on_pipe_event(nng_pipe pipe, nng_pipe_ev event, void* arg);
  void receive(Slot& slot) { nng_ctx_recv(slot.ctx.get(), slot.aio.get()); }
  void run_handlers();
  void dispatch(Message request, Slot* slot);
};


void RequestServer::State::on_aio(void* arg) {
  auto* slot = static_cast<State::Slot*>(arg);
  State* self = slot->state;
  const int rv = nng_aio_result(slot->aio.get());
  nng_msg* msg = nng_aio_get_msg(slot->aio.get());
  // The aio carries either a finished send (nng took the message on success;
  // on failure it is still ours to free) or a finished receive (msg is the
  // request, or nullptr on failure).
  if (rv != 0 || self->stopping.load()) {
    if (msg != nullptr) {
      nng_aio_set_msg(slot->aio.get(), nullptr);
      nng_msg_free(msg);
    }
    if (rv == NNG_ECLOSED || self->stopping.load()) return;
    self->receive(*slot);
    return;
  }
  if (msg == nullptr) {  // a send completed: the context is free again
    self->receive(*slot);
    return;
  }
  nng_aio_set_msg(slot->aio.get(), nullptr);
  {
    std::lock_guard<std::mutex> lock(self->queue_mutex);
    self->queue.emplace_back(Message(msg), slot);
  }
  self->queue_cv.notify_one();
}

void RequestServer::State::on_pipe_event(nng_pipe pipe, nng_pipe_ev, void* arg) {
  auto* self = static_cast<State*>(arg);
  if (self->stopping.load() || !self->on_pipe_closed) return;
  const int id = nng_pipe_id(pipe);
  if (id > 0) self->on_pipe_closed(static_cast<uint32_t>(id));
}

void RequestServer::State::run_handlers() {
  for (;;) {
    std::pair<Message, State::Slot*> item;
    {
      std::unique_lock<std::mutex> lock(queue_mutex);
      queue_cv.wait(lock, [&] { return stopping.load() || !queue.empty(); });
      if (stopping.load()) return;
      item = std::move(queue.front());
      queue.pop_front();
    }
    dispatch(std::move(item.first), item.second);
  }
}

void RequestServer::State::dispatch(Message request, Slot* slot) {
  auto token = std::make_shared<ReplyToken>();
  token->state = weak_self;
  token->slot = slot;
  Reply reply = [token](Message message) {
    if (token->used.exchange(true)) return;
    std::shared_ptr<State> state = token->state.lock();
    if (!state) return;
    Slot& s = *token->slot;
    std::lock_guard<std::mutex> lock(s.mutex);
    if (s.closing) return;
    // nng sends messages, never "nothing": an empty reply is an empty body.
    if (message.get() == nullptr) message = Message::with_capacity(0);
    nng_aio_set_msg(s.aio.get(), message.release());
    nng_ctx_send(s.ctx.get(), s.aio.get());
  };
  try {
    handler(std::move(request), reply);
  } catch (const Error& e) {
    std::fprintf(stderr, "disttrain: request handler failed: %s\n", e.what());
    reply(make_error_reply(e.code(), e.what()));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "disttrain: request handler failed: %s\n", e.what());
    reply(make_error_reply(ErrorCode::kInternal, std::string("internal error: ") + e.what()));
  }
}

RequestServer::RequestServer(const std::vector<std::string>& urls, int concurrency, Handler handler,
                             size_t max_message_bytes, PipeClosed on_pipe_closed)
    : state_(std::make_shared<State>()) {
  if (concurrency < 1) throw Error(ErrorCode::kInvalidArgument, "RequestServer: concurrency must be at least 1");
  if (urls.empty()) throw Error(ErrorCode::kInvalidArgument, "RequestServer: no URL to listen on");
  if (!handler) throw Error(ErrorCode::kInvalidArgument, "RequestServer: no handler");
  State& st = *state_;
  st.weak_self = state_;
  st.handler = std::move(handler);
  st.on_pipe_closed = std::move(on_pipe_closed);
  nng_socket socket;
  DT_NNG_CHECK(nng_rep0_open(&socket));
  st.socket = Socket(socket);
  // Inherited by every listener created below.
  DT_NNG_CHECK(nng_socket_set_size(socket, NNG_OPT_RECVMAXSZ, max_message_bytes));
  if (st.on_pipe_closed) {
    DT_NNG_CHECK(nng_pipe_notify(socket, NNG_PIPE_EV_REM_POST, &State::on_pipe_event, &st));
  }
  for (const std::string& url : urls) {
    nng_listener listener;
    const int rv = nng_listen(socket, url.c_str(), &listener, 0);
    if (rv != 0) throw_nng_error(rv, "listening on " + url);
    st.bound.push_back(with_bound_port(url, listener));
  }
  const unsigned cores = std::max(2u, std::thread::hardware_concurrency());
  const int threads = std::min<int>(concurrency, static_cast<int>(cores));
  for (int i = 0; i < concurrency; ++i) {
    auto slot = std::make_unique<State::Slot>();
    slot->state = &st;
    nng_ctx ctx;
    DT_NNG_CHECK(nng_ctx_open(&ctx, socket));
    slot->ctx = NngContext(ctx);
    nng_aio* aio;
    DT_NNG_CHECK(nng_aio_alloc(&aio, &State::on_aio, slot.get()));
    slot->aio = Aio(aio);
    st.slots.push_back(std::move(slot));
  }
  for (int i = 0; i < threads; ++i) st.threads.emplace_back([&st] { st.run_handlers(); });
  for (auto& slot : st.slots) st.receive(*slot);
}

RequestServer::~RequestServer() {
  State& st = *state_;
  for (auto& slot : st.slots) {
    std::lock_guard<std::mutex> lock(slot->mutex);
    slot->closing = true;
  }
  {
    std::lock_guard<std::mutex> lock(st.queue_mutex);
    st.stopping = true;
  }
  st.queue_cv.notify_all();
  // Stop every aio before closing the socket: nng_aio_stop waits for a
  // running completion callback and keeps it from re-arming a receive, so no
  // nng_ctx_recv can race the socket's teardown (nng 1.5.2 panicked on a
  // destroyed mutex when a callback re-armed while nng_close ran).
  for (auto& slot : st.slots) slot->aio.stop();
  st.socket.close();
  for (auto& thread : st.threads) thread.join();
  // Requests received but not handled: dropped with the queue; their
  // requesters see the closed connection.
  st.queue.clear();
}

std::vector<std::string> RequestServer::bound_urls() const { return state_->bound; }

}  // namespace dt::ps
