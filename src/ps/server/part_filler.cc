#include "ps/server/part_filler.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <optional>
#include <utility>

#include "core/log.h"
#include "ps/roles/worker_client.h"
#include "ps/transport/data_codec.h"
#include "ps/transport/frame.h"
#include "ps/transport/state_codec.h"

namespace dt::ps {

using core::Error;
using core::ErrorCode;

PartFiller::PartFiller(ServerKeyStore& store, const std::string& node_host, const PsOptions& options,
                       const net::TransportSecurity& security)
    : store_(store),
      node_host_(node_host),
      options_(options),
      security_(security),
      thread_([this] { run(); }) {
  store_.on_fill_wanted([this](const ServerKeyStore::FillRequest& request) { want(request); });
}

PartFiller::~PartFiller() {
  store_.on_fill_wanted(nullptr);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
  // Requests still in flight end with kClosed and fail their parts. The
  // sockets stay open until the process ends: connections exist only after
  // a server loss, where nng's close has blocked for good (see
  // WorkerClient's destructor).
  for (auto& [server, client] : clients_) client->abandon();
}

void PartFiller::set_servers(int rank, std::vector<NodeInfo> servers) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    rank_ = rank;
    servers_ = std::move(servers);
    gone_.assign(servers_.size(), false);
  }
  wake_.notify_one();
}

void PartFiller::on_source_numbers(std::function<void(double learning_rate, double rescale_grad)> take) {
  std::lock_guard<std::mutex> lock(mutex_);
  take_numbers_ = std::move(take);
}

void PartFiller::server_rejoined(const NodeInfo& server) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (server.rank < 0 || server.rank >= static_cast<int>(servers_.size()) || server.rank == rank_) return;
  servers_[static_cast<size_t>(server.rank)] = server;
  gone_[static_cast<size_t>(server.rank)] = false;
}

JobSettings PartFiller::job_settings(const NodeTable& table, std::chrono::milliseconds deadline) const {
  std::string tried;
  for (const NodeInfo& server : table.servers) {
    if (server.rank == table.your_rank) continue;
    RequestClient client(data_url_of(server, node_host_, DataTransport::kAuto), std::chrono::milliseconds(0),
                         options_.max_message_bytes, security_);
    try {
      Message reply = client.call(encode_server_settings_request(table.your_rank), deadline);
      const Frame frame = Frame::parse(std::move(reply));
      // A refusal comes as a data request's: a DataReply with its status.
      if (const auto* refused = frame.body<wire::DataReply>()) {
        throw Error(static_cast<ErrorCode>(refused->status()),
                    refused->message() ? refused->message()->str() : "server error");
      }
      JobSettings settings = decode_server_settings_reply(frame.expect<wire::ServerSettingsReply>());
      client.close();
      return settings;
    } catch (const Error& e) {
      // A lost server's connection is abandoned, never closed (see
      // WorkerClient::drop_server).
      client.abandon();
      tried += (tried.empty() ? "" : "; ") + std::string("server ") + std::to_string(server.rank) + ": " + e.what();
    }
  }
  throw Error(ErrorCode::kPeerLost, "no server of the job answered with the job's settings (" + tried + ")");
}

void PartFiller::want(const ServerKeyStore::FillRequest& request) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(request);
  }
  wake_.notify_one();
}

void PartFiller::server_lost(int server) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (server == rank_) return;  // a rejoined server hears of its predecessor
    lost_.push_back(server);
    if (server >= 0 && server < static_cast<int>(gone_.size())) gone_[static_cast<size_t>(server)] = true;
  }
  wake_.notify_one();
}

void PartFiller::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    wake_.wait(lock, [this] {
      return stop_ || ((!queue_.empty() || lost_handled_ < lost_.size()) && rank_ >= 0);
    });
    while (lost_handled_ < lost_.size()) {
      const int server = lost_[lost_handled_++];
      auto it = clients_.find(server);
      if (it == clients_.end()) continue;
      // Its requests in flight end with kClosed and fail their parts. Its
      // socket stays open until the process ends: closing one whose peer
      // died has blocked in nng (see WorkerClient::drop_server).
      // A server that rejoins in its place gets a new connection.
      std::unique_ptr<RequestClient> client = std::move(it->second);
      clients_.erase(it);
      lock.unlock();
      client->abandon();
      lock.lock();
      abandoned_.push_back(std::move(client));
    }
    if (stop_) {
      std::deque<ServerKeyStore::FillRequest> left;
      left.swap(queue_);
      lock.unlock();
      for (const auto& request : left) fail(request, Error(ErrorCode::kClosed, "the server is stopping"));
      return;
    }
    if (queue_.empty() || rank_ < 0) continue;
    const ServerKeyStore::FillRequest request = queue_.front();
    queue_.pop_front();
    lock.unlock();
    send(request);
    lock.lock();
  }
}

RequestClient& PartFiller::client_of(int server) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (server >= 0 && server < static_cast<int>(gone_.size()) && gone_[static_cast<size_t>(server)]) {
      throw Error(ErrorCode::kPeerLost, "server " + std::to_string(server) + " was lost");
    }
  }
  auto it = clients_.find(server);
  if (it != clients_.end()) return *it->second;
  NodeInfo info;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (server < 0 || server >= static_cast<int>(servers_.size()) || server == rank_) {
      throw Error(ErrorCode::kInvalidArgument, "a part's state from server " + std::to_string(server) + " of " +
                                                   std::to_string(servers_.size()));
    }
    info = servers_[static_cast<size_t>(server)];
  }
  const std::string url = data_url_of(info, node_host_, DataTransport::kAuto);
  core::log(core::LogLevel::kDebug, "server " + std::to_string(rank_),
            "connection to server " + std::to_string(server) + " at " + url + " for new copies of its parts");
  auto client = std::make_unique<RequestClient>(url, std::chrono::milliseconds(0), options_.max_message_bytes,
                                                security_);
  return *clients_.emplace(server, std::move(client)).first->second;
}

void PartFiller::send(const ServerKeyStore::FillRequest& request) {
  try {
    RequestClient& client = client_of(request.source);
    Message message = encode_part_state_request(rank_, SliceSpec{request.info, request.min_round, 0});
    client.request(std::move(message), to_ms(options_.request_timeout_s),
                   [this, request](std::optional<Error> error, Message reply) {
                     take(request, std::move(error), std::move(reply));
                   });
  } catch (const Error& error) {
    take(request, error, Message());
  }
}

void PartFiller::take(const ServerKeyStore::FillRequest& request, std::optional<Error> error, Message reply) {
  try {
    if (error) throw *error;
    const Frame frame = Frame::parse(std::move(reply));
    // A refusal comes as a data request's: a DataReply with its status.
    if (const auto* refused = frame.body<wire::DataReply>()) {
      throw Error(static_cast<ErrorCode>(refused->status()),
                  refused->message() ? refused->message()->str() : "server error");
    }
    const auto& data = frame.expect<wire::PartStateReply>();
    if (data.value() == nullptr) throw Error(ErrorCode::kProtocol, "a part's state came without its value");
    const DecodedSlice value = decode_slice(frame, data.value());
    if (value.info.part.key != request.info.part.key || value.info.part.begin != request.info.part.begin ||
        value.round != data.round() || value.encoding != 0) {
      throw Error(ErrorCode::kProtocol, "a part's state came for another part than " + part_name(request.info.part));
    }
    ServerKeyStore::PartState state;
    state.round = data.round();
    state.value = value.data;
    state.bytes = value.data_bytes;
    state.optimizer = read_named_arrays(frame, data.optimizer_names(), data.optimizer_arrays(),
                                        core::make_cpu_context(), "a part's state");
    if (data.pull_encoding() != nullptr) {
      // The applied round's encoding, as its pulls get it.
      const DecodedSlice s = decode_slice(frame, data.pull_encoding());
      if (s.encoding == 0) throw Error(ErrorCode::kProtocol, "a part's state: an encoding without its mode");
      const auto* bytes = static_cast<const uint8_t*>(s.data);
      state.encoded = std::make_shared<const std::vector<uint8_t>>(bytes, bytes + s.data_bytes);
      state.encoding = s.encoding;
    }
    if (data.pull_residual() != nullptr) {
      const DecodedSlice s = decode_slice(frame, data.pull_residual());
      if (s.encoding != 0 || s.info.dtype != core::DType::kFloat32) {
        throw Error(ErrorCode::kProtocol, "a part's state: a residual that is not float32");
      }
      state.pull_residual.resize(s.data_bytes / sizeof(float));
      if (s.data_bytes != 0) std::memcpy(state.pull_residual.data(), s.data, s.data_bytes);
    }
    const std::optional<double> learning_rate = read_number(data.learning_rate());
    const std::optional<double> rescale_grad = read_number(data.rescale_grad());
    if (learning_rate && rescale_grad) {
      std::function<void(double, double)> take_numbers;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        take_numbers = take_numbers_;
      }
      if (take_numbers) take_numbers(*learning_rate, *rescale_grad);
    }
    store_.install(request.info, state);
    core::log(core::LogLevel::kDebug, "server " + std::to_string(rank_),
              "new copy of " + part_name(request.info.part) + " filled from server " + std::to_string(request.source) +
                  " at round " + std::to_string(state.round));
  } catch (const Error& failure) {
    core::logf(core::LogLevel::kInfo, "server " + std::to_string(rank_), "could not fill the new copy of %s from server %d: %s",
               part_name(request.info.part).c_str(), request.source, failure.what());
    fail(request, Error(failure.code(), "the new copy of " + part_name(request.info.part) + " on server " +
                                            std::to_string(rank_) + " could not be filled from server " +
                                            std::to_string(request.source) + ": " + failure.what()));
  } catch (const std::exception& failure) {
    fail(request, Error(ErrorCode::kInternal, failure.what()));
  }
}

void PartFiller::fail(const ServerKeyStore::FillRequest& request, const Error& error) noexcept {
  try {
    store_.fail_fill(request.info, error);
  } catch (const std::exception& unexpected) {
    // The part exists (the store asked for it); nothing else can throw here.
    core::log(core::LogLevel::kInfo, "server " + std::to_string(rank_), unexpected.what());
  }
}

}  // namespace dt::ps
