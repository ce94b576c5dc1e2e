#include "collective/nccl/communicator.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>

#include "collective/nccl/nccl_check.h"
#include "core/cuda/cuda_check.h"
#include "core/cuda/device_guard.h"
#include "core/error.h"

// Non-blocking communicators (ncclCommInitRankConfig) and ncclCommFinalize
// arrived in NCCL 2.14, ncclBfloat16 in 2.10.
#if NCCL_VERSION_CODE < NCCL_VERSION(2, 14, 0)
#error "disttrain needs NCCL 2.14 or newer"
#endif

namespace dt::collective::nccl {

using core::Error;
using core::ErrorCode;
using Clock = std::chrono::steady_clock;

namespace {

// Polling interval of the bounded waits: short against a collective's
// latency budget, long enough not to burn a core.
constexpr auto kPollInterval = std::chrono::microseconds(50);

Clock::time_point deadline_after(double seconds) {
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

void require_device_count(const std::vector<int>& devices) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    static_cast<void>(cudaGetLastError());
    throw Error(ErrorCode::kNoDevice, "NCCL needs a CUDA device, but none is visible");
  }
  for (int d : devices) {
    if (d < 0 || d >= count) {
      throw Error(ErrorCode::kNoDevice, "NCCL: gpu(" + std::to_string(d) + ") is not there (" +
                                            std::to_string(count) + " visible)");
    }
  }
}

}  // namespace

UniqueId new_unique_id() {
  ncclUniqueId id;
  DT_NCCL_CHECK(ncclGetUniqueId(&id));
  UniqueId bytes;
  static_assert(sizeof(id.internal) == std::tuple_size<UniqueId>::value, "ncclUniqueId size");
  std::memcpy(bytes.data(), id.internal, bytes.size());
  return bytes;
}

ncclDataType_t to_nccl(core::DType dtype) {
  switch (dtype) {
    case core::DType::kFloat32: return ncclFloat32;
    case core::DType::kFloat16: return ncclFloat16;
    case core::DType::kBFloat16: return ncclBfloat16;
    case core::DType::kFloat64: return ncclFloat64;
    case core::DType::kInt32: return ncclInt32;
    case core::DType::kInt64: return ncclInt64;
    case core::DType::kUInt8: return ncclUint8;
  }
  throw Error(ErrorCode::kInvalidArgument, "NCCL: unknown dtype " + std::to_string(static_cast<int>(dtype)));
}

Communicator::Communicator(ncclComm_t comm, int device, int rank, int size, bool blocking)
    : comm_(comm), device_(device), rank_(rank), size_(size), blocking_(blocking) {}

std::vector<std::unique_ptr<Communicator>> Communicator::create_local(const std::vector<int>& devices) {
  if (devices.empty()) throw Error(ErrorCode::kInvalidArgument, "NCCL: a communicator needs at least one device");
  for (size_t i = 0; i < devices.size(); ++i) {
    if (std::count(devices.begin(), devices.end(), devices[i]) > 1) {
      throw Error(ErrorCode::kInvalidArgument, "NCCL: gpu(" + std::to_string(devices[i]) + ") listed twice");
    }
  }
  require_device_count(devices);
  std::vector<ncclComm_t> raw(devices.size(), nullptr);
  DT_NCCL_CHECK(ncclCommInitAll(raw.data(), static_cast<int>(devices.size()), devices.data()));
  std::vector<std::unique_ptr<Communicator>> comms;
  for (size_t i = 0; i < devices.size(); ++i) {
    comms.emplace_back(new Communicator(raw[i], devices[i], static_cast<int>(i), static_cast<int>(devices.size()), true));
  }
  return comms;
}

std::unique_ptr<Communicator> Communicator::create_rank(int device, int size, int rank, const UniqueId& id,
                                                        double timeout_s) {
  if (size < 1 || rank < 0 || rank >= size) {
    throw Error(ErrorCode::kInvalidArgument,
                "NCCL: rank " + std::to_string(rank) + " of " + std::to_string(size) + " is out of range");
  }
  require_device_count({device});
  core::cuda::DeviceGuard guard(device);
  ncclUniqueId nccl_id;
  std::memcpy(nccl_id.internal, id.data(), id.size());
  // Non-blocking, so that a rank that never joins ends in kTimedOut here
  // rather than in a process that waits forever.
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclComm_t raw = nullptr;
  const ncclResult_t started = ncclCommInitRankConfig(&raw, size, nccl_id, rank, &config);
  // A non-blocking init may hand back a communicator even when it fails at
  // once; abort it rather than leak it.
  if (started != ncclSuccess && started != ncclInProgress) {
    if (raw != nullptr) static_cast<void>(ncclCommAbort(raw));
    throw_nccl_error(started, __FILE__, __LINE__, "ncclCommInitRankConfig");
  }
  std::unique_ptr<Communicator> comm(new Communicator(raw, device, rank, size, false));
  comm->wait_ready(timeout_s);
  return comm;
}

Communicator::~Communicator() {
  if (comm_ == nullptr) return;
  if (aborted_) return;
  if (blocking_) {
    if (ncclCommDestroy(comm_) != ncclSuccess) static_cast<void>(ncclCommAbort(comm_));
    return;
  }
  // A non-blocking communicator finalises asynchronously; a peer that is
  // gone would keep that going forever, so the wait is bounded and ends in
  // an abort.
  ncclResult_t state = ncclCommFinalize(comm_);
  const auto deadline = deadline_after(10.0);
  while (state == ncclInProgress && Clock::now() < deadline) {
    std::this_thread::sleep_for(kPollInterval);
    if (ncclCommGetAsyncError(comm_, &state) != ncclSuccess) state = ncclInternalError;
  }
  if (state != ncclSuccess) {
    static_cast<void>(ncclCommAbort(comm_));
    return;
  }
  // ncclInProgress: the destruction goes on in the background; aborting the
  // communicator now would free it twice.
  const ncclResult_t destroyed = ncclCommDestroy(comm_);
  if (destroyed != ncclSuccess && destroyed != ncclInProgress) static_cast<void>(ncclCommAbort(comm_));
}

void Communicator::abort() noexcept {
  if (!aborted_) static_cast<void>(ncclCommAbort(comm_));
  aborted_ = true;
}

void Communicator::check_usable() const {
  if (aborted_) {
    throw Error(ErrorCode::kBadState, "NCCL communicator (rank " + std::to_string(rank_) + " of " +
                                          std::to_string(size_) + ") was aborted after an earlier failure");
  }
}

void Communicator::wait_ready(double timeout_s) {
  if (blocking_) return;
  const auto deadline = deadline_after(timeout_s);
  for (;;) {
    ncclResult_t state = ncclSuccess;
    const ncclResult_t query = ncclCommGetAsyncError(comm_, &state);
    if (query != ncclSuccess) state = query;
    if (state == ncclSuccess) return;
    if (state != ncclInProgress) {
      abort();
      throw_nccl_error(state, __FILE__, __LINE__, "NCCL communicator (async)");
    }
    if (Clock::now() >= deadline) {
      abort();
      throw Error(ErrorCode::kTimedOut, "NCCL rank " + std::to_string(rank_) + " of " + std::to_string(size_) +
                                            ": the other ranks did not answer within " +
                                            std::to_string(timeout_s) + " s");
    }
    std::this_thread::sleep_for(kPollInterval);
  }
}

void Communicator::all_reduce_sum(const void* send, void* recv, size_t count, core::DType dtype,
                                  cudaStream_t stream) {
  check_usable();
  core::cuda::DeviceGuard guard(device_);
  DT_NCCL_CHECK(ncclAllReduce(send, recv, count, to_nccl(dtype), ncclSum, comm_, stream));
}

void Communicator::reduce_sum(const void* send, void* recv, size_t count, core::DType dtype, int root,
                              cudaStream_t stream) {
  check_usable();
  core::cuda::DeviceGuard guard(device_);
  DT_NCCL_CHECK(ncclReduce(send, recv, count, to_nccl(dtype), ncclSum, root, comm_, stream));
}

void Communicator::broadcast(const void* send, void* recv, size_t count, core::DType dtype, int root,
                             cudaStream_t stream) {
  check_usable();
  core::cuda::DeviceGuard guard(device_);
  DT_NCCL_CHECK(ncclBroadcast(send, recv, count, to_nccl(dtype), root, comm_, stream));
}

void Communicator::all_gather(const void* send, void* recv, size_t count, core::DType dtype, cudaStream_t stream) {
  check_usable();
  core::cuda::DeviceGuard guard(device_);
  DT_NCCL_CHECK(ncclAllGather(send, recv, count, to_nccl(dtype), comm_, stream));
}

void Communicator::synchronize(cudaStream_t stream, double timeout_s) {
  check_usable();
  wait_ready(timeout_s);
  core::cuda::DeviceGuard guard(device_);
  const auto deadline = deadline_after(timeout_s);
  for (;;) {
    const cudaError_t done = cudaStreamQuery(stream);
    if (done == cudaSuccess) return;
    if (done != cudaErrorNotReady) DT_CUDA_CHECK(done);
    // A peer that died leaves our kernel waiting; NCCL notices and says so
    // here, and aborting the communicator lets the kernel end.
    ncclResult_t state = ncclSuccess;
    DT_NCCL_CHECK(ncclCommGetAsyncError(comm_, &state));
    if (state != ncclSuccess && state != ncclInProgress) {
      abort();
      throw_nccl_error(state, __FILE__, __LINE__, "NCCL collective");
    }
    if (Clock::now() >= deadline) {
      abort();
      throw Error(ErrorCode::kTimedOut, "NCCL rank " + std::to_string(rank_) + " of " + std::to_string(size_) +
                                            ": collective did not finish within " + std::to_string(timeout_s) + " s");
    }
    std::this_thread::sleep_for(kPollInterval);
  }
}

void run_group(const std::vector<Communicator*>& comms, const std::function<void()>& enqueue) {
  for (const Communicator* c : comms) c->check_usable();
  DT_NCCL_CHECK(ncclGroupStart());
  try {
    enqueue();
  } catch (...) {
    // Close the group so that this thread's NCCL state is clean; what was
    // queued is dropped with the error.
    static_cast<void>(ncclGroupEnd());
    throw;
  }
  DT_NCCL_CHECK(ncclGroupEnd());
}

}  // namespace dt::collective::nccl
