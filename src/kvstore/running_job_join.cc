#include "kvstore/running_job_join.h"

#include <unistd.h>

#include <algorithm>
#include <mutex>
#include <string>

#include "core/log.h"
#include "ps/transport/data_codec.h"

namespace dt::kvstore {

using core::Error;
using core::ErrorCode;

int64_t join_running_job(const ServerExchange& servers, int worker_rank, bool sync) {
  // The job moves on while the question and the answer travel; a few tries
  // are plenty (one round of slack each), and each is bounded.
  constexpr int kAttempts = 8;
  const int64_t pid = ::getpid();
  const std::string facility = "worker " + std::to_string(worker_rank);
  for (int attempt = 1;; ++attempt) {
    std::mutex mutex;
    int64_t floor = 1;
    servers.run([&](int) { return ps::encode_join_question(worker_rank); },
                [&](int, const ps::Frame& reply) {
                  std::lock_guard<std::mutex> lock(mutex);
                  floor = std::max(floor, reply.expect<ps::wire::DataReply>().round());
                });
    const int64_t round = floor + 1;
    try {
      servers.run([&](int) { return ps::encode_join(worker_rank, round, pid); }, [](int, const ps::Frame&) {});
    } catch (const Error& e) {
      if (e.code() != ErrorCode::kBadState || attempt == kAttempts) throw;
      continue;
    }
    if (sync) {
      core::logf(core::LogLevel::kInfo, facility, "joined the running job; its pushes count from round %lld",
                 static_cast<long long>(round));
      return round - 1;
    }
    core::log(core::LogLevel::kInfo, facility, "joined the running job (dist_async: its pushes apply as they come)");
    return 0;
  }
}

}  // namespace dt::kvstore
