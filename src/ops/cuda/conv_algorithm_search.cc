#include "ops/cuda/conv_algorithm_search.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/cuda/device_guard.h"
#include "core/cuda/library_handles.h"
#include "core/error.h"
#include "core/log.h"
#include "ops/cuda/device_buffer.h"

namespace dt::ops::cuda {

namespace {

ConvMath math_of(cudnnMathType_t math) {
  switch (math) {
    case CUDNN_TENSOR_OP_MATH:
    case CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION: return ConvMath::kTensorOp;
    case CUDNN_FMA_MATH: return ConvMath::kFma;
    default: return ConvMath::kDefault;
  }
}

// Scratch tensors a search runs on: cudnnFind*Ex writes y, dx (into x) and
// dw (into w), so the caller's arrays are never touched.
struct ScratchTensors {
  void* x = nullptr;
  void* w = nullptr;
  void* y = nullptr;
};

// One direction's cuDNN calls, so that the heuristics and the search are
// written once for all three.
struct Forward {
  using Perf = cudnnConvolutionFwdAlgoPerf_t;
  using Algo = cudnnConvolutionFwdAlgo_t;
  static constexpr int kCount = CUDNN_CONVOLUTION_FWD_ALGO_COUNT;
  static constexpr const char* kName = "forward";
  static cudnnStatus_t heuristics(cudnnHandle_t h, const ConvProblem& p, int* n, Perf* out) {
    return cudnnGetConvolutionForwardAlgorithm_v7(h, p.x, p.w, p.conv, p.y, kCount, n, out);
  }
  static cudnnStatus_t workspace(cudnnHandle_t h, const ConvProblem& p, Algo algo, size_t* bytes) {
    return cudnnGetConvolutionForwardWorkspaceSize(h, p.x, p.w, p.conv, p.y, algo, bytes);
  }
  static cudnnStatus_t find(cudnnHandle_t h, const ConvProblem& p, const ScratchTensors& s, void* ws,
                            size_t ws_bytes, int* n, Perf* out) {
    return cudnnFindConvolutionForwardAlgorithmEx(h, p.x, s.x, p.w, s.w, p.conv, p.y, s.y, kCount, n, out, ws,
                                                  ws_bytes);
  }
};

struct BackwardData {
  using Perf = cudnnConvolutionBwdDataAlgoPerf_t;
  using Algo = cudnnConvolutionBwdDataAlgo_t;
  static constexpr int kCount = CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT;
  static constexpr const char* kName = "backward-data";
  static cudnnStatus_t heuristics(cudnnHandle_t h, const ConvProblem& p, int* n, Perf* out) {
    return cudnnGetConvolutionBackwardDataAlgorithm_v7(h, p.w, p.y, p.conv, p.x, kCount, n, out);
  }
  static cudnnStatus_t workspace(cudnnHandle_t h, const ConvProblem& p, Algo algo, size_t* bytes) {
    return cudnnGetConvolutionBackwardDataWorkspaceSize(h, p.w, p.y, p.conv, p.x, algo, bytes);
  }
  static cudnnStatus_t find(cudnnHandle_t h, const ConvProblem& p, const ScratchTensors& s, void* ws,
                            size_t ws_bytes, int* n, Perf* out) {
    return cudnnFindConvolutionBackwardDataAlgorithmEx(h, p.w, s.w, p.y, s.y, p.conv, p.x, s.x, kCount, n, out, ws,
                                                       ws_bytes);
  }
};

struct BackwardFilter {
  using Perf = cudnnConvolutionBwdFilterAlgoPerf_t;
  using Algo = cudnnConvolutionBwdFilterAlgo_t;
  static constexpr int kCount = CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT;
  static constexpr const char* kName = "backward-filter";
  static cudnnStatus_t heuristics(cudnnHandle_t h, const ConvProblem& p, int* n, Perf* out) {
    return cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, p.x, p.y, p.conv, p.w, kCount, n, out);
  }
  static cudnnStatus_t workspace(cudnnHandle_t h, const ConvProblem& p, Algo algo, size_t* bytes) {
    return cudnnGetConvolutionBackwardFilterWorkspaceSize(h, p.x, p.y, p.conv, p.w, algo, bytes);
  }
  static cudnnStatus_t find(cudnnHandle_t h, const ConvProblem& p, const ScratchTensors& s, void* ws,
                            size_t ws_bytes, int* n, Perf* out) {
    return cudnnFindConvolutionBackwardFilterAlgorithmEx(h, p.x, s.x, p.y, s.y, p.conv, p.w, s.w, kCount, n, out,
                                                         ws, ws_bytes);
  }
};

template <typename Perf>
std::vector<ConvCandidate> candidates_of(const Perf* perfs, int count) {
  std::vector<ConvCandidate> out;
  for (int i = 0; i < count; ++i) {
    const Perf& r = perfs[i];
    out.push_back({static_cast<int>(r.algo), r.status == CUDNN_STATUS_SUCCESS, math_of(r.mathType), r.time,
                   r.memory});
  }
  return out;
}

// The candidate the rule picks, with the workspace cuDNN says its algorithm
// needs under these descriptors. Error(kNotSupported) when none qualifies.
template <typename D>
ConvAlgorithmChoice chosen(cudnnHandle_t handle, const ConvProblem& p, const typename D::Perf* perfs, int count,
                           const ConvChoiceRule& rule) {
  const int i = choose_conv_candidate(candidates_of(perfs, count), rule);
  if (i < 0) {
    throw core::Error(core::ErrorCode::kNotSupported,
                      std::string("Conv2D: cuDNN offers no ") + D::kName + " algorithm for this shape and dtype");
  }
  const typename D::Perf& r = perfs[i];
  size_t bytes = 0;
  DT_CUDNN_CHECK(D::workspace(handle, p, r.algo, &bytes));
  return {static_cast<int>(r.algo), std::max(bytes, r.memory)};
}

template <typename D>
ConvAlgorithmChoice heuristic(cudnnHandle_t handle, const ConvProblem& p) {
  int returned = 0;
  typename D::Perf perfs[D::kCount];
  DT_CUDNN_CHECK(D::heuristics(handle, p, &returned, perfs));
  return chosen<D>(handle, p, perfs, returned, conv_choice_rule(ConvAutotune::kOff, p.float32, SIZE_MAX));
}

ConvAlgorithms heuristics(cudnnHandle_t handle, const ConvProblem& p) {
  ConvAlgorithms a;
  a.forward = heuristic<Forward>(handle, p);
  a.backward_data = heuristic<BackwardData>(handle, p);
  a.backward_filter = heuristic<BackwardFilter>(handle, p);
  return a;
}

// Every workspace size an algorithm of direction D needs here (those cuDNN
// cannot run here answer an error and are left out).
template <typename D>
void add_workspace_sizes(cudnnHandle_t handle, const ConvProblem& p, std::vector<size_t>& sizes) {
  for (int algo = 0; algo < D::kCount; ++algo) {
    size_t bytes = 0;
    if (D::workspace(handle, p, static_cast<typename D::Algo>(algo), &bytes) == CUDNN_STATUS_SUCCESS) {
      sizes.push_back(bytes);
    }
  }
}

// The largest workspace the search can offer, at most cap: the biggest
// size an algorithm needs that the allocator can give, trying the sizes
// from the largest down (as PyTorch's benchmark mode does), so that
// algorithms with a modest workspace are still timed when a huge one does
// not fit. Zero bytes always fit.
DeviceBuffer search_workspace(const std::shared_ptr<core::Context>& ctx, cudnnHandle_t handle,
                              const ConvProblem& p, size_t cap) {
  std::vector<size_t> sizes;
  add_workspace_sizes<Forward>(handle, p, sizes);
  add_workspace_sizes<BackwardData>(handle, p, sizes);
  add_workspace_sizes<BackwardFilter>(handle, p, sizes);
  std::sort(sizes.begin(), sizes.end(), std::greater<size_t>());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  for (size_t bytes : sizes) {
    if (bytes > cap || bytes == 0) continue;
    try {
      return DeviceBuffer(ctx, bytes);
    } catch (const core::Error& e) {
      if (e.code() != core::ErrorCode::kOutOfMemory) throw;
    }
  }
  return DeviceBuffer();
}

template <typename D>
ConvAlgorithmChoice searched(cudnnHandle_t handle, const ConvProblem& p, const ScratchTensors& s,
                             const DeviceBuffer& workspace, const ConvChoiceRule& rule) {
  int returned = 0;
  typename D::Perf perfs[D::kCount];
  DT_CUDNN_CHECK(D::find(handle, p, s, workspace.get(), workspace.bytes(), &returned, perfs));
  return chosen<D>(handle, p, perfs, returned, rule);
}

ConvAlgorithms search(const std::shared_ptr<core::Context>& ctx, cudnnHandle_t handle, const ConvProblem& p,
                      ConvAutotune mode) {
  // The tensors first: the workspace then takes what memory is left.
  // Zeros rather than whatever the blocks held: the kernels timed read
  // defined values (no NaN or denormal from an earlier tenant).
  const DeviceBuffer x(ctx, p.x_bytes), w(ctx, p.w_bytes), y(ctx, p.y_bytes);
  for (const DeviceBuffer* b : {&x, &w, &y}) ctx->fill_zero(b->get(), b->bytes());
  const size_t cap = mode == ConvAutotune::kLimitedWorkspace ? kConvWorkspaceLimitBytes : SIZE_MAX;
  const DeviceBuffer workspace = search_workspace(ctx, handle, p, cap);
  const ScratchTensors s{x.get(), w.get(), y.get()};
  const ConvChoiceRule rule = conv_choice_rule(mode, p.float32, workspace.bytes());
  ConvAlgorithms a;
  a.forward = searched<Forward>(handle, p, s, workspace, rule);
  a.backward_data = searched<BackwardData>(handle, p, s, workspace, rule);
  a.backward_filter = searched<BackwardFilter>(handle, p, s, workspace, rule);
  a.searched = true;
  return a;
}

std::string describe(const ConvAlgorithmKey& k) {
  return "N" + std::to_string(k.N) + " C" + std::to_string(k.C) + " " + std::to_string(k.H) + "x" +
         std::to_string(k.W) + " K" + std::to_string(k.K) + " " + std::to_string(k.R) + "x" + std::to_string(k.S) +
         " stride " + std::to_string(k.stride_h) + "x" + std::to_string(k.stride_w) + " groups " +
         std::to_string(k.groups) + " " + core::dtype_name(k.dtype) + " on gpu(" + std::to_string(k.device) + ")";
}

}  // namespace

ConvAlgorithmCache& conv_algorithm_cache(core::cuda::GpuContext& gpu) {
  return gpu.attachment<ConvAlgorithmCache>(
      [] { return std::make_unique<ConvAlgorithmCache>(conv_autotune_from_environment()); });
}

ConvAlgorithms conv_algorithms(const std::shared_ptr<core::Context>& ctx, const ConvAlgorithmKey& key,
                               const ConvProblem& problem) {
  core::cuda::GpuContext& gpu = core::cuda::gpu_context_of(*ctx);
  ConvAlgorithmCache& cache = conv_algorithm_cache(gpu);
  if (std::optional<ConvAlgorithms> hit = cache.find(key)) return *hit;
  core::cuda::DeviceGuard guard(gpu.device_id());
  cudnnHandle_t handle = gpu.cudnn().get();
  if (cache.mode() == ConvAutotune::kOff) return cache.insert(key, heuristics(handle, problem));
  ConvAlgorithms algorithms;
  try {
    algorithms = search(ctx, handle, problem, cache.mode());
  } catch (const core::Error& e) {
    core::log(core::LogLevel::kWarning, "conv2d",
              "the algorithm search (MXNET_CUDNN_AUTOTUNE_DEFAULT=" +
                  std::to_string(static_cast<int>(cache.mode())) + ") failed for " + describe(key) + ": " +
                  e.what() + "; cuDNN's heuristics choose for this shape on this context instead");
    algorithms = heuristics(handle, problem);
  }
  if (core::log_enabled(core::LogLevel::kDebug)) {
    core::log(core::LogLevel::kDebug, "conv2d",
              std::string(algorithms.searched ? "searched" : "heuristics") + " for " + describe(key) +
                  ": forward " + std::to_string(algorithms.forward.algorithm) + ", backward-data " +
                  std::to_string(algorithms.backward_data.algorithm) + ", backward-filter " +
                  std::to_string(algorithms.backward_filter.algorithm));
  }
  return cache.insert(key, algorithms);
}

}  // namespace dt::ops::cuda
