#include "ps/roles/worker_client.h"

#include <condition_variable>
#include <thread>

#include "core/log.h"
#include "net/tls_config.h"

namespace dt::ps {

using core::Error;
using core::ErrorCode;

namespace {

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

}  // namespace

std::string data_url_of(const NodeInfo& server, const std::string& node_host, DataTransport transport) {
  // tcp here means tcp:// or tls+tcp:// (a TLS job's servers offer the latter).
  const bool want_ipc = transport == DataTransport::kIpc ||
                        (transport == DataTransport::kAuto && server.host == node_host);
  for (const auto& url : server.data_urls) if (starts_with(url, "inproc://")) return url;
  for (const auto& url : server.data_urls) if (want_ipc ? starts_with(url, "ipc://") : net::is_tcp_url(url)) return url;
  for (const auto& url : server.data_urls) if (net::is_tcp_url(url)) return url;
  throw Error(ErrorCode::kProtocol, server.describe() + " offers no usable data URL");
}

DataTransport data_transport_from_name(const std::string& name) {
  if (name == "auto" || name.empty()) return DataTransport::kAuto;
  if (name == "tcp") return DataTransport::kTcp;
  if (name == "ipc") return DataTransport::kIpc;
  throw Error(ErrorCode::kInvalidArgument, "data transport '" + name + "': expected auto, tcp or ipc");
}

WorkerClient::WorkerClient(const NodeTable& table, const std::string& node_host, DataTransport transport,
                           const PsOptions& options, const net::TransportSecurity& security)
    : options_(options),
      num_servers_(static_cast<int>(table.servers.size())),
      node_host_(node_host),
      transport_(transport),
      security_(security) {
  for (const NodeInfo& server : table.servers) {
    const std::string url = data_url_of(server, node_host, transport);
    core::log(core::LogLevel::kDebug, "worker " + std::to_string(table.your_rank),
              "data connection to server " + std::to_string(server.rank) + " at " + url);
    servers_.push_back(
        std::make_unique<RequestClient>(url, std::chrono::milliseconds(0), options.max_message_bytes, security));
  }
}

WorkerClient::~WorkerClient() {
  // After a failover nng_close of the remaining servers' sockets has blocked
  // for good at exit (nng 1.5.2; not understood): they are abandoned too,
  // left open until the process ends. Likewise after the job failed (a lost
  // peer): a worker stuck there in DistJob.KilledWorkerIsNamedByEveryOther
  // Process about 1 run in 40, its requests just failed by the loss.
  const bool dropped = dropped_any_ || failure().has_value();
  for (auto& server : servers_) {
    if (dropped) {
      server->abandon();
    } else {
      server->close();
    }
  }
}

RequestClient& WorkerClient::connection(int server) const {
  std::shared_lock<std::shared_mutex> lock(servers_mutex_);
  return *servers_.at(static_cast<size_t>(server));
}

void WorkerClient::on_disconnect(const std::function<void(int server)>& callback) {
  std::unique_lock<std::shared_mutex> lock(servers_mutex_);
  disconnect_callback_ = callback;
  for (size_t s = 0; s < servers_.size(); ++s) {
    servers_[s]->on_disconnect([callback, server = static_cast<int>(s)] { callback(server); });
  }
}

void WorkerClient::drop_server(int server) {
  core::log(core::LogLevel::kDebug, "worker",
            "data connection to server " + std::to_string(server) + " abandoned (the job goes on without it)");
  dropped_any_ = true;
  connection(server).abandon();
}

void WorkerClient::reconnect_server(const NodeInfo& server) {
  const std::string url = data_url_of(server, node_host_, transport_);
  if (server.rank < 0 || server.rank >= num_servers_) {
    throw Error(ErrorCode::kProtocol, "a rejoined " + server.describe() + " out of range");
  }
  core::log(core::LogLevel::kDebug, "worker",
            "data connection to rejoined server " + std::to_string(server.rank) + " at " + url);
  auto fresh = std::make_unique<RequestClient>(url, std::chrono::milliseconds(0), options_.max_message_bytes, security_);
  std::unique_lock<std::shared_mutex> lock(servers_mutex_);
  if (disconnect_callback_) {
    fresh->on_disconnect([callback = disconnect_callback_, rank = server.rank] { callback(rank); });
  }
  // Senders may still hold the old connection (connection() handed it out
  // before this): it stays alive, abandoned (a pending request on it ends
  // with kClosed), until the client ends.
  std::unique_ptr<RequestClient>& slot = servers_.at(static_cast<size_t>(server.rank));
  slot->abandon();
  dropped_any_ = true;
  replaced_.push_back(std::move(slot));
  slot = std::move(fresh);
}

void WorkerClient::fail(const Error& error) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!failure_) failure_ = error;
}

std::optional<Error> WorkerClient::failure() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return failure_;
}

void WorkerClient::check() const {
  if (auto error = failure()) throw *error;
}

void WorkerClient::send(int server, Message request, Done done, bool may_resend) {
  if (auto error = failure()) {
    done(*error, nullptr);
    return;
  }
  connection(server).request(
          std::move(request), to_ms(options_.request_timeout_s),
          [done = std::move(done)](std::optional<Error> error, Message reply) {
                  if (error) {
                    done(std::move(error), nullptr);
                    return;
                  }
                  std::optional<Frame> frame;
                  try {
                    frame.emplace(Frame::parse(std::move(reply)));
                    const auto& data = frame->expect<wire::DataReply>();
                    if (data.status() != 0) {
                      throw Error(static_cast<ErrorCode>(data.status()),
                                  data.message() ? data.message()->str() : "server error");
                    }
                  } catch (const Error& e) {
                    done(e, nullptr);
                    return;
                  } catch (const std::exception& e) {
                    done(Error(ErrorCode::kInternal, e.what()), nullptr);
                    return;
                  }
                  done(std::nullopt, &*frame);
          },
          may_resend && resends() ? to_ms(options_.resend_timeout_s) : std::chrono::milliseconds(0));
}

struct WorkerClient::Exchange::State {
  OnReply on_reply;
  // Handlers run under a shared lock; abandoning takes it exclusively, so no
  // handler touches the caller's memory once wait() has given up.
  std::shared_mutex handler_mutex;
  bool abandoned = false;
  std::mutex mutex;
  std::condition_variable cv;
  size_t pending = 0;
  std::optional<Error> error;

  void record(const Error& e) {
    std::lock_guard<std::mutex> lock(mutex);
    if (!error) error = e;
  }
  void abandon() {
    std::unique_lock<std::shared_mutex> lock(handler_mutex);
    abandoned = true;
  }
};

WorkerClient::Exchange::Exchange(WorkerClient& client, OnReply on_reply)
    : client_(client), state_(std::make_shared<State>()) {
  state_->on_reply = std::move(on_reply);
}

WorkerClient::Exchange::~Exchange() { state_->abandon(); }

void WorkerClient::Exchange::send(int server, Message request) {
  client_.check();
  const size_t index = sent_++;
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    ++state_->pending;
  }
  auto state = state_;
  client_.connection(server).request(std::move(request), to_ms(client_.options_.request_timeout_s),
                [state, index](std::optional<Error> error, Message reply) {
                  if (error) {
                    state->record(*error);
                  } else {
                    try {
                      Frame frame = Frame::parse(std::move(reply));
                      // A typed answer (OptimizerState) goes to on_reply,
                      // which reads it as it expects; a refusal is a
                      // DataReply with its status (or an ErrorReply).
                      if (frame.type() != wire::Body::OptimizerState) {
                        const auto& data = frame.expect<wire::DataReply>();
                        if (data.status() != 0) {
                          throw Error(static_cast<ErrorCode>(data.status()),
                                      data.message() ? data.message()->str() : "server error");
                        }
                      }
                      std::shared_lock<std::shared_mutex> lock(state->handler_mutex);
                      if (!state->abandoned) state->on_reply(index, frame);
                    } catch (const Error& e) {
                      state->record(e);
                    } catch (const std::exception& e) {
                      state->record(Error(ErrorCode::kInternal, e.what()));
                    }
                  }
                  std::lock_guard<std::mutex> lock(state->mutex);
                  --state->pending;
                  state->cv.notify_all();
                });
}

void WorkerClient::Exchange::wait() {
  // The transport enforces request_timeout_s per request; this bound only
  // guards against a reply that never comes back at all.
  const auto deadline = std::chrono::steady_clock::now() + to_ms(client_.options_.request_timeout_s) +
                        std::chrono::seconds(1);
  // Lost peers are noticed by heartbeats, not by the transport: check often.
  constexpr auto kPoll = std::chrono::milliseconds(20);
  std::unique_lock<std::mutex> lock(state_->mutex);
  while (state_->pending > 0 && !state_->error) {
    if (auto failure = client_.failure()) {
      lock.unlock();
      state_->abandon();
      throw *failure;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      lock.unlock();
      state_->abandon();
      throw Error(ErrorCode::kTimedOut, "no reply from the servers within " +
                                            seconds_text(client_.options_.request_timeout_s));
    }
    state_->cv.wait_for(lock, kPoll);
  }
  if (!state_->error) return;
  const Error error = *state_->error;
  lock.unlock();
  state_->abandon();
  // A dropped connection is usually a dead server: give the heartbeats time
  // to name it, so the caller sees which node was lost.
  if (error.code() == ErrorCode::kNetwork || error.code() == ErrorCode::kTimedOut ||
      error.code() == ErrorCode::kClosed) {
    const auto verdict = std::chrono::steady_clock::now() + to_ms(2 * client_.options_.heartbeat_timeout_s);
    while (std::chrono::steady_clock::now() < verdict) {
      if (auto failure = client_.failure()) throw *failure;
      std::this_thread::sleep_for(kPoll);
    }
  }
  if (auto failure = client_.failure()) throw *failure;
  throw error;
}

core::Traffic WorkerClient::traffic() const {
  core::Traffic total;
  std::shared_lock<std::shared_mutex> lock(servers_mutex_);
  for (const auto& server : servers_) total += server->traffic();
  for (const auto& server : replaced_) total += server->traffic();
  return total;
}

}  // namespace dt::ps
