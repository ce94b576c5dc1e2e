// The structs behind the opaque handle types of dt_c_api.h, and the checked
// conversions from handle pointers to them. A handle pointer holds an id,
// not the struct's address (handle_registry.h says why). Every shim goes
// through arg()/handle() so NULL, freed and mistyped handles are caught in
// one place, and creates and frees handles only through adopt_handle(),
// new_handle() and free_handle().
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "c_api/api_guard.h"
#include "c_api/handle_registry.h"
#include "core/context.h"
#include "core/error.h"
#include "core/ndarray.h"
#include "core/safetensors.h"
#include "kvstore/kvstore.h"
#include "optim/optimizer_config.h"
#include "dt_c_api.h"

namespace dt::data {
class BatchLoader;
}  // namespace dt::data
namespace dt::train {
class Trainer;
}  // namespace dt::train

namespace dt::nn {
// Complete only in the shims that use nets (net_api.cc, trainer_api.cc), so
// the others need not compile the layer headers.
class Net;
}  // namespace dt::nn

struct dt_context {
  std::shared_ptr<dt::core::Context> impl;
};

struct dt_ndarray {
  dt::core::NDArray impl;
};

struct dt_named_arrays {
  dt::core::SafetensorsContents impl;
};

struct dt_net {
  std::shared_ptr<dt::nn::Net> impl;  // shared: a trainer keeps its net alive
};

struct dt_optimizer {
  dt::optim::OptimizerConfig impl;
};

// Shared: a trainer keeps the store it synchronises through alive.
struct dt_kvstore {
  std::shared_ptr<dt::kvstore::KVStore> impl;
  // String keys seen by this handle, to report two names that hash alike.
  std::mutex string_keys_mutex;
  std::unordered_map<uint64_t, std::string> string_keys;
  // The state the last dt_kvstore_hand_over_state received, until
  // dt_kvstore_handed_state copies it out (a collective cannot be asked
  // twice for its size and then its bytes).
  mutable std::mutex handed_state_mutex;
  std::vector<uint8_t> handed_state;
};

// Complete in data_api.cc and trainer_api.cc, like dt_net.
struct dt_data_loader {
  std::unique_ptr<dt::data::BatchLoader> impl;
  size_t num_samples = 0;
  ~dt_data_loader();
};

struct dt_trainer {
  std::unique_ptr<dt::train::Trainer> impl;
  ~dt_trainer();
};

namespace dt::c_api {

template <typename H>
struct HandleTraits;
template <>
struct HandleTraits<dt_context> {
  static constexpr HandleKind kind = HandleKind::kContext;
};
template <>
struct HandleTraits<dt_ndarray> {
  static constexpr HandleKind kind = HandleKind::kNDArray;
};
template <>
struct HandleTraits<dt_named_arrays> {
  static constexpr HandleKind kind = HandleKind::kNamedArrays;
};
template <>
struct HandleTraits<dt_net> {
  static constexpr HandleKind kind = HandleKind::kNet;
};
template <>
struct HandleTraits<dt_optimizer> {
  static constexpr HandleKind kind = HandleKind::kOptimizer;
};
template <>
struct HandleTraits<dt_kvstore> {
  static constexpr HandleKind kind = HandleKind::kKVStore;
};
template <>
struct HandleTraits<dt_data_loader> {
  static constexpr HandleKind kind = HandleKind::kDataLoader;
};
template <>
struct HandleTraits<dt_trainer> {
  static constexpr HandleKind kind = HandleKind::kTrainer;
};

// A pointer argument that must not be NULL.
template <typename T>
T* arg(T* pointer, const char* param) {
  if (pointer == nullptr) {
    throw core::Error(core::ErrorCode::kInvalidArgument, std::string(param) + " is NULL");
  }
  return pointer;
}

// A handle pointer is an id in disguise (see handle_registry.h): these two
// are the only places that convert between them. Nothing else may
// dereference a handle pointer, or take one for the address of its struct.
template <typename H>
HandleId id_of(H* pointer) {
  return reinterpret_cast<HandleId>(pointer);
}

template <typename H>
H* handle_of(HandleId id) {
  return reinterpret_cast<H*>(id);
}

// The struct behind a handle argument that is not NULL, alive, of its kind.
template <typename H>
H& handle(H* pointer, const char* param) {
  arg(pointer, param);
  using Struct = std::remove_const_t<H>;
  return *static_cast<Struct*>(lookup_handle(id_of(pointer), HandleTraits<Struct>::kind, param));
}

// Registers owned under a new handle, which then owns it; the caller stores
// the handle in its out-parameter only after everything else has succeeded.
template <typename H>
H* adopt_handle(std::unique_ptr<H> owned) {
  const HandleId id = register_handle(owned.get(), HandleTraits<H>::kind);
  owned.release();
  return handle_of<H>(id);
}

// Allocates a handle around value, like adopt_handle.
template <typename H, typename V>
H* new_handle(V&& value) {
  return adopt_handle(std::make_unique<H>(H{std::forward<V>(value)}));
}

// Frees a handle given to a dt_*_free function: NULL is a no-op; a handle that
// is not alive is left alone and reported through dt_last_error().
template <typename H>
void free_handle(H* pointer, const char* function) noexcept {
  if (pointer == nullptr) return;
  const char* param = "the handle";
  H* object = nullptr;
  try {
    object = static_cast<H*>(unregister_handle(id_of(pointer), HandleTraits<H>::kind, param));
  } catch (const core::Error& e) {
    try {
      set_last_error(std::string(function) + ": ignored: " + e.what());
    } catch (...) {
      // No memory even for the message: the handle is still ignored.
    }
    return;
  } catch (...) {
    // Only building the rejection's message can fail otherwise: nothing was
    // unregistered, so nothing is deleted.
    return;
  }
  delete object;
}

}  // namespace dt::c_api
