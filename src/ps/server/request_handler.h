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
// Who may say what (issue 23): a request speaks only on its own connection
// (SpeakerBinding). Worker 0 owns the server-side optimizer's settings:
// SetLearningRate, SetRescaleGrad and OptimizerState (restoring it) from any other
// worker are kBadState; what the workers must agree on (the optimizer, the
// compression) is JobAgreement's.
//
// New copies (DT_SERVER_REPLICATION=1, after a server loss): a pushed
// slice with TensorSlice.adopt_from >= 0 takes on a part this server does
// not hold, as copies of that server's (ServerKeyStore, "New copies"); a
// PartState message from another server (server_rank, bound to its
// connection as a worker's rank is) answers with a part's value,
// round and optimizer state once the round asked for is applied.
//
// Gradient compression: SetGradientCompression (text: a
// ps/compression/compression_mode.h config) from every worker before its
// first push; the first fixes the job's, another must equal it. Pushed
// slices with TensorSlice.encoding set are decoded with it and then summed
// as any push (dist_sync stays in worker-rank order, so exact for a given
// mode); pulled slices carry what the store answered (reply_assembly.h).
// Refusals are logged at a bounded rate.
//
// This file is the dispatch; the concepts it dispatches to live beside it:
// SpeakerBinding, JobAgreement, job_settings.h, reply_assembly.h.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ps/server/job_agreement.h"
#include "ps/server/job_settings.h"
#include "ps/server/key_store.h"
#include "ps/server/resent_requests.h"
#include "ps/server/speaker_binding.h"
#include "ps/transport/data_codec.h"
#include "ps/transport/frame.h"
#include "ps/transport/message.h"
#include "ps/transport/protocol_generated.h"
#include "ps/transport/rate_limited_log.h"
#include "ps/transport/request_server.h"

namespace dt::ps {

class ServerRequestHandler {
 public:
  // memory_limit_bytes, reduction: see ServerKeyStore (0: automatic).
  explicit ServerRequestHandler(int num_workers, uint64_t memory_limit_bytes = 0,
                                const ops::cpu::ReductionSettings& reduction = {});
  ServerRequestHandler(const ServerRequestHandler&) = delete;
  ServerRequestHandler& operator=(const ServerRequestHandler&) = delete;

  // A RequestServer::Handler: never throws; reply is called exactly once.
  void handle(Message request, const RequestServer::Reply& reply);
  // Answers everything waiting with error and every later request too.
  void fail(const core::Error& error);
  // A connection closed: the rank it spoke for may be taken by the worker's
  // next connection (nng redials after a dropped one).
  void connection_closed(uint32_t pipe) { speakers_.connection_closed(pipe); }

  ServerKeyStore& store() { return store_; }

  // A server rejoining a replicated job (DT_SERVER_REPLICATION=1) takes the
  // job's settings from another server before it serves: settings() is
  // that server's answer (the ServerSettingsReply message), apply_settings()
  // the rejoined one's side (job_settings.h). Error(kProtocol) for settings
  // it cannot take.
  JobSettings settings() const { return job_settings_of(store_, agreement_); }
  void apply_settings(const JobSettings& settings) { apply_job_settings(settings, store_, agreement_); }
  // The learning rate and gradient rescale of the server a new copy was
  // filled from (PartState): see JobAgreement.
  void take_source_optimizer_numbers(double learning_rate, double rescale_grad) {
    agreement_.take_source_optimizer_numbers(learning_rate, rescale_grad);
  }

 private:
  // A worker's request (every op but the servers' own).
  void worker_request(const Frame& frame, const wire::DataRequest& data, int worker, const RequestServer::Reply& reply);
  // The PartState message: another server filling a new copy of a part.
  void part_state(const Frame& frame, const wire::PartState& request, uint32_t pipe, const RequestServer::Reply& reply);
  // Error(kBadState) unless worker is 0, the owner of the optimizer's settings.
  static void only_worker_0(int worker, const char* what);
  // The Join message: a worker joining the running job in a lost one's place.
  void join(int worker, const wire::Join& request, const RequestServer::Reply& reply);
  // A request in worker's name: a worker of the job, speaking on the
  // connection bound to it (SpeakerBinding); Error(kProtocol) otherwise.
  int worker_of(int worker, uint32_t pipe);
  // Data requests a worker resends (PS_RESEND) with their earlier copies.
  RequestServer::Reply tracked(int worker, wire::DataOp op, const std::vector<DecodedSlice>& slices,
                               const RequestServer::Reply& reply);

  ServerKeyStore store_;
  ResentRequests resent_;
  RateLimitedLog log_{"server"};
  SpeakerBinding speakers_;
  JobAgreement agreement_{store_, log_};
};

}  // namespace dt::ps
