// One rank of an NCCL communicator, owned: created with ncclCommInitAll (all
// ranks are GPUs of this process) or ncclCommInitRank (one rank per process,
// the ranks having met through a unique id), destroyed with ncclCommDestroy,
// or aborted (ncclCommAbort) once a collective failed or overran its deadline
// so that the destructor never waits for a peer that is gone.
//
// The collectives queue one rank's part on a CUDA stream and return; one
// thread driving several ranks of one process must queue them inside
// run_group(), or the first call waits for ranks that are never called.
// synchronize() is the bounded wait for the queued work.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "core/dtype.h"

namespace dt::collective::nccl {

// The bytes of an ncclUniqueId: what rank 0 creates and every rank needs to
// join the same communicator. Plain bytes, so any transport can carry it.
using UniqueId = std::array<uint8_t, NCCL_UNIQUE_ID_BYTES>;

// ncclGetUniqueId. Error(kNccl) when NCCL cannot pick a network interface.
UniqueId new_unique_id();

// NCCL's type for dtype (every disttrain dtype has one).
ncclDataType_t to_nccl(core::DType dtype);

class Communicator {
 public:
  // One communicator per entry of devices (distinct CUDA device ids), rank i
  // on devices[i]. Error(kInvalidArgument) for an empty or repeating list,
  // Error(kNoDevice) without a GPU, kNccl when NCCL fails.
  static std::vector<std::unique_ptr<Communicator>> create_local(const std::vector<int>& devices);
  // Rank `rank` of `size` on `device`, joining the others that use `id`.
  // Returns once all ranks joined; Error(kTimedOut) when they did not within
  // timeout_s (the half-built communicator is aborted).
  static std::unique_ptr<Communicator> create_rank(int device, int size, int rank, const UniqueId& id,
                                                   double timeout_s);

  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int device() const { return device_; }
  int rank() const { return rank_; }
  int size() const { return size_; }

  // recv = the sum over ranks of send (count elements; in place when equal).
  void all_reduce_sum(const void* send, void* recv, size_t count, core::DType dtype, cudaStream_t stream);
  // recv on rank root = the sum over ranks of send; recv is ignored elsewhere.
  void reduce_sum(const void* send, void* recv, size_t count, core::DType dtype, int root, cudaStream_t stream);
  // recv on every rank = send of rank root (send is ignored elsewhere).
  void broadcast(const void* send, void* recv, size_t count, core::DType dtype, int root, cudaStream_t stream);
  // recv[r * count, (r + 1) * count) on every rank = send of rank r (in place
  // when send is recv + rank() * count).
  void all_gather(const void* send, void* recv, size_t count, core::DType dtype, cudaStream_t stream);

  // Waits for the work queued on stream. Error(kNccl) with NCCL's reason when
  // the communicator failed (a peer lost), Error(kTimedOut) after timeout_s;
  // either way the communicator is aborted and every later call fails.
  void synchronize(cudaStream_t stream, double timeout_s);

 private:
  friend void run_group(const std::vector<Communicator*>& comms, const std::function<void()>& enqueue);
  Communicator(ncclComm_t comm, int device, int rank, int size, bool blocking);
  // The check after each call on a non-blocking communicator: waits until
  // NCCL finished setting up the call (not the kernel), bounded by timeout_s.
  void wait_ready(double timeout_s);
  void check_usable() const;
  void abort() noexcept;

  ncclComm_t comm_ = nullptr;
  int device_;
  int rank_;
  int size_;
  bool blocking_;
  bool aborted_ = false;
};

// Calls enqueue (which queues collectives on comms) between ncclGroupStart
// and ncclGroupEnd, so that one thread can drive several ranks.
void run_group(const std::vector<Communicator*>& comms, const std::function<void()>& enqueue);

}  // namespace dt::collective::nccl
