// The data plane of one server: decodes DataRequests, runs them against the
// ServerKeyStore and answers with DataReplies. Transport-free (it consumes a
// Message and a Reply), so server_process wires it to a RequestServer and
// tests may call it directly.
//
// Wire conventions beyond ps/transport/protocol.fbs:
//  - Init requests carry the worker's kvstore type ("dist_sync" or
//    "dist_async") in DataRequest.text; the first one fixes the server's
//    mode, a different one later is answered kBadState.
//  - Push/PushPull slices carry the worker's round for their key (dist_sync:
//    1, 2, ...; dist_async: -1); Pull slices the round to wait for (<= 0:
//    the latest value). PushPull pulls the round it pushes.
//  - Replies list the pulled slices in request order. GetOptimizerState's
//    reply lists one slice per state array (key 0, its dtype and shape) and
//    their names, '\n'-separated, in DataReply.message; SetOptimizerState
//    sends arrays named the same way back (names in DataRequest.text).
// Every reply is sent exactly once: at once, or (a dist_sync pull, a push
// held for the next round) when the store completes it. Malformed requests
// are answered Error(kProtocol) and logged; the server keeps serving.
//
// Who may say what (issue 23). A request's worker_rank must be that of the
// connection it came on: the first request on a connection binds it to its
// rank, and a rank is bound to one open connection at a time (kProtocol
// otherwise: "a member speaks only on its own connection"). Worker 0 owns
// the server-side optimizer's settings: SetLearningRate, SetRescaleGrad and
// SetOptimizerState from any other worker are kBadState. Every worker sends
// SetOptimizer, as every worker calls set_optimizer; worker 0's is the one
// applied, another worker's is answered once worker 0's has arrived: OK
// when it is the same, kInvalidArgument naming both when not. Requests that
// arrive without a connection (pipe 0: handed in by a test) are not bound.
//
// New copies (DT_SERVER_REPLICATION=1, after a server loss): a pushed
// slice with TensorSlice.adopt_from >= 0 takes on a part this server does
// not hold, as copies of that server's (ServerKeyStore, "New copies"); a
// PartState request from another server (worker_rank -1 - its rank, bound
// to its connection as a worker's rank is) answers with a part's value,
// round and optimizer state once the round asked for is applied.
//
// Gradient compression: SetGradientCompression (text: a
// ps/compression/compression_mode.h config) from every worker before its
// first push; the first fixes the job's, another must equal it. Pushed
// slices with TensorSlice.encoding set are decoded with it and then summed
// as any push (dist_sync stays in worker-rank order, so exact for a given
// mode). Pulled slices carry what the store answered: a dist_sync round's
// sum encoded once with the same mode (TensorSlice.encoding set, its own
// server-side residual) when the servers have no optimizer, otherwise the
// value in full (ServerKeyStore says when and why).
// Refusals are logged at a bounded rate.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "optim/optimizer_config.h"
#include "ps/compression/gradient_codec.h"
#include "ps/roles/resent_requests.h"
#include "ps/roles/server_key_store.h"
#include "ps/transport/data_codec.h"
#include "ps/transport/protocol_generated.h"
#include "ps/transport/rate_limited_log.h"
#include "ps/transport/message.h"
#include "ps/transport/request_server.h"

namespace dt::ps {

class ServerRequestHandler {
 public:
  // memory_limit_bytes: see ServerKeyStore (0: automatic).
  explicit ServerRequestHandler(int num_workers, uint64_t memory_limit_bytes = 0);
  ServerRequestHandler(const ServerRequestHandler&) = delete;
  ServerRequestHandler& operator=(const ServerRequestHandler&) = delete;

  // A RequestServer::Handler: never throws; reply is called exactly once.
  void handle(Message request, const RequestServer::Reply& reply);
  // Answers everything waiting with error and every later request too.
  void fail(const core::Error& error);
  // A connection closed: the rank it spoke for may be taken by the worker's
  // next connection (nng redials after a dropped one).
  void connection_closed(uint32_t pipe);

  ServerKeyStore& store() { return store_; }

  // A server rejoining a replicated job (DT_SERVER_REPLICATION=1) takes the
  // job's settings from another server before it serves: settings() is
  // that server's answer (DataOp ServerSettings's text), apply_settings()
  // the rejoined one's side. Error(kProtocol) for text it cannot read.
  std::string settings() const;
  void apply_settings(const std::string& text);
  // The learning rate and gradient rescale of the server a new copy was
  // filled from (PartState): taken unless worker 0 set them here since
  // this server started (then they are newer than the source's were when
  // it answered).
  void take_source_optimizer_numbers(double learning_rate, double rescale_grad);

 private:
  // The worker the request may speak for; throws naming the rule otherwise.
  // Servers speak as -1 - their rank (PartState).
  void check_speaker(int worker, uint32_t pipe);
  // DataOp PartState: another server filling a new copy of a part.
  void part_state(const Frame& frame, const wire::DataRequest& data, uint32_t pipe, const RequestServer::Reply& reply);
  // The asking server's rank (-1 - worker_rank), checked: a server's
  // requests only.
  int server_speaker(const wire::DataRequest& data, uint32_t pipe, const char* what);
  void set_optimizer(int worker, const optim::OptimizerConfig& config, const RequestServer::Reply& reply);
  // The first worker's config is the job's; the same again is a no-op, the
  // same with the gradient scale a trainer names (before the first push) is
  // adopted (CompressionConfig::agree), another (or any change after the
  // first push) an error naming both.
  void set_compression(int worker, const compression::CompressionConfig& config);
  void adopt_compression(const compression::CompressionConfig& config);  // mutex_ held
  // Marks that pushes began (compression is fixed from now on) and returns
  // the job's codec, null without compression. Never destroyed before the
  // handler, so a push may hold it without the lock.
  const compression::GradientCodec* pushing();

  // Data requests a worker resends (PS_RESEND) with their earlier copies.
  RequestServer::Reply tracked(int worker, wire::DataOp op, const std::vector<DecodedSlice>& slices,
                               const RequestServer::Reply& reply);

  ServerKeyStore store_;
  ResentRequests resent_;
  RateLimitedLog log_{"dt server"};

  mutable std::mutex mutex_;  // guards what follows
  std::map<int, uint32_t> pipe_of_worker_;
  std::map<uint32_t, int> worker_of_pipe_;
  std::optional<optim::OptimizerConfig> optimizer_;  // worker 0's
  std::optional<compression::CompressionConfig> compression_;  // the first worker's
  std::unique_ptr<compression::GradientCodec> codec_;  // its codec (none: null), fixed from the first push
  bool pushed_ = false;
  // Worker 0 set them on this server (SetLearningRate, SetRescaleGrad).
  bool learning_rate_set_ = false;
  bool rescale_grad_set_ = false;
  // Other workers' SetOptimizer waiting for worker 0's (one per worker).
  struct OptimizerCheck {
    optim::OptimizerConfig config;
    RequestServer::Reply reply;
  };
  std::map<int, OptimizerCheck> optimizer_checks_;
};

}  // namespace dt::ps
