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
#pragma once

#include <functional>
#include <string>

#include "ps/roles/server_key_store.h"
#include "ps/transport/message.h"
#include "ps/transport/request_server.h"

namespace dt::ps {

class ServerRequestHandler {
 public:
  explicit ServerRequestHandler(int num_workers);
  ServerRequestHandler(const ServerRequestHandler&) = delete;
  ServerRequestHandler& operator=(const ServerRequestHandler&) = delete;

  // A RequestServer::Handler: never throws; reply is called exactly once.
  void handle(Message request, const RequestServer::Reply& reply);
  // Answers everything waiting with error and every later request too.
  void fail(const core::Error& error) { store_.fail(error); }

  ServerKeyStore& store() { return store_; }

 private:
  ServerKeyStore store_;
};

}  // namespace dt::ps
