// Which handles are alive, of which kind, and the object behind each.
//
// A freed or mistyped handle would otherwise be undefined behaviour; keeping
// the set of live handles turns "double free" and "use after free" into a
// clear status (and keeps the library clean under AddressSanitizer).
//
// The value a C caller holds is not the address of the object behind it but
// an id that is never handed out twice. An address comes back as soon as the
// allocator reuses freed memory, and a freed handle would then silently name
// the new object of the same kind: a use after free, or a second free, would
// hit an object its caller never saw. A freed id, by contrast, stays unknown
// for good, whatever the allocator does (nng's socket ids work the same way).
//
// The registry is the library's one piece of process-wide state: created on
// first use, never destroyed (so no destructor runs at exit while other
// threads may still call in), guarded by a mutex. Freeing a handle erases its
// entry, so the registry only ever holds the live handles.
#pragma once

#include <cstdint>

namespace dt::c_api {

// At most 16 kinds: the id keeps the kind in four bits (see the .cc file).
enum class HandleKind : uint8_t { kContext, kNDArray, kNamedArrays, kNet, kOptimizer, kKVStore, kDataLoader, kTrainer };

const char* handle_kind_name(HandleKind kind);

// The value behind a handle pointer the C caller holds.
using HandleId = std::uintptr_t;

// Registers object under a new id of this kind and returns the id. The object
// stays the caller's; whoever unregisters the id deletes it.
HandleId register_handle(void* object, HandleKind kind);
// The object behind id. Throws Error(kInvalidHandle), naming param, unless
// id is alive and of this kind.
void* lookup_handle(HandleId id, HandleKind kind, const char* param);
// Like lookup_handle, and forgets id for good: the caller deletes the object.
void* unregister_handle(HandleId id, HandleKind kind, const char* param);

}  // namespace dt::c_api
