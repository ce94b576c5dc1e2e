// allreduce_bench: NCCL all-reduce (sum) of float32 arrays over every visible
// GPU of this process, one rank per GPU, for sizes from 4 KiB to 256 MiB in
// powers of 4 (or --factor 2). One JSON line per size on stdout, with
// nccl-tests' definitions so the numbers compare with all_reduce_perf:
//   time_us     mean wall time of one out-of-place all-reduce, measured over
//               `iters` back-to-back calls after warm-up
//   algbw_gbps  bytes / time (1 GB = 1e9 bytes)
//   busbw_gbps  algbw * 2 (n - 1) / n: the bandwidth each link carried, which
//               is 0 with one GPU (nothing crosses a link)
// Each size is checked once: every GPU adds ones, so every element of the
// result must equal the GPU count exactly; a mismatch ends the run with an
// error instead of a number.
//
// allreduce_bench [--min-bytes N] [--max-bytes N] [--factor 2|4] [--gpus N]
// Exits 2 without a CUDA device.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "collective/nccl/communicator.h"
#include "core/context.h"
#include "core/cuda/gpu_context.h"
#include "core/error.h"
#include "core/ndarray.h"
#include "ops/tensor_math.h"

namespace {

using dt::collective::nccl::Communicator;
using dt::core::NDArray;
using Clock = std::chrono::steady_clock;

struct Options {
  size_t min_bytes = 4 << 10;
  size_t max_bytes = 256 << 20;
  size_t factor = 4;
  int gpus = 0;  // 0: all visible
};

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr,
               "allreduce_bench: %s\nusage: allreduce_bench [--min-bytes N] [--max-bytes N] [--factor 2|4] "
               "[--gpus N]\n",
               why);
  std::exit(64);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (i + 1 >= argc) usage(("missing value after " + arg).c_str());
    const unsigned long long value = std::strtoull(argv[++i], nullptr, 10);
    if (arg == "--min-bytes") {
      o.min_bytes = value;
    } else if (arg == "--max-bytes") {
      o.max_bytes = value;
    } else if (arg == "--factor") {
      o.factor = value;
    } else if (arg == "--gpus") {
      o.gpus = static_cast<int>(value);
    } else {
      usage(("unknown option " + arg).c_str());
    }
  }
  if (o.factor != 2 && o.factor != 4) usage("--factor must be 2 or 4");
  if (o.min_bytes < sizeof(float) || o.min_bytes > o.max_bytes) usage("need 4 <= --min-bytes <= --max-bytes");
  return o;
}

struct Rank {
  std::shared_ptr<dt::core::Context> ctx;
  std::unique_ptr<Communicator> comm;
  NDArray send, recv;
};

void all_reduce(std::vector<Rank>& ranks, size_t count) {
  std::vector<Communicator*> comms;
  for (Rank& r : ranks) comms.push_back(r.comm.get());
  dt::collective::nccl::run_group(comms, [&] {
    for (Rank& r : ranks) {
      r.comm->all_reduce_sum(r.send.data(), r.recv.data(), count, dt::core::DType::kFloat32,
                             dt::core::cuda::stream_of(*r.ctx));
    }
  });
}

void synchronize(std::vector<Rank>& ranks) {
  for (Rank& r : ranks) r.comm->synchronize(dt::core::cuda::stream_of(*r.ctx), 120);
}

void check(std::vector<Rank>& ranks, size_t count) {
  const float expected = static_cast<float>(ranks.size());
  std::vector<float> host(count);
  for (Rank& r : ranks) {
    r.recv.copy_to_host(host.data(), count * sizeof(float));
    for (size_t i = 0; i < count; ++i) {
      if (host[i] != expected) {
        throw dt::core::Error(dt::core::ErrorCode::kInternal,
                              "all-reduce result wrong on gpu(" + std::to_string(r.comm->device()) + ") element " +
                                  std::to_string(i) + ": " + std::to_string(host[i]) + ", expected " +
                                  std::to_string(expected));
      }
    }
  }
}

int run(const Options& o) {
  const int visible = dt::core::gpu_count();
  if (visible == 0) {
    std::fprintf(stderr, "allreduce_bench: no CUDA device visible; the NCCL all-reduce needs at least one GPU\n");
    return 2;
  }
  const int n = o.gpus > 0 ? std::min(o.gpus, visible) : visible;
  std::vector<int> devices;
  for (int d = 0; d < n; ++d) devices.push_back(d);
  std::vector<Rank> ranks(n);
  auto comms = Communicator::create_local(devices);
  for (int d = 0; d < n; ++d) {
    ranks[d].ctx = dt::core::make_context(static_cast<int>(dt::core::DeviceType::kGpu), d);
    ranks[d].comm = std::move(comms[d]);
  }
  for (size_t bytes = o.min_bytes; bytes <= o.max_bytes; bytes *= o.factor) {
    const size_t count = bytes / sizeof(float);
    for (Rank& r : ranks) {
      r.send = NDArray::empty(r.ctx, dt::core::DType::kFloat32, dt::core::Shape({static_cast<int64_t>(count)}));
      r.recv = NDArray::empty(r.ctx, dt::core::DType::kFloat32, dt::core::Shape({static_cast<int64_t>(count)}));
      dt::ops::fill(r.send, 1.0);
      r.ctx->synchronize();
    }
    all_reduce(ranks, count);
    synchronize(ranks);
    check(ranks, count);
    // About 1 GiB moved per measurement, between 20 and 1000 calls.
    const int iters = static_cast<int>(std::clamp<size_t>((size_t{1} << 30) / bytes, 20, 1000));
    for (int i = 0; i < 5; ++i) all_reduce(ranks, count);
    synchronize(ranks);
    const Clock::time_point start = Clock::now();
    for (int i = 0; i < iters; ++i) all_reduce(ranks, count);
    synchronize(ranks);
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count() / iters;
    const double algbw = static_cast<double>(count * sizeof(float)) / seconds / 1e9;
    const double busbw = algbw * 2.0 * (n - 1) / n;
    std::printf("{\"op\":\"allreduce\",\"dtype\":\"float32\",\"bytes\":%zu,\"gpus\":%d,\"iters\":%d,"
                "\"time_us\":%.2f,\"algbw_gbps\":%.3f,\"busbw_gbps\":%.3f}\n",
                count * sizeof(float), n, iters, seconds * 1e6, algbw, busbw);
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const Options options = parse(argc, argv);
  try {
    return run(options);
  } catch (const dt::core::Error& e) {
    std::fprintf(stderr, "allreduce_bench: %s\n", e.what());
    return 1;
  }
}
