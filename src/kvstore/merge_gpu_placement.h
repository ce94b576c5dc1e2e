// Which GPU sums each key of the "device" kvstore, as MXNet's CommDevice
// places its merge buffers: keys are taken largest first and each goes to
// the GPU, among those its values live on, with the fewest bytes placed so
// far (ties: the lowest device id). The reductions and the optimizer updates
// of a step are then spread over the GPUs that take part in it instead of
// all landing on gpu(0); with equal sizes this is round-robin.
//
// A pure function of the sequence of calls, so a test can check it without
// a GPU; LocalKVStore asks it at a key's first push, when the GPUs of the
// key's values are known.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

namespace dt::kvstore {

class MergeGpuPlacement {
 public:
  struct Request {
    uint64_t key = 0;
    size_t bytes = 0;
    std::vector<int> gpus;  // the devices the key's values are on; not empty
  };

  // The device chosen for each request, in the order given. Requests are
  // placed largest first (equal sizes: in the order given), each adding its
  // bytes to its device's load for the requests after it, in this call and
  // in later ones. A request without GPUs is Error(kInvalidArgument).
  std::vector<int> place(const std::vector<Request>& requests);

  // Records bytes on device without choosing (a key that must stay where
  // its optimizer state is).
  void add_load(int device, size_t bytes);

  size_t load(int device) const;

 private:
  std::map<int, size_t> load_;
};

}  // namespace dt::kvstore
