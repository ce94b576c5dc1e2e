// The options rule across two releases of one struct: V1 and V2 (V2 appends
// a field past V1's sizeof and leaves V1's tail padding unused), each side
// playing the library or the caller, which the C API tests can only
// simulate with one header.
#include "c_api/options.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>

#include "error_code_of.h"

namespace {

struct V1 {
  size_t struct_size;
  int32_t a;  // default 7
};

struct V2 {
  size_t struct_size;
  int32_t a;       // default 7
  int32_t unused;  // V1's tail padding: never a field, as copies need not keep it
  double c;        // added in V2, past V1's sizeof; 0: not set
};

}  // namespace

namespace dt::c_api {
template <>
inline constexpr size_t kKnownEnd<V1> = offsetof(V1, a) + sizeof(int32_t);
template <>
inline constexpr size_t kKnownEnd<V2> = offsetof(V2, c) + sizeof(double);
}  // namespace dt::c_api

namespace dt::c_api {
namespace {

using core::ErrorCode;
using test_support::code_of;

void v1_defaults(V1* s) { s->a = 7; }
void v2_defaults(V2* s) { s->a = 7; }

static_assert(sizeof(V1) == 16 && offsetof(V2, c) == 16, "c lies past V1's sizeof");

TEST(OptionsRule, OlderCallerGetsDefaultsAndNoWritePastItsStruct) {
  struct {
    V1 s;
    unsigned char canary[16];
  } caller;
  std::memset(&caller, 0xEE, sizeof caller);
  // The V2 library's _init, called by a V1 caller.
  init_struct(reinterpret_cast<V2*>(&caller.s), sizeof(V1), v2_defaults, "options");
  EXPECT_EQ(caller.s.struct_size, sizeof(V1));
  EXPECT_EQ(caller.s.a, 7);
  for (unsigned char byte : caller.canary) EXPECT_EQ(byte, 0xEE);

  caller.s.a = 3;
  const V2 read = read_struct(reinterpret_cast<const V2*>(&caller.s), v2_defaults, "options");
  EXPECT_EQ(read.struct_size, sizeof(V2));
  EXPECT_EQ(read.a, 3);
  EXPECT_EQ(read.c, 0.0);
}

TEST(OptionsRule, PaddingIsNeverRead) {
  // A struct returned or assigned by value may carry anything in its
  // padding; the same release's library must take it as it is.
  V1 caller;
  init_struct(&caller, sizeof caller, v1_defaults, "options");
  std::memset(reinterpret_cast<unsigned char*>(&caller) + offsetof(V1, a) + sizeof(int32_t), 0xEE, 4);
  caller.a = 5;
  EXPECT_EQ(read_struct(&caller, v1_defaults, "options").a, 5);
}

TEST(OptionsRule, NewerCallerIsReadWhenItsNewFieldsAreZero) {
  V2 caller;
  init_struct(&caller, sizeof caller, v2_defaults, "options");
  // The V1 library's _init, called by a V2 caller: V2's fields are zero.
  init_struct(reinterpret_cast<V1*>(&caller), sizeof caller, v1_defaults, "options");
  EXPECT_EQ(caller.struct_size, sizeof(V2));
  EXPECT_EQ(caller.c, 0.0);

  caller.a = 4;
  EXPECT_EQ(read_struct(reinterpret_cast<const V1*>(&caller), v1_defaults, "options").a, 4);

  std::string message;
  auto* raw = reinterpret_cast<unsigned char*>(&caller);
  raw[offsetof(V2, c)] = 1;  // the first byte of c: the one to name
  EXPECT_EQ(code_of([&] { read_struct(reinterpret_cast<const V1*>(&caller), v1_defaults, "options"); }, &message),
            ErrorCode::kNotSupported);
  EXPECT_NE(message.find("byte 16"), std::string::npos) << message;
  raw[offsetof(V2, c)] = 0;
  caller.unused = 1;  // V1's padding: not read
  EXPECT_EQ(read_struct(reinterpret_cast<const V1*>(&caller), v1_defaults, "options").a, 4);
}

TEST(OptionsRule, FillWritesOnlyTheCallersFields) {
  V2 value;
  fill_defaults(&value, v2_defaults);
  value.a = 9;
  value.c = 5;
  struct {
    V1 s;
    unsigned char canary[16];
  } older;
  std::memset(&older, 0xEE, sizeof older);
  older.s.struct_size = sizeof(V1);
  write_struct(reinterpret_cast<V2*>(&older.s), value, "out");
  EXPECT_EQ(older.s.a, 9);
  for (unsigned char byte : older.canary) EXPECT_EQ(byte, 0xEE);

  V2 newer;
  init_struct(&newer, sizeof newer, v2_defaults, "out");
  newer.c = 2.5;  // a V1 library leaves what it does not know alone
  write_struct(reinterpret_cast<V1*>(&newer), V1{sizeof(V1), 9}, "out");
  EXPECT_EQ(newer.a, 9);
  EXPECT_EQ(newer.c, 2.5);
}

TEST(OptionsRule, SizesNoStructHasAreRefused) {
  V2 s;
  std::memset(&s, 0xEE, sizeof s);
  for (size_t size : {size_t{0}, size_t{4}, sizeof(V2) - 4, sizeof(V2) + 1}) {
    EXPECT_EQ(code_of([&] { init_struct(&s, size, v2_defaults, "options"); }), ErrorCode::kInvalidArgument) << size;
    s.struct_size = size;
    EXPECT_EQ(code_of([&] { read_struct(&s, v2_defaults, "options"); }), ErrorCode::kInvalidArgument) << size;
  }
  EXPECT_EQ(code_of([&] { init_struct<V2>(nullptr, sizeof(V2), v2_defaults, "options"); }),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(read_struct<V2>(nullptr, v2_defaults, "options").a, 7);  // NULL: the defaults
}

}  // namespace
}  // namespace dt::c_api
