#include "c_api/options.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "c_api/handles.h"
#include "core/error.h"

namespace dt::c_api::detail {

namespace {

using core::Error;
using core::ErrorCode;

constexpr size_t kSizeField = sizeof(size_t);

size_t size_of(const void* s) {
  size_t size;
  std::memcpy(&size, s, sizeof size);
  return size;
}

// The sizeof of a struct that starts with a size_t is at least that and a
// multiple of its alignment; any other value means the struct was not
// initialised, or sizeof was taken of something else. Since no field is
// wider than 8 bytes, such a size never ends inside a field, so the copies
// below never take half of one.
void check_size(size_t struct_size, const std::string& what) {
  if (struct_size < kSizeField || struct_size % alignof(size_t) != 0) {
    throw Error(ErrorCode::kInvalidArgument, what + " is " + std::to_string(struct_size) +
                                                 ", the size of no struct: pass sizeof the struct to its _init function");
  }
}

}  // namespace

void init_bytes(void* out, size_t struct_size, const void* defaults, size_t known_end, const char* what) {
  arg(out, what);
  check_size(struct_size, "struct_size");
  const size_t known = std::min(struct_size, known_end);
  auto* bytes = static_cast<unsigned char*>(out);
  std::memcpy(bytes, defaults, known);
  std::memset(bytes + known, 0, struct_size - known);
  std::memcpy(bytes, &struct_size, kSizeField);
}

void read_bytes(void* merged, const void* given, size_t known_end, size_t library_size, const char* what) {
  const size_t size = size_of(given);
  check_size(size, std::string(what) + "->struct_size");
  const auto* bytes = static_cast<const unsigned char*>(given);
  const unsigned char* set = std::find_if(bytes + std::min(size, library_size), bytes + size,
                                          [](unsigned char b) { return b != 0; });
  if (set != bytes + size) {
    throw Error(ErrorCode::kNotSupported,
                std::string(what) + " sets byte " + std::to_string(set - bytes) + " of its " + std::to_string(size) +
                    ", past the " + std::to_string(library_size) +
                    " this library knows: an option of a newer disttrain (link that, or leave the field 0)");
  }
  const size_t known = std::min(size, known_end);
  std::memcpy(static_cast<unsigned char*>(merged) + kSizeField, bytes + kSizeField, known - kSizeField);
}

void write_bytes(void* out, const void* value, size_t known_end, const char* what) {
  arg(out, what);
  const size_t size = size_of(out);
  check_size(size, std::string(what) + "->struct_size");
  const size_t known = std::min(size, known_end);
  std::memcpy(static_cast<unsigned char*>(out) + kSizeField, static_cast<const unsigned char*>(value) + kSizeField,
              known - kSizeField);
}

}  // namespace dt::c_api::detail
