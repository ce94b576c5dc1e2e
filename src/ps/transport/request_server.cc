#include "ps/transport/request_server.h"

#include <nng/nng.h>
#include <nng/protocol/reqrep0/rep.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <exception>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <utility>

#include "net/nng_check.h"
#include "net/nng_handles.h"
#include "net/tls_config.h"
#include "ps/transport/connection_authenticator.h"
#include "ps/transport/frame.h"
#include "ps/transport/rate_limited_log.h"

namespace dt::ps {

using core::Error;
using core::ErrorCode;

namespace {

// tcp://host:0 (or tls+tcp://) with the port the listener got.
std::string with_bound_port(const std::string& url, nng_listener listener) {
  if (!net::is_tcp_url(url)) return url;
  int port = 0;
  if (nng_listener_get_int(listener, NNG_OPT_TCP_BOUND_PORT, &port) != 0) return url;
  const size_t colon = url.rfind(':');
  if (colon == std::string::npos) return url;
  return url.substr(0, colon + 1) + std::to_string(port);
}

// Where a connection comes from, for the log line of a refused one.
std::string peer_address(uint32_t pipe_id) {
  nng_pipe pipe;
  pipe.id = pipe_id;
  nng_sockaddr sa{};
  if (nng_pipe_get_addr(pipe, NNG_OPT_REMADDR, &sa) != 0) return "connection " + std::to_string(pipe_id);
  char text[160];
  switch (sa.s_family) {
    case NNG_AF_INET: {
      const auto* a = reinterpret_cast<const uint8_t*>(&sa.s_in.sa_addr);
      const auto* p = reinterpret_cast<const uint8_t*>(&sa.s_in.sa_port);
      std::snprintf(text, sizeof text, "%u.%u.%u.%u:%u", a[0], a[1], a[2], a[3], (p[0] << 8) | p[1]);
      return text;
    }
    case NNG_AF_IPC: return std::string("ipc://") + sa.s_ipc.sa_path;
    case NNG_AF_INPROC: return std::string("inproc://") + sa.s_inproc.sa_name;
    default: return "connection " + std::to_string(pipe_id);
  }
}

std::string seconds(double s) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f s", s);
  return text;
}

}  // namespace

struct RequestServer::State {
  using Clock = std::chrono::steady_clock;

  // One nng context: receives a request, waits for its reply, sends it, then
  // receives again or goes idle. `closing` stops a late reply from sending
  // after close.
  struct Slot {
    State* state = nullptr;
    net::NngContext ctx;
    net::Aio aio;
    std::mutex mutex;
    bool closing = false;
    bool receiving = false;  // guarded by State::pool_mutex
  };

  // The Reply handed to the handler: once only, and a no-op after the server
  // is gone (it holds the state weakly, and checks `closing` under the slot's
  // mutex so no send starts after the destructor began).
  struct ReplyToken {
    std::weak_ptr<State> state;
    Slot* slot = nullptr;
    uint32_t pipe = 0;
    bool counted = false;  // holds one of its connection's per_connection places
    std::atomic<bool> used{false};
    // Where it sits in `deadlines` (valid while `has_deadline`; pool_mutex).
    std::multimap<Clock::time_point, std::weak_ptr<ReplyToken>>::iterator deadline;
    bool has_deadline = false;
  };

  net::Socket socket;
  Handler handler;
  Quick quick;  // null: the pool handles every request
  std::atomic<uint64_t> on_receipt{0};
  std::atomic<uint64_t> by_pool{0};
  // With a job secret: which connections have proven they hold it.
  std::unique_ptr<ConnectionAuthenticator> authenticator;
  PipeClosed on_pipe_closed;
  ConnectionPolicy policy;
  int receivers = 1;
  std::atomic<bool> stopping{false};
  std::vector<std::string> bound;
  RateLimitedLog log{"disttrain request server"};

  // The context pool and what each connection holds.
  std::mutex pool_mutex;
  std::vector<std::unique_ptr<Slot>> slots;  // never shrinks: tokens point into it
  std::vector<Slot*> idle;
  int receiving = 0;
  std::unordered_map<uint32_t, int> in_flight;  // per pipe id
  std::multimap<Clock::time_point, std::weak_ptr<ReplyToken>> deadlines;
  std::condition_variable deadline_cv;
  std::thread deadline_thread;

  std::mutex queue_mutex;
  std::condition_variable queue_cv;
  std::deque<std::pair<Message, State::Slot*>> queue;
  std::vector<std::thread> threads;
  std::weak_ptr<State> weak_self;
  core::TrafficCounter traffic;

  static void on_aio(void* arg);
  static void on_pipe_event(nng_pipe pipe, nng_pipe_ev event, void* arg);
  // Opens or reuses contexts until `receivers` are receiving.
  void replenish();
  // A context whose reply went out (or failed): receive again or go idle.
  void release(Slot& slot);
  void run_handlers();
  // Whether request is handled on the nng thread that received it.
  bool handled_here(const Message& request);
  void dispatch(Message request, Slot* slot);
  static void send_reply(const std::shared_ptr<ReplyToken>& token, Message message);
  void expire_deadlines();
  Clock::duration reply_deadline() const {
    return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(policy.reply_deadline_s));
  }
};

void RequestServer::State::replenish() {
  std::vector<Slot*> start;
  {
    std::lock_guard<std::mutex> lock(pool_mutex);
    if (stopping.load()) return;
    while (receiving < receivers) {
      Slot* slot = nullptr;
      if (!idle.empty()) {
        slot = idle.back();
        idle.pop_back();
      } else {
        auto created = std::make_unique<Slot>();
        created->state = this;
        nng_ctx ctx;
        if (nng_ctx_open(&ctx, socket.get()) != 0) break;  // closing, or out of memory: retried next time
        created->ctx = net::NngContext(ctx);
        nng_aio* aio;
        if (nng_aio_alloc(&aio, &State::on_aio, created.get()) != 0) break;
        created->aio = net::Aio(aio);
        slot = created.get();
        slots.push_back(std::move(created));
      }
      slot->receiving = true;
      ++receiving;
      start.push_back(slot);
    }
  }
  for (Slot* slot : start) nng_ctx_recv(slot->ctx.get(), slot->aio.get());
}

void RequestServer::State::release(Slot& slot) {
  {
    std::lock_guard<std::mutex> lock(pool_mutex);
    if (stopping.load()) return;
    if (receiving >= receivers) {
      idle.push_back(&slot);
      return;
    }
    slot.receiving = true;
    ++receiving;
  }
  nng_ctx_recv(slot.ctx.get(), slot.aio.get());
}

void RequestServer::State::on_aio(void* arg) {
  auto* slot = static_cast<State::Slot*>(arg);
  State* self = slot->state;
  const int rv = nng_aio_result(slot->aio.get());
  nng_msg* msg = nng_aio_get_msg(slot->aio.get());
  bool was_receiving = false;
  {
    std::lock_guard<std::mutex> lock(self->pool_mutex);
    was_receiving = slot->receiving;
  }
  // The aio carries either a finished send (nng took the message on success;
  // on failure it is still ours to free) or a finished receive (msg is the
  // request, or nullptr on failure).
  if (rv != 0 || self->stopping.load()) {
    if (msg != nullptr) {
      nng_aio_set_msg(slot->aio.get(), nullptr);
      nng_msg_free(msg);
    }
    if (rv == NNG_ECLOSED || self->stopping.load()) return;
    if (was_receiving) {
      nng_ctx_recv(slot->ctx.get(), slot->aio.get());
    } else {
      self->release(*slot);
    }
    return;
  }
  if (!was_receiving) {  // a send completed: the context is free again
    self->release(*slot);
    return;
  }
  nng_aio_set_msg(slot->aio.get(), nullptr);
  self->traffic.received(nng_msg_len(msg));
  {
    std::lock_guard<std::mutex> lock(self->pool_mutex);
    slot->receiving = false;
    --self->receiving;
  }
  // This context now holds the request until its reply: another takes its
  // place before the request is even handled.
  self->replenish();
  Message request(msg);
  if (self->handled_here(request)) {
    self->on_receipt.fetch_add(1, std::memory_order_relaxed);
    self->dispatch(std::move(request), slot);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(self->queue_mutex);
    self->queue.emplace_back(std::move(request), slot);
  }
  self->queue_cv.notify_one();
}

bool RequestServer::State::handled_here(const Message& request) {
  if (!quick) return false;
  // Handshakes and refusals (logging, closing a connection) stay with the
  // pool: only a proven connection's requests are looked at here.
  if (authenticator && !authenticator->proven(request.pipe_id())) return false;
  try {
    return quick(request);
  } catch (...) {
    return false;
  }
}

void RequestServer::State::on_pipe_event(nng_pipe pipe, nng_pipe_ev, void* arg) {
  auto* self = static_cast<State*>(arg);
  const int id = nng_pipe_id(pipe);
  if (id <= 0) return;
  if (self->authenticator) self->authenticator->forget(static_cast<uint32_t>(id));
  if (self->stopping.load() || !self->on_pipe_closed) return;
  self->on_pipe_closed(static_cast<uint32_t>(id));
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
    by_pool.fetch_add(1, std::memory_order_relaxed);
    dispatch(std::move(item.first), item.second);
  }
}

void RequestServer::State::send_reply(const std::shared_ptr<ReplyToken>& token, Message message) {
  if (token->used.exchange(true)) return;
  std::shared_ptr<State> state = token->state.lock();
  if (!state) return;
  {
    std::lock_guard<std::mutex> lock(state->pool_mutex);
    if (token->counted) {
      auto it = state->in_flight.find(token->pipe);
      if (it != state->in_flight.end() && --it->second <= 0) state->in_flight.erase(it);
    }
    if (token->has_deadline) {
      state->deadlines.erase(token->deadline);
      token->has_deadline = false;
    }
  }
  Slot& s = *token->slot;
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.closing) return;
  // nng sends messages, never "nothing": an empty reply is an empty body.
  if (message.get() == nullptr) message = Message::with_capacity(0);
  state->traffic.sent(message.size());
  nng_aio_set_msg(s.aio.get(), message.release());
  nng_ctx_send(s.ctx.get(), s.aio.get());
}

void RequestServer::State::dispatch(Message request, Slot* slot) {
  auto token = std::make_shared<ReplyToken>();
  token->state = weak_self;
  token->slot = slot;
  token->pipe = request.pipe_id();
  Reply reply = [token](Message message) { send_reply(token, std::move(message)); };
  int held = 0;
  {
    std::lock_guard<std::mutex> lock(pool_mutex);
    // Messages injected without a connection (pipe 0) are not counted.
    int& count = in_flight[token->pipe];
    held = count;
    if (token->pipe == 0 || count < policy.per_connection) {
      ++count;
      token->counted = true;
      if (policy.reply_deadline_s > 0) {
        // Never earlier than expire_deadlines() looks next: no need to wake it.
        token->deadline = deadlines.emplace(Clock::now() + reply_deadline(), token);
        token->has_deadline = true;
      }
    } else if (count == 0) {
      in_flight.erase(token->pipe);
    }
  }
  if (!token->counted) {
    const std::string text = "refused a request: connection " + std::to_string(token->pipe) + " already has " +
                             std::to_string(held) + " requests in flight (rule: at most " +
                             std::to_string(policy.per_connection) + " per connection)";
    log.print(text);
    reply(make_error_reply(ErrorCode::kBadState, text));
    return;
  }
  if (authenticator) {
    ConnectionAuthenticator::Outcome outcome = authenticator->screen(request);
    if (!outcome.log.empty()) log.print(outcome.log + " (from " + peer_address(token->pipe) + ")");
    if (outcome.action == ConnectionAuthenticator::Outcome::kClose) {
      // A connection that failed its handshake and still talks: cut it. The
      // held context is answered so it returns to the pool (nng drops the
      // reply with the connection).
      nng_pipe pipe;
      pipe.id = token->pipe;
      nng_pipe_close(pipe);
      reply(Message());
      return;
    }
    if (outcome.action == ConnectionAuthenticator::Outcome::kReply) {
      reply(std::move(outcome.reply));
      return;
    }
  }
  try {
    handler(std::move(request), reply);
  } catch (const Error& e) {
    log.print(std::string("request handler failed: ") + e.what());
    reply(make_error_reply(e.code(), e.what()));
  } catch (const std::exception& e) {
    log.print(std::string("request handler failed: ") + e.what());
    reply(make_error_reply(ErrorCode::kInternal, std::string("internal error: ") + e.what()));
  }
}

void RequestServer::State::expire_deadlines() {
  // Every deadline is reply_deadline() after its request came, so one added
  // while this thread sleeps is never due before it looks again (at most
  // that long after it last did): adding one never wakes it, which would
  // cost a thread wake-up per request.
  std::unique_lock<std::mutex> lock(pool_mutex);
  while (!stopping.load()) {
    const Clock::time_point now = Clock::now();
    if (deadlines.empty() || now < deadlines.begin()->first) {
      // A copy, not a reference into the map: wait_until reads its time
      // again after waking, when another thread may have erased that entry.
      const Clock::time_point until =
          deadlines.empty() ? now + reply_deadline() : std::min(now + reply_deadline(), deadlines.begin()->first);
      deadline_cv.wait_until(lock, until);
      continue;
    }
    std::shared_ptr<ReplyToken> token = deadlines.begin()->second.lock();
    deadlines.erase(deadlines.begin());
    if (!token) continue;
    token->has_deadline = false;
    lock.unlock();
    const std::string text = "no answer within the reply deadline of " + seconds(policy.reply_deadline_s) +
                             " (connection " + std::to_string(token->pipe) + ")";
    if (!token->used.load()) log.print("answered a held request with a timeout: " + text);
    send_reply(token, make_error_reply(ErrorCode::kTimedOut, text));
    lock.lock();
  }
}

RequestServer::RequestServer(const std::vector<std::string>& urls, int receivers, Handler handler,
                             size_t max_message_bytes, PipeClosed on_pipe_closed, ConnectionPolicy policy,
                             const net::TransportSecurity& security, Quick quick)
    : state_(std::make_shared<State>()) {
  if (receivers < 1) throw Error(ErrorCode::kInvalidArgument, "RequestServer: receivers must be at least 1");
  if (policy.per_connection < 1) {
    throw Error(ErrorCode::kInvalidArgument, "RequestServer: per_connection must be at least 1");
  }
  if (urls.empty()) throw Error(ErrorCode::kInvalidArgument, "RequestServer: no URL to listen on");
  if (!handler) throw Error(ErrorCode::kInvalidArgument, "RequestServer: no handler");
  State& st = *state_;
  st.weak_self = state_;
  st.handler = std::move(handler);
  st.quick = std::move(quick);
  st.on_pipe_closed = std::move(on_pipe_closed);
  st.policy = policy;
  st.receivers = receivers;
  if (security.secret) st.authenticator = std::make_unique<ConnectionAuthenticator>(*security.secret);
  nng_socket socket;
  DT_NNG_CHECK(nng_rep0_open(&socket));
  st.socket = net::Socket(socket);
  // Inherited by every listener created below.
  DT_NNG_CHECK(nng_socket_set_size(socket, NNG_OPT_RECVMAXSZ, max_message_bytes));
  if (st.on_pipe_closed || st.authenticator) {
    DT_NNG_CHECK(nng_pipe_notify(socket, NNG_PIPE_EV_REM_POST, &State::on_pipe_event, &st));
  }
  // With TLS files every tcp URL listens as tls+tcp (net/tls_config.h).
  std::optional<net::TlsConfig> tls;
  if (security.tls.enabled()) tls.emplace(net::TlsRole::kServer, security.tls);
  for (const std::string& given : urls) {
    const std::string url = net::url_for_transport(given, security.tls);
    nng_listener listener;
    int rv = nng_listener_create(&listener, socket, url.c_str());
    if (rv != 0) net::throw_nng_error(rv, "listening on " + url);
    if (net::is_tls_url(url)) tls->apply(listener, url);
    rv = nng_listener_start(listener, 0);
    if (rv != 0) net::throw_nng_error(rv, "listening on " + url);
    st.bound.push_back(with_bound_port(url, listener));
  }
  const unsigned cores = std::max(2u, std::thread::hardware_concurrency());
  const int threads = std::min<int>(receivers, static_cast<int>(cores));
  for (int i = 0; i < threads; ++i) st.threads.emplace_back([&st] { st.run_handlers(); });
  if (policy.reply_deadline_s > 0) st.deadline_thread = std::thread([&st] { st.expire_deadlines(); });
  st.replenish();
}

RequestServer::~RequestServer() {
  State& st = *state_;
  std::vector<State::Slot*> slots;
  {
    // After this no context is opened or re-armed (replenish and release
    // check `stopping` under this mutex).
    std::lock_guard<std::mutex> lock(st.pool_mutex);
    st.stopping = true;
    for (auto& slot : st.slots) slots.push_back(slot.get());
  }
  for (State::Slot* slot : slots) {
    std::lock_guard<std::mutex> lock(slot->mutex);
    slot->closing = true;
  }
  {
    std::lock_guard<std::mutex> lock(st.queue_mutex);
  }
  st.queue_cv.notify_all();
  st.deadline_cv.notify_all();
  // Stop every aio before closing the socket: nng_aio_stop waits for a
  // running completion callback and keeps it from re-arming a receive, so no
  // nng_ctx_recv can race the socket's teardown (nng 1.5.2 panicked on a
  // destroyed mutex when a callback re-armed while nng_close ran).
  for (State::Slot* slot : slots) slot->aio.stop();
  st.socket.close();
  for (auto& thread : st.threads) thread.join();
  if (st.deadline_thread.joinable()) st.deadline_thread.join();
  // Requests received but not handled: dropped with the queue; their
  // requesters see the closed connection.
  st.queue.clear();
}

std::vector<std::string> RequestServer::bound_urls() const { return state_->bound; }

core::Traffic RequestServer::traffic() const { return state_->traffic.read(); }

RequestServer::Handled RequestServer::handled() const {
  Handled counts;
  counts.on_receipt = state_->on_receipt.load(std::memory_order_relaxed);
  counts.by_pool = state_->by_pool.load(std::memory_order_relaxed);
  return counts;
}

size_t RequestServer::contexts() const {
  std::lock_guard<std::mutex> lock(state_->pool_mutex);
  return state_->slots.size();
}

}  // namespace dt::ps
