// dt_kvstore_*: keyed tensor stores.
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "c_api/api_guard.h"
#include "c_api/buffer_out.h"
#include "c_api/handles.h"
#include "c_api/ps_options.h"
#include "core/fnv1a.h"
#include "kvstore/kvstore_factory.h"
#include "dt_c_api.h"

using dt::c_api::arg;
using dt::c_api::guarded;
using dt::c_api::handle;
using dt::core::Error;
using dt::core::ErrorCode;
using dt::core::NDArray;
using dt::kvstore::Key;

namespace {

constexpr Key kStringKeyBit = Key{1} << 63;

std::vector<Key> integer_keys(const uint64_t* keys, size_t count) {
  if (count > 0) arg(keys, "keys");
  std::vector<Key> out(keys, keys + count);
  for (size_t i = 0; i < count; ++i) {
    if (out[i] & kStringKeyBit) {
      throw Error(ErrorCode::kInvalidArgument,
                  "keys[" + std::to_string(i) + "] = " + std::to_string(out[i]) + " is not below 2^63");
    }
  }
  return out;
}

// FNV-1a: stable across processes and platforms, so every worker maps a
// name to the same key without talking to the others.
Key string_key(dt_kvstore& kv, const char* name, size_t index) {
  if (name == nullptr) throw Error(ErrorCode::kInvalidArgument, "keys[" + std::to_string(index) + "] is NULL");
  const Key key = dt::core::fnv1a64(name) | kStringKeyBit;
  std::lock_guard<std::mutex> lock(kv.string_keys_mutex);
  auto [it, inserted] = kv.string_keys.emplace(key, name);
  if (!inserted && it->second != name) {
    throw Error(ErrorCode::kInvalidArgument,
                "string keys \"" + it->second + "\" and \"" + name + "\" map to the same key; rename one");
  }
  return key;
}

std::vector<Key> string_keys(dt_kvstore& kv, const char* const* keys, size_t count) {
  if (count > 0) arg(keys, "keys");
  std::vector<Key> out;
  out.reserve(count);
  for (size_t i = 0; i < count; ++i) out.push_back(string_key(kv, keys[i], i));
  return out;
}

template <typename ArrayHandle>
std::vector<NDArray> arrays(ArrayHandle const* handles, size_t count, const char* param) {
  if (count > 0) arg(handles, param);
  std::vector<NDArray> out;
  out.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    out.push_back(handle(handles[i], (std::string(param) + "[" + std::to_string(i) + "]").c_str()).impl);
  }
  return out;
}

// Both create calls: options NULL takes every default from the environment
// (DT_*_TIMEOUT_S, DT_WORKER_LOSS, DMLC_*...), so that a program started by
// dtrun gets the job's settings whichever call it makes.
void create_store(dt_kvstore** out, const char* type, const dt_kvstore_options* options) {
  arg(out, "out");
  arg(type, "type");
  const dt_kvstore_options o = dt::c_api::kvstore_options_from(options);
  const dt::ps::PsOptions ps_options = dt::c_api::ps_options_from(o);
  const dt::ps::JobOverrides layout = dt::c_api::job_overrides_from(o);
  auto owned = std::make_unique<dt_kvstore>();
  owned->impl = dt::kvstore::create_kvstore(type, ps_options, layout);
  *out = dt::c_api::adopt_handle(std::move(owned));
}

}  // namespace

extern "C" {

dt_status dt_kvstore_create(dt_kvstore** out, const char* type) {
  return guarded(__func__, [&] { create_store(out, type, nullptr); });
}

dt_status dt_kvstore_create_ex(dt_kvstore** out, const char* type, const dt_kvstore_options* options) {
  return guarded(__func__, [&] { create_store(out, type, options); });
}

void dt_kvstore_free(dt_kvstore* kv) { dt::c_api::free_handle(kv, __func__); }

dt_status dt_kvstore_type(const char** out, const dt_kvstore* kv) {
  return guarded(__func__, [&] {
    arg(out, "out");
    const std::string type = handle(kv, "kv").impl->type();
    // Static text: the store's type is one of a fixed set of names.
    for (const char* name : {"local", "device", "nccl", "dist_sync", "dist_async", "dist_sync_device",
                             "dist_async_device", "dist_nccl", "allreduce"}) {
      if (type == name) {
        *out = name;
        return;
      }
    }
    throw Error(ErrorCode::kInternal, "kvstore reports an unknown type '" + type + "'");
  });
}

dt_status dt_kvstore_rank(int32_t* out, const dt_kvstore* kv) {
  return guarded(__func__, [&] {
    arg(out, "out");
    *out = handle(kv, "kv").impl->rank();
  });
}

dt_status dt_kvstore_traffic(int64_t* out_bytes_sent, int64_t* out_bytes_received, const dt_kvstore* kv) {
  return guarded(__func__, [&] {
    arg(out_bytes_sent, "out_bytes_sent");
    arg(out_bytes_received, "out_bytes_received");
    const dt::core::Traffic traffic = handle(kv, "kv").impl->traffic();
    *out_bytes_sent = static_cast<int64_t>(traffic.bytes_sent);
    *out_bytes_received = static_cast<int64_t>(traffic.bytes_received);
  });
}

dt_status dt_kvstore_num_workers(int32_t* out, const dt_kvstore* kv) {
  return guarded(__func__, [&] {
    arg(out, "out");
    *out = handle(kv, "kv").impl->num_workers();
  });
}

dt_status dt_kvstore_joined_running_job(int32_t* out_joined, int64_t* out_rounds_before, const dt_kvstore* kv) {
  return guarded(__func__, [&] {
    arg(out_joined, "out_joined");
    arg(out_rounds_before, "out_rounds_before");
    const dt::kvstore::KVStore& store = *handle(kv, "kv").impl;
    const dt::kvstore::Elastic* elastic = store.elastic();  // null: nobody joins
    *out_joined = elastic && elastic->joined_running_job() ? 1 : 0;
    *out_rounds_before = elastic ? elastic->rounds_before_joining() : 0;
  });
}

dt_status dt_kvstore_admit_joining_workers(int32_t* out_admitted, dt_kvstore* kv) {
  return guarded(__func__, [&] {
    arg(out_admitted, "out_admitted");
    dt::kvstore::Elastic* elastic = handle(kv, "kv").impl->elastic();  // null: nobody joins
    *out_admitted = elastic && elastic->admit_joining_workers() ? 1 : 0;
  });
}

dt_status dt_kvstore_hand_over_state(size_t* out_length, dt_kvstore* kv, const void* src, size_t nbytes) {
  return guarded(__func__, [&] {
    arg(out_length, "out_length");
    if (src == nullptr && nbytes > 0) {
      throw Error(ErrorCode::kInvalidArgument, "src is NULL but nbytes is " + std::to_string(nbytes));
    }
    auto& h = handle(kv, "kv");
    const auto* bytes = static_cast<const uint8_t*>(src);
    dt::kvstore::Elastic* elastic = h.impl->elastic();  // null: nobody joins
    if (!elastic) throw dt::kvstore::no_hand_over(h.impl->type());
    std::vector<uint8_t> handed = elastic->hand_over_state(std::vector<uint8_t>(bytes, bytes + nbytes));
    std::lock_guard<std::mutex> lock(h.handed_state_mutex);
    h.handed_state = std::move(handed);
    *out_length = h.handed_state.size();
  });
}

dt_status dt_kvstore_handed_state(char* buf, size_t capacity, size_t* out_length, const dt_kvstore* kv) {
  return guarded(__func__, [&] {
    const auto& h = handle(kv, "kv");
    std::lock_guard<std::mutex> lock(h.handed_state_mutex);
    dt::c_api::write_bytes_out(buf, capacity, out_length, h.handed_state.data(), h.handed_state.size());
  });
}

dt_status dt_kvstore_init(dt_kvstore* kv, const uint64_t* keys, const dt_ndarray* const* values, size_t count) {
  return guarded(__func__, [&] {
    auto& store = *handle(kv, "kv").impl;
    store.init(integer_keys(keys, count), arrays(values, count, "values"));
  });
}

dt_status dt_kvstore_push(dt_kvstore* kv, const uint64_t* keys, const dt_ndarray* const* values, size_t count,
                          int32_t priority) {
  return guarded(__func__, [&] {
    auto& store = *handle(kv, "kv").impl;
    store.push(integer_keys(keys, count), arrays(values, count, "values"), priority);
  });
}

dt_status dt_kvstore_pull(dt_kvstore* kv, const uint64_t* keys, dt_ndarray* const* outs, size_t count,
                          int32_t priority) {
  return guarded(__func__, [&] {
    auto& store = *handle(kv, "kv").impl;
    store.pull(integer_keys(keys, count), arrays(outs, count, "outs"), priority);
  });
}

dt_status dt_kvstore_pushpull(dt_kvstore* kv, const uint64_t* keys, const dt_ndarray* const* values,
                              dt_ndarray* const* outs, size_t count, int32_t priority) {
  return guarded(__func__, [&] {
    auto& store = *handle(kv, "kv").impl;
    store.pushpull(integer_keys(keys, count), arrays(values, count, "values"), arrays(outs, count, "outs"),
                   priority);
  });
}

dt_status dt_kvstore_broadcast(dt_kvstore* kv, const uint64_t* keys, const dt_ndarray* const* values,
                               dt_ndarray* const* outs, size_t count) {
  return guarded(__func__, [&] {
    auto& store = *handle(kv, "kv").impl;
    store.broadcast(integer_keys(keys, count), arrays(values, count, "values"), arrays(outs, count, "outs"));
  });
}

dt_status dt_kvstore_init_str(dt_kvstore* kv, const char* const* keys, const dt_ndarray* const* values,
                              size_t count) {
  return guarded(__func__, [&] {
    auto& h = handle(kv, "kv");
    h.impl->init(string_keys(h, keys, count), arrays(values, count, "values"));
  });
}

dt_status dt_kvstore_push_str(dt_kvstore* kv, const char* const* keys, const dt_ndarray* const* values, size_t count,
                              int32_t priority) {
  return guarded(__func__, [&] {
    auto& h = handle(kv, "kv");
    h.impl->push(string_keys(h, keys, count), arrays(values, count, "values"), priority);
  });
}

dt_status dt_kvstore_pull_str(dt_kvstore* kv, const char* const* keys, dt_ndarray* const* outs, size_t count,
                              int32_t priority) {
  return guarded(__func__, [&] {
    auto& h = handle(kv, "kv");
    h.impl->pull(string_keys(h, keys, count), arrays(outs, count, "outs"), priority);
  });
}

dt_status dt_kvstore_pushpull_str(dt_kvstore* kv, const char* const* keys, const dt_ndarray* const* values,
                                  dt_ndarray* const* outs, size_t count, int32_t priority) {
  return guarded(__func__, [&] {
    auto& h = handle(kv, "kv");
    h.impl->pushpull(string_keys(h, keys, count), arrays(values, count, "values"), arrays(outs, count, "outs"),
                     priority);
  });
}

dt_status dt_kvstore_set_optimizer(dt_kvstore* kv, const dt_optimizer* opt) {
  return guarded(__func__, [&] {
    auto& store = *handle(kv, "kv").impl;
    store.set_optimizer(handle(opt, "opt").impl);
  });
}

dt_status dt_kvstore_set_gradient_compression(dt_kvstore* kv, const char* spec) {
  return guarded(__func__, [&] {
    auto& store = *handle(kv, "kv").impl;
    arg(spec, "spec");
    store.set_gradient_compression(spec);
  });
}

dt_status dt_kvstore_barrier(dt_kvstore* kv) {
  return guarded(__func__, [&] { handle(kv, "kv").impl->barrier(); });
}

}  // extern "C"
