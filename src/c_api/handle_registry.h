// Which handle pointers are alive, and of which kind.
//
// The C API hands out raw pointers, so a freed or mistyped handle would
// otherwise be undefined behaviour. Keeping the set of live handles is the
// only way to turn "double free" and "use after free" into a clear status
// (and to stay clean under AddressSanitizer). It is the library's one piece of
// process-wide state: created on first use, never destroyed (so no destructor
// runs at exit while other threads may still call in), guarded by a mutex.
#pragma once

#include <cstdint>

namespace dt::c_api {

enum class HandleKind : uint8_t { kContext, kNDArray, kNamedArrays, kNet, kOptimizer, kKVStore, kDataLoader, kTrainer };

const char* handle_kind_name(HandleKind kind);

void register_handle(const void* handle, HandleKind kind);
// True if handle was alive with this kind (and is now forgotten).
bool unregister_handle(const void* handle, HandleKind kind);
// Throws Error(kInvalidHandle) unless handle is alive with this kind.
void check_handle(const void* handle, HandleKind kind, const char* param);

}  // namespace dt::c_api
