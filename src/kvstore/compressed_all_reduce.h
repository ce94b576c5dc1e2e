// The compressed all-reduce of the all-reduce stores ("allreduce" on the
// host, "dist_nccl" on GPUs) under set_gradient_compression (issue 16):
// a sum all-reduce cannot carry encodings, whose sizes differ from rank to
// rank (topk, threshold) and which are not summable as they are (2bit,
// 1bit), so each worker encodes its own gradient, every worker gets every
// encoding (an all-gather of bytes), and every worker decodes and adds them
// in rank order: bit-identical sums everywhere, each worker having sent its
// encoding instead of the full gradient.
//
// Per call, on worker w with gradient g (n float32 values under a tag):
//   c = g + residual[tag]                  (error feedback, when on)
//   e_w = encode(c)
//   residual[tag] = c - decode(e_w)        (when on)
//   e_0..e_{N-1} = all_gather(e_w)
//   g = 0; g += decode(e_0); ...; g += decode(e_{N-1})
// The exchange is the caller's (its communicator's all-gather), so one
// piece of code serves every transport.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ps/compression/compression_mode.h"
#include "ps/compression/error_feedback.h"
#include "ps/compression/gradient_codec.h"

namespace dt::kvstore {

// Every rank's bytes, result[r] being rank r's, given this rank's; every
// rank calls it at the same point. Errors are the transport's.
using AllGatherBytes = std::function<std::vector<std::vector<uint8_t>>(const uint8_t* data, size_t size)>;

class CompressedAllReduce {
 public:
  // store names the kvstore in errors. Error(kInvalidArgument) for a config
  // the codec refuses.
  CompressedAllReduce(std::string store, const ps::compression::CompressionConfig& config);

  const ps::compression::GradientCodec& codec() const { return codec_; }

  // data[0, n) = the rank-order sum of every rank's encoding of its data
  // plus its residual under tag (see above). Bytes from a rank that do not
  // decode are Error(kProtocol) naming that rank; data is unspecified then.
  // One call at a time; tags keep their residuals until this object goes.
  void run(float* data, size_t n, uint64_t tag, const AllGatherBytes& all_gather);

 private:
  const std::string store_;
  const ps::compression::GradientCodec codec_;
  ps::compression::ErrorFeedback feedback_;
  // Reused from call to call: the compensated gradient and its encoding.
  std::vector<float> compensated_;
  std::vector<uint8_t> encoded_;
};

}  // namespace dt::kvstore
