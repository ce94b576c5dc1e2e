#include "c_api/handle_registry.h"

#include <mutex>
#include <string>
#include <unordered_map>

#include "core/error.h"

namespace dt::c_api {

namespace {

struct Registry {
  std::mutex mutex;
  std::unordered_map<const void*, HandleKind> live;
};

Registry& registry() {
  // Deliberately leaked: see the header.
  static Registry* instance = new Registry();
  return *instance;
}

}  // namespace

const char* handle_kind_name(HandleKind kind) {
  switch (kind) {
    case HandleKind::kContext: return "dt_context";
    case HandleKind::kNDArray: return "dt_ndarray";
    case HandleKind::kNamedArrays: return "dt_named_arrays";
    case HandleKind::kNet: return "dt_net";
    case HandleKind::kOptimizer: return "dt_optimizer";
    case HandleKind::kKVStore: return "dt_kvstore";
    case HandleKind::kDataLoader: return "dt_data_loader";
    case HandleKind::kTrainer: return "dt_trainer";
  }
  return "handle";
}

void register_handle(const void* handle, HandleKind kind) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.live[handle] = kind;
}

bool unregister_handle(const void* handle, HandleKind kind) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.live.find(handle);
  if (it == r.live.end() || it->second != kind) return false;
  r.live.erase(it);
  return true;
}

void check_handle(const void* handle, HandleKind kind, const char* param) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.live.find(handle);
  if (it == r.live.end()) {
    throw core::Error(core::ErrorCode::kInvalidHandle,
                      std::string(param) + " is not a live " + handle_kind_name(kind) + " (already freed?)");
  }
  if (it->second != kind) {
    throw core::Error(core::ErrorCode::kInvalidHandle, std::string(param) + " is a " +
                                                           handle_kind_name(it->second) + ", not a " +
                                                           handle_kind_name(kind));
  }
}

}  // namespace dt::c_api
