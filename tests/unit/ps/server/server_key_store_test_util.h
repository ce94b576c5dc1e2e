// What the server key store tests share: part descriptions, recorded pulls
// and initialized keys.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <atomic>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "core/context.h"
#include "core/error.h"
#include "kvstore/local_kvstore.h"
#include "optim/optimizer_config.h"
#include "ps/server/key_store.h"

namespace dt::ps::server_key_store_test {

using core::DType;
using core::Error;
using core::ErrorCode;
using core::Shape;

inline PartInfo info(uint64_t key, int64_t n) { return PartInfo{PartKey{key, 0, n}, DType::kFloat32, Shape({n})}; }

inline size_t bytes(const std::vector<float>& v) { return v.size() * sizeof(float); }

// Pulls and records the value (and whether it arrived) from the callback.
struct PullResult {
  bool done = false;
  std::vector<float> value;
  std::string error;
  ServerKeyStore::PullDone callback() {
    return [this](const Error* e, const ServerKeyStore::PullAnswer& a) {
      done = true;
      if (e) {
        error = e->what();
        return;
      }
      EXPECT_EQ(a.encoding, 0) << "no compression here";
      value.resize(a.bytes / sizeof(float));
      std::memcpy(value.data(), a.data, a.bytes);
    };
  }
};

inline ServerKeyStore::PushDone ignore_done() {
  return [](const Error* e) { ASSERT_EQ(e, nullptr) << e->what(); };
}

inline void init_all(ServerKeyStore& store, uint64_t key, const std::vector<float>& value) {
  for (int w = store.num_workers() - 1; w >= 0; --w) store.init(w, info(key, value.size()), value.data(), bytes(value));
}

}  // namespace dt::ps::server_key_store_test
