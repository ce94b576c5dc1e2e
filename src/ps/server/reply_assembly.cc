#include "ps/server/reply_assembly.h"

#include <atomic>
#include <cstring>
#include <mutex>
#include <utility>

namespace dt::ps {

using core::Error;
using core::ErrorCode;

namespace {

// One request's outstanding work (pushes consumed, pulls answered), plus one
// count for the handler itself so the reply cannot leave before every part
// was handed to the store. The last to finish sends the reply.
//
// A reply whose pulls all go in full is sized up front and the pulls copy
// straight into it. When a pull may come encoded (its size known only then),
// the reply is deferred: each pull's answer is kept (an encoding by
// reference, it never changes) and the reply assembled by the last one.
class Completion {
 public:
  Completion(RequestServer::Reply reply, size_t count) : reply_(reply), remaining_(count + 1) {}

  void fail(const Error& error) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!error_) error_ = std::make_unique<Error>(error);
  }
  // A deferred reply of these slices (data_bytes and encoding come with
  // their answers).
  void defer(std::vector<SliceSpec> specs) {
    deferred_ = std::move(specs);
    kept_.resize(deferred_.size());
  }
  // Slice i's answer, for a deferred reply.
  void keep(size_t i, const ServerKeyStore::PullAnswer& answer) {
    deferred_[i].data_bytes = answer.bytes;
    deferred_[i].encoding = answer.encoding;
    if (answer.shared) {
      kept_[i].shared = answer.shared;
    } else {
      const auto* begin = static_cast<const uint8_t*>(answer.data);
      kept_[i].copy.assign(begin, begin + answer.bytes);
    }
  }
  // A push-only request with slices kept at new copies still being filled
  // (said in the reply, DataReply.held). Before the handler's own finish.
  void mark_held() { held_ = true; }
  // Settles n pieces of work; the last one replies.
  void finish(size_t n = 1) {
    if (remaining_.fetch_sub(n, std::memory_order_acq_rel) != n) return;
    if (error_) {
      reply_(encode_data_error(error_->code(), error_->what()));
    } else if (held_) {
      reply_(encode_held_push_reply());
    } else if (!kept_.empty()) {
      reply_(assemble());
    } else {
      reply_(std::move(answer.message));
    }
  }
  EncodedData answer;  // filled by pull callbacks in disjoint regions

 private:
  struct Kept {
    std::shared_ptr<const std::vector<uint8_t>> shared;
    std::vector<uint8_t> copy;
  };
  Message assemble() {
    EncodedData out = encode_data_reply(deferred_);
    for (size_t i = 0; i < kept_.size(); ++i) {
      if (deferred_[i].data_bytes == 0) continue;
      const uint8_t* from = kept_[i].shared ? kept_[i].shared->data() : kept_[i].copy.data();
      std::memcpy(out.slice_data[i], from, deferred_[i].data_bytes);
    }
    return std::move(out.message);
  }

  std::vector<SliceSpec> deferred_;  // written in disjoint places by the pulls' callbacks
  std::vector<Kept> kept_;

  RequestServer::Reply reply_;
  std::atomic<size_t> remaining_;
  std::atomic<bool> held_{false};
  std::mutex mutex_;
  std::unique_ptr<Error> error_;
};

// A compressed push's float32 values; the job's codec must be the one the
// slice names.
std::vector<float> decode_push(const compression::GradientCodec* codec, const DecodedSlice& s) {
  const auto mode = static_cast<compression::CompressionMode>(s.encoding);
  if (codec == nullptr || codec->config().mode != mode) {
    throw Error(ErrorCode::kProtocol, "a push of key " + std::to_string(s.info.part.key) + " encoded with mode " +
                                          std::to_string(s.encoding) + ", but the job compresses with " +
                                          (codec ? codec->config().to_string() : std::string("none")));
  }
  std::vector<float> values(static_cast<size_t>(s.info.part.end - s.info.part.begin), 0.0f);
  codec->decode_add(s.data, s.data_bytes, values.data(), values.size());
  return values;
}

}  // namespace

void push_pull(ServerKeyStore& store, int worker, const std::vector<DecodedSlice>& slices, bool push, bool pull,
               const compression::GradientCodec* codec, const RequestServer::Reply& reply, bool resent) {
  std::vector<SliceSpec> specs;
  // Compressed pulls' sizes are known once they are answered.
  const bool deferred = pull && !slices.empty() && store.pulls_may_be_encoded();
  if (pull) {
    // The reply is sized from the parts as stored, never from what the
    // request claims: an unknown or misdescribed part is refused first.
    for (const DecodedSlice& s : slices) store.check_part(s.info, "pull");
    for (const DecodedSlice& s : slices) specs.push_back(SliceSpec{s.info, s.round, deferred ? 0 : part_bytes(s.info)});
  }
  auto completion = std::make_shared<Completion>(reply, slices.size() * ((push ? 1 : 0) + (pull ? 1 : 0)));
  if (deferred) {
    completion->defer(std::move(specs));
  } else {
    completion->answer = encode_data_reply(specs);
  }
  size_t started = 0;
  try {
    for (size_t i = 0; i < slices.size(); ++i) {
      const DecodedSlice& s = slices[i];
      if (push) {
        ++started;
        // The store consumes (or copies) the bytes before push returns.
        const std::vector<float> decoded = s.encoding != 0 ? decode_push(codec, s) : std::vector<float>();
        const void* data = s.encoding != 0 ? static_cast<const void*>(decoded.data()) : s.data;
        const size_t bytes = s.encoding != 0 ? decoded.size() * sizeof(float) : s.data_bytes;
        const bool kept = store.push(
            worker, s.info, s.round, data, bytes,
            [completion](const Error* error) {
              if (error) completion->fail(*error);
              completion->finish();
            },
            s.numbers, PushRoute{resent, s.adopt_from});
        // A new copy answers at once while it is filled (the worker must
        // not wait for it: see ServerKeyStore's "New copies"), and says so.
        if (kept && !pull) completion->mark_held();
      }
      if (pull) {
        ++started;
        if (deferred) {
          store.pull(s.info, s.round, [completion, i](const Error* error, const ServerKeyStore::PullAnswer& a) {
            if (error) {
              completion->fail(*error);
            } else {
              try {
                completion->keep(i, a);
              } catch (const std::bad_alloc&) {
                completion->fail(Error(ErrorCode::kOutOfMemory, "server out of memory answering a pull"));
              }
            }
            completion->finish();
          });
          continue;
        }
        uint8_t* dst = completion->answer.slice_data[i];
        const size_t expected = part_bytes(s.info);
        store.pull(s.info, s.round, [completion, dst, expected](const Error* error,
                                                                 const ServerKeyStore::PullAnswer& a) {
          if (error) {
            completion->fail(*error);
          } else if (a.encoding != 0 || a.bytes != expected) {
            // pulls_may_be_encoded() said no: nothing encodes after it does.
            completion->fail(Error(ErrorCode::kInternal, "a pull sized for the part's value was answered encoded"));
          } else {
            std::memcpy(dst, a.data, a.bytes);
          }
          completion->finish();
        });
      }
    }
  } catch (const Error& error) {
    // The piece that threw never started: settle it and everything after it.
    completion->fail(error);
    const size_t total = slices.size() * ((push ? 1 : 0) + (pull ? 1 : 0));
    // started counts the piece that threw; +1 for the handler's own count.
    completion->finish(total - (started - 1) + 1);
    return;
  }
  completion->finish();
}


Message part_state_reply(const PartInfo& info, const PartState& state,
                         const std::optional<std::pair<double, double>>& numbers) {
  // The value, the optimizer's arrays, then with compressed pulls the
  // residual and the round's encoding (a slice of the part itself, encoded).
  std::vector<SliceSpec> specs{SliceSpec{info, state.round, state.bytes}};
  std::vector<const void*> sources{state.value};
  std::vector<std::string> names;
  for (const auto& [name, array] : state.optimizer) {
    specs.push_back(SliceSpec{PartInfo{PartKey{0, 0, static_cast<int64_t>(array.size())}, array.dtype(), array.shape()},
                              -1, array.nbytes()});
    sources.push_back(array.data());
    names.push_back(name);
  }
  const size_t residual = specs.size();
  if (!state.pull_residual.empty()) {
    const auto n = static_cast<int64_t>(state.pull_residual.size());
    specs.push_back(
        SliceSpec{PartInfo{PartKey{0, 0, n}, core::DType::kFloat32, core::Shape({n})}, -1, n * sizeof(float)});
    sources.push_back(state.pull_residual.data());
  }
  const size_t encoded = specs.size();
  if (state.encoded) {
    SliceSpec spec{info, state.round, state.encoded->size()};
    spec.encoding = state.encoding;
    specs.push_back(spec);
    sources.push_back(state.encoded->data());
  }
  flatbuffers::FlatBufferBuilder fbb(256 + specs.size() * 160);
  const SliceTables tables = write_slices(fbb, specs);
  const auto slice_at = [&](size_t i) {
    return i < specs.size() ? tables.tables[i] : flatbuffers::Offset<wire::TensorSlice>();
  };
  auto arrays = fbb.CreateVector(tables.tables.data() + 1, names.size());
  auto name_vector = fbb.CreateVectorOfStrings(names);
  std::optional<double> learning_rate, rescale_grad;
  if (numbers) {
    learning_rate = numbers->first;
    rescale_grad = numbers->second;
  }
  uint8_t* payload = nullptr;
  Message message = make_message(
      fbb,
      wire::CreatePartStateReply(fbb, state.round, tables.tables[0], name_vector, arrays,
                                 state.pull_residual.empty() ? flatbuffers::Offset<wire::TensorSlice>() : slice_at(residual),
                                 state.encoded ? slice_at(encoded) : flatbuffers::Offset<wire::TensorSlice>(),
                                 wire_number(learning_rate), wire_number(rescale_grad)),
      tables.payload_bytes, &payload);
  EncodedData answer = placed(std::move(message), payload, specs, tables);
  for (size_t i = 0; i < specs.size(); ++i) {
    if (specs[i].data_bytes != 0) std::memcpy(answer.slice_data[i], sources[i], specs[i].data_bytes);
  }
  return std::move(answer.message);
}

}  // namespace dt::ps
