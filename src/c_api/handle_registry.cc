#include "c_api/handle_registry.h"

#include <mutex>
#include <string>
#include <unordered_map>

#include "core/error.h"

namespace dt::c_api {

namespace {

// Ids are 64-bit; a 32-bit pointer could not carry a never-reused serial.
static_assert(sizeof(HandleId) == 8, "handle ids need 64-bit pointers");

// The layout of an id, from the top:
//   bits 63..56  kTag. An address with this top byte is non-canonical on
//                x86-64, so code that dereferenced a handle as if it were
//                the struct's address faults at once instead of reading
//                whatever object lives there; the tag also tells a freed
//                handle from a value that never was one.
//   bits 55..5   the serial number: 1, 2, 3, ... never reused. 2^51 of them
//                last seven years at ten million handles a second; after
//                that creation fails rather than reuse one.
//   bits 4..1    the kind, so a mistyped handle is named as what it is even
//                after it was freed.
//   bit 0        1: odd, so never the address of any struct.
constexpr HandleId kTag = HandleId{0xD7} << 56;
constexpr HandleId kTagMask = HandleId{0xFF} << 56;
constexpr int kSerialShift = 5;
constexpr HandleId kMaxSerial = (HandleId{1} << (56 - kSerialShift)) - 1;
constexpr int kKindShift = 1;
constexpr HandleId kKindMask = HandleId{0xF};

static_assert(static_cast<HandleId>(HandleKind::kTrainer) <= kKindMask, "a kind must fit in four bits");

HandleId make_id(HandleId serial, HandleKind kind) {
  return kTag | serial << kSerialShift | static_cast<HandleId>(kind) << kKindShift | 1;
}

HandleKind kind_of(HandleId id) { return static_cast<HandleKind>(id >> kKindShift & kKindMask); }

bool is_id(HandleId id) { return (id & kTagMask) == kTag && (id & 1) == 1; }

HandleId serial_of(HandleId id) { return (id & ~kTagMask) >> kSerialShift; }

struct Registry {
  std::mutex mutex;
  HandleId next_serial = 1;
  // The kind is in the key, so the value is only the object.
  std::unordered_map<HandleId, void*> live;
};

Registry& registry() {
  // Deliberately leaked: see the header.
  static Registry* instance = new Registry();
  return *instance;
}

// Why id is not a live handle of this kind; called with the registry locked.
[[noreturn]] void reject(const Registry& r, HandleId id, HandleKind kind, const char* param) {
  std::string message = std::string(param);
  if (!is_id(id)) {
    message += " is not a handle (not a value the library handed out)";
  } else if (serial_of(id) == 0 || serial_of(id) >= r.next_serial) {
    message += " is not a handle the library handed out (a corrupted value?)";
  } else {
    const bool alive = r.live.count(id) != 0;
    const char* actual = handle_kind_name(kind_of(id));
    if (kind_of(id) == kind) {
      message += " is a freed " + std::string(actual);
    } else {
      message += std::string(" is ") + (alive ? "a " : "a freed ") + actual + ", not a " + handle_kind_name(kind);
    }
  }
  throw core::Error(core::ErrorCode::kInvalidHandle, message);
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

HandleId register_handle(void* object, HandleKind kind) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  if (r.next_serial > kMaxSerial) {
    throw core::Error(core::ErrorCode::kOutOfMemory, "the process has used up its handle ids");
  }
  const HandleId id = make_id(r.next_serial, kind);
  r.live.emplace(id, object);  // may throw bad_alloc: then the serial stays unused
  ++r.next_serial;
  return id;
}

void* lookup_handle(HandleId id, HandleKind kind, const char* param) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.live.find(id);
  // A live id was made with its kind, so the kind check can wait for a hit.
  if (it == r.live.end() || kind_of(id) != kind) reject(r, id, kind, param);
  return it->second;
}

void* unregister_handle(HandleId id, HandleKind kind, const char* param) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.live.find(id);
  if (it == r.live.end() || kind_of(id) != kind) reject(r, id, kind, param);
  void* object = it->second;
  r.live.erase(it);
  return object;
}

}  // namespace dt::c_api
