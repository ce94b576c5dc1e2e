#include "ops/conv_algorithm_cache.h"

#include <initializer_list>

#include "core/splitmix64.h"

namespace dt::ops {

ConvAlgorithmKey ConvAlgorithmKey::of(const Conv2DParams& p, core::DType dtype, ConvMath math, int device) {
  ConvAlgorithmKey k;
  k.N = p.N, k.C = p.C, k.H = p.H, k.W = p.W, k.K = p.K, k.R = p.R, k.S = p.S;
  k.stride_h = p.stride_h, k.stride_w = p.stride_w, k.pad_h = p.pad_h, k.pad_w = p.pad_w;
  k.dilation_h = p.dilation_h, k.dilation_w = p.dilation_w, k.groups = p.groups, k.layout = p.layout;
  k.dtype = dtype, k.math = math, k.device = device;
  return k;
}

bool ConvAlgorithmKey::operator==(const ConvAlgorithmKey& o) const {
  return N == o.N && C == o.C && H == o.H && W == o.W && K == o.K && R == o.R && S == o.S &&
         stride_h == o.stride_h && stride_w == o.stride_w && pad_h == o.pad_h && pad_w == o.pad_w &&
         dilation_h == o.dilation_h && dilation_w == o.dilation_w && groups == o.groups && layout == o.layout && dtype == o.dtype &&
         math == o.math && device == o.device;
}

size_t ConvAlgorithmKeyHash::operator()(const ConvAlgorithmKey& k) const {
  // Each field mixed into the running value, so that equal fields in other
  // places (N = 4, C = 8 against N = 8, C = 4) hash apart.
  uint64_t h = 0;
  for (int64_t v : {k.N, k.C, k.H, k.W, k.K, k.R, k.S, k.stride_h, k.stride_w, k.pad_h, k.pad_w, k.dilation_h,
                    k.dilation_w, k.groups, static_cast<int64_t>(k.layout), static_cast<int64_t>(k.dtype), static_cast<int64_t>(k.math),
                    static_cast<int64_t>(k.device)}) {
    h = core::mix64(h ^ static_cast<uint64_t>(v));
  }
  return static_cast<size_t>(h);
}

std::optional<ConvAlgorithms> ConvAlgorithmCache::find(const ConvAlgorithmKey& key) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = entries_.find(key);
  if (it == entries_.end()) return std::nullopt;
  ++hits_;
  return it->second;
}

ConvAlgorithms ConvAlgorithmCache::insert(const ConvAlgorithmKey& key, const ConvAlgorithms& algorithms) {
  std::lock_guard<std::mutex> lock(mutex_);
  return entries_.emplace(key, algorithms).first->second;
}

size_t ConvAlgorithmCache::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return entries_.size();
}

size_t ConvAlgorithmCache::hits() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return hits_;
}

}  // namespace dt::ops
