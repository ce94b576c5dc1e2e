// The one rule for the option and info structs of dt_c_api.h ("Option and
// info structs" there): every _init, every call that reads such a struct
// and every call that fills one goes through the three functions below, so
// shorter, longer and NULL structs mean the same thing everywhere.
#pragma once

#include <cstddef>
#include <cstring>
#include <type_traits>

#include "dt_c_api.h"

namespace dt::c_api {

// Where this release's last field of each struct ends: what is copied.
// Between it and sizeof lies tail padding, which is never read (a copy of
// a struct need not keep its padding, so the caller's bytes there are
// arbitrary); a newer release appends its fields past this sizeof, which is
// where the zero check of a longer struct starts.
template <typename Struct>
inline constexpr size_t kKnownEnd = 0;
#define DT_KNOWN_END(type, last) \
  template <>                    \
  inline constexpr size_t kKnownEnd<type> = offsetof(type, last) + sizeof(type::last)
DT_KNOWN_END(dt_build_info, gpu_count);
DT_KNOWN_END(dt_memory_stats, allocations);
DT_KNOWN_END(dt_loss_scaling_options, growth_interval);
DT_KNOWN_END(dt_data_loader_options, num_workers);
DT_KNOWN_END(dt_trainer_options, sparse_no_accumulation);
DT_KNOWN_END(dt_fit_options, checkpoint_dir);
DT_KNOWN_END(dt_kvstore_options, tls_ca_file);
#undef DT_KNOWN_END

namespace detail {
// The rule on bytes: known_end is kKnownEnd of the struct, what names the
// parameter in messages. Each throws core::Error (kInvalidArgument, or
// kNotSupported for a set byte this library does not know).
void init_bytes(void* out, size_t struct_size, const void* defaults, size_t known_end, const char* what);
void read_bytes(void* merged, const void* given, size_t known_end, size_t library_size, const char* what);
void write_bytes(void* out, const void* value, size_t known_end, const char* what);
}  // namespace detail

template <typename Struct>
constexpr size_t known_end() {
  static_assert(std::is_trivially_copyable_v<Struct> && offsetof(Struct, struct_size) == 0,
                "an option struct is plain data that starts with struct_size");
  // Catches a field appended without moving kKnownEnd: only padding may
  // follow the last field.
  static_assert(kKnownEnd<Struct> > 0 && sizeof(Struct) - kKnownEnd<Struct> < alignof(Struct),
                "kKnownEnd must name the struct's last field");
  return kKnownEnd<Struct>;
}

// The library's struct: zero (padding included, as _init promises), then
// set_defaults sets the defaults.
template <typename Struct>
void fill_defaults(Struct* defaults, void (*set_defaults)(Struct*)) {
  std::memset(defaults, 0, sizeof(Struct));
  defaults->struct_size = sizeof(Struct);
  set_defaults(defaults);
}

// dt_X_init: writes struct_size bytes into the caller's struct.
template <typename Struct>
void init_struct(Struct* out, size_t struct_size, void (*set_defaults)(Struct*), const char* what) {
  Struct defaults;
  fill_defaults(&defaults, set_defaults);
  detail::init_bytes(out, struct_size, &defaults, known_end<Struct>(), what);
}

// A caller's struct over the defaults (NULL: the defaults). The result's
// struct_size is this library's.
template <typename Struct>
Struct read_struct(const Struct* given, void (*set_defaults)(Struct*), const char* what) {
  Struct merged;
  fill_defaults(&merged, set_defaults);
  if (given != nullptr) detail::read_bytes(&merged, given, known_end<Struct>(), sizeof(Struct), what);
  return merged;
}

// Fills a caller's struct (not NULL) with value, as far as its struct_size
// reaches; bytes past this library's fields are left as the caller's _init
// wrote them.
template <typename Struct>
void write_struct(Struct* out, const Struct& value, const char* what) {
  detail::write_bytes(out, &value, known_end<Struct>(), what);
}

}  // namespace dt::c_api
