#include "kvstore/host/fused_all_reduce.h"

#include <cstring>
#include <string>

#include "collective/host/all_gather.h"
#include "core/error.h"
#include "core/fnv1a.h"
#include "core/timeline/timeline.h"

namespace dt::kvstore {

using collective::host::HostCommunicator;
using core::DType;
using core::Error;
using core::ErrorCode;

namespace {

// What a fused run of keys is, for the communicator to compare across
// workers: the first key in the high 32 bits (readable in its error), a
// fingerprint of every key and size in the low 32.
uint64_t tag_of(const std::vector<std::pair<Key, size_t>>& keys_and_bytes) {
  std::string text;
  for (const auto& [key, bytes] : keys_and_bytes) text += std::to_string(key) + ":" + std::to_string(bytes) + ",";
  return (static_cast<uint64_t>(keys_and_bytes.front().first & 0xffffffffu) << 32) |
         (core::fnv1a64(text) & 0xffffffffu);
}

std::string keys_text(const std::vector<std::pair<Key, size_t>>& keys_and_bytes) {
  std::string text;
  for (size_t i = 0; i < keys_and_bytes.size() && i < 8; ++i) {
    text += (i ? ", " : "") + std::to_string(keys_and_bytes[i].first);
  }
  if (keys_and_bytes.size() > 8) text += ", ... (" + std::to_string(keys_and_bytes.size()) + " keys)";
  return text;
}

}  // namespace

FusedAllReduce::FusedAllReduce(SurvivorGroup& group, ps::ClusterMember& member, size_t bucket_bytes)
    : group_(group), member_(member), bucket_bytes_(bucket_bytes) {}

void FusedAllReduce::set_compression(const ps::compression::CompressionConfig& config) {
  if (config.mode == ps::compression::CompressionMode::kNone) {
    compressed_.reset();
  } else {
    compressed_.emplace("allreduce", config);
  }
}

void FusedAllReduce::run(const std::vector<Item>& items) {
  // A loss the heartbeats saw already: say so rather than wait.
  member_.check_peers();
  std::vector<Item> run;
  size_t run_bytes = 0;
  for (const Item& item : items) {
    const core::NDArray& stored = item.second;
    const size_t bytes = stored.nbytes();
    if (!run.empty() && (run[0].second.dtype() != stored.dtype() || run_bytes + bytes > bucket_bytes_)) {
      run_fused(run, run_bytes);
      run.clear();
      run_bytes = 0;
    }
    run.push_back(item);
    run_bytes += bytes;
    if (bytes >= bucket_bytes_) {
      run_fused(run, run_bytes);
      run.clear();
      run_bytes = 0;
    }
  }
  if (!run.empty()) run_fused(run, run_bytes);
}

void FusedAllReduce::run_fused(const std::vector<Item>& run, size_t bytes) {
  const core::timeline::Span span("kvstore", "bucket", {"keys", static_cast<int64_t>(run.size())},
                                  {"bytes", static_cast<int64_t>(bytes)});
  std::vector<std::pair<Key, size_t>> keys;
  for (const Item& item : run) keys.emplace_back(item.first, item.second.nbytes());
  const uint64_t tag = tag_of(keys);
  const DType dtype = run[0].second.dtype();
  const bool compressed = compressed_ && dtype == DType::kFloat32;
  const auto step = [&](void* data, size_t count) {
    group_.run_step(
        [&](HostCommunicator& comm) {
          if (compressed) {
            const AllGatherBytes all_gather = [&comm, tag](const uint8_t* d, size_t size) {
              return collective::host::all_gather(comm, d, size, tag);
            };
            compressed_->run(static_cast<float*>(data), count, tag, all_gather);
          } else {
            comm.all_reduce_sum(data, count, dtype, tag);
          }
        },
        data, count * core::dtype_size(dtype), !compressed);
  };
  try {
    if (run.size() == 1) {
      step(run[0].second.data(), run[0].second.size());
      return;
    }
    fusion_.resize(bytes);
    size_t at = 0;
    for (const Item& item : run) {
      std::memcpy(fusion_.data() + at, item.second.data(), item.second.nbytes());
      at += item.second.nbytes();
    }
    step(fusion_.data(), bytes / core::dtype_size(dtype));
    at = 0;
    for (const Item& item : run) {
      std::memcpy(item.second.data(), fusion_.data() + at, item.second.nbytes());
      at += item.second.nbytes();
    }
  } catch (const Error& e) {
    if (e.code() != ErrorCode::kProtocol) throw;
    throw Error(ErrorCode::kProtocol,
                "allreduce: worker " + std::to_string(member_.rank()) + " all-reduces keys " + keys_text(keys) +
                    " here and another worker something else (keys pushed in another order, or other keys or "
                    "shapes: every worker must push the same keys in the same order): " + e.what());
  }
}

}  // namespace dt::kvstore
