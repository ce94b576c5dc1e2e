// allreduce_bench: all-reduce (sum) of float32 arrays for sizes from 4 KiB
// to 256 MiB in powers of 4 (or --factor 2). One JSON line per size on
// stdout, with nccl-tests' definitions so the numbers compare with
// all_reduce_perf and with bench/peers/torch_allreduce_bench.py (gloo):
//   time_us     mean wall time of one all-reduce, measured over `iters`
//               back-to-back calls after warm-up
//   algbw_gbps  bytes / time (1 GB = 1e9 bytes)
//   busbw_gbps  algbw * 2 (n - 1) / n: the bandwidth each link carried, which
//               is 0 with one rank (nothing crosses a link)
// Each size is checked once: every rank adds ones, so every element of the
// result must equal the rank count exactly; a mismatch ends the run with an
// error instead of a number.
//
// --device cpu (the default without NCCL): collective::host::HostCommunicator
// across --ranks forked processes of this program (forked before any thread
// or nng use; the parent is their rendezvous, over pipes), linked by ipc://
// or, with --transport tcp, tcp:// loopback. With --netns NS0,NS1,... (root;
// bench/two_hosts.sh) rank r enters network namespace NS[r % k] right after
// the fork, before any socket, and listens on --hosts' address r % k there:
// every byte between namespaces crosses a veth pair and both ends' TCP
// stacks, as between hosts. Iterations are scaled so that
// each size runs for about half a second. The in-place all-reduce is timed on
// zeros, so repeated sums stay finite.
// --device gpu (the default with NCCL): NCCL over every visible GPU of this
// process (--gpus N of them), one rank per GPU, out of place; exits 2
// without a CUDA device.
//
// allreduce_bench [--device cpu|gpu] [--ranks N] [--transport ipc|tcp]
//                 [--min-bytes N] [--max-bytes N] [--factor 2|4] [--gpus N]
//                 [--chunk-bytes N] [--hierarchical 0|1] [--netns NS,... --hosts ADDR,...]
// --chunk-bytes: the ring's pipelining unit (HostCommunicatorOptions), to
// measure what another would give. --hierarchical 0: one flat ring even where
// the ranks sit in several namespaces, two or more in each (each namespace
// is a "host" to the communicator; every line says the "shape" its size took:
// doubling, ring or hierarchical).
#include <fcntl.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "collective/host/host_communicator.h"
#include "core/dtype.h"
#include "core/error.h"
#if DT_WITH_NCCL
#include "collective/nccl/communicator.h"
#include "core/context.h"
#include "core/cuda/gpu_context.h"
#include "core/ndarray.h"
#include "ops/tensor_math.h"
#endif

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  bool gpu = DT_WITH_NCCL != 0;
  int ranks = 2;
  bool tcp = false;
  size_t min_bytes = 4 << 10;
  size_t max_bytes = 256 << 20;
  size_t factor = 4;
  int gpus = 0;  // 0: all visible
  size_t chunk_bytes = 0;  // 0: HostCommunicatorOptions' default
  bool hierarchical = true;  // HostCommunicatorOptions' default
  std::vector<std::string> netns;  // rank r runs in netns[r % size], listening on hosts[r % size]
  std::vector<std::string> hosts;
};

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> items;
  std::stringstream list(text);
  std::string item;
  while (std::getline(list, item, ',')) items.push_back(item);
  return items;
}

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr,
               "allreduce_bench: %s\nusage: allreduce_bench [--device cpu|gpu] [--ranks N] [--transport ipc|tcp] "
               "[--min-bytes N] [--max-bytes N] [--factor 2|4] [--gpus N] [--chunk-bytes N] [--hierarchical 0|1] "
               "[--netns NS,... --hosts ADDR,...]\n",
               why);
  std::exit(64);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (i + 1 >= argc) usage(("missing value after " + arg).c_str());
    const std::string text = argv[++i];
    const unsigned long long value = std::strtoull(text.c_str(), nullptr, 10);
    if (arg == "--device") {
      if (text != "cpu" && text != "gpu") usage("--device must be cpu or gpu");
      o.gpu = text == "gpu";
    } else if (arg == "--transport") {
      if (text != "ipc" && text != "tcp") usage("--transport must be ipc or tcp");
      o.tcp = text == "tcp";
    } else if (arg == "--ranks") {
      o.ranks = static_cast<int>(value);
    } else if (arg == "--min-bytes") {
      o.min_bytes = value;
    } else if (arg == "--max-bytes") {
      o.max_bytes = value;
    } else if (arg == "--factor") {
      o.factor = value;
    } else if (arg == "--gpus") {
      o.gpus = static_cast<int>(value);
    } else if (arg == "--chunk-bytes") {
      o.chunk_bytes = value;
    } else if (arg == "--hierarchical") {
      if (text != "0" && text != "1") usage("--hierarchical must be 0 or 1");
      o.hierarchical = text == "1";
    } else if (arg == "--netns") {
      o.netns = split_commas(text);
    } else if (arg == "--hosts") {
      o.hosts = split_commas(text);
    } else {
      usage(("unknown option " + arg).c_str());
    }
  }
  if (o.factor != 2 && o.factor != 4) usage("--factor must be 2 or 4");
  if (o.min_bytes < sizeof(float) || o.min_bytes > o.max_bytes) usage("need 4 <= --min-bytes <= --max-bytes");
  if (o.ranks < 1 || o.ranks > 256) usage("--ranks must be 1 .. 256");
  if (o.netns.size() != o.hosts.size()) usage("--netns and --hosts name one address per namespace");
  if (!o.netns.empty() && !o.tcp) usage("--netns needs --transport tcp");
#if !DT_WITH_NCCL
  if (o.gpu) usage("--device gpu needs a build with NCCL");
#endif
  return o;
}

// ranks_key: "ranks" (processes) or "gpus" (the NCCL mode's field since before).
// extra: more JSON fields, each starting with a comma (or empty).
void print_line(const char* device, const char* ranks_key, size_t bytes, int ranks, int iters, double seconds,
                const std::string& extra) {
  const double algbw = static_cast<double>(bytes) / seconds / 1e9;
  const double busbw = algbw * 2.0 * (ranks - 1) / ranks;
  std::printf("{\"op\":\"allreduce\",\"device\":\"%s\",\"dtype\":\"float32\",\"bytes\":%zu,\"%s\":%d,"
              "\"iters\":%d,\"time_us\":%.2f,\"algbw_gbps\":%.3f,\"busbw_gbps\":%.3f%s}\n",
              device, bytes, ranks_key, ranks, iters, seconds * 1e6, algbw, busbw, extra.c_str());
  std::fflush(stdout);
}

// --- cpu: one forked process per rank --------------------------------------

bool write_all(int fd, const void* data, size_t bytes) {
  const auto* p = static_cast<const uint8_t*>(data);
  while (bytes > 0) {
    const ssize_t n = write(fd, p, bytes);
    if (n <= 0) return false;
    p += n;
    bytes -= static_cast<size_t>(n);
  }
  return true;
}

bool read_all(int fd, void* data, size_t bytes) {
  auto* p = static_cast<uint8_t*>(data);
  while (bytes > 0) {
    const ssize_t n = read(fd, p, bytes);
    if (n <= 0) return false;
    p += n;
    bytes -= static_cast<size_t>(n);
  }
  return true;
}

bool write_blob(int fd, const std::vector<uint8_t>& blob) {
  const uint32_t len = static_cast<uint32_t>(blob.size());
  return write_all(fd, &len, sizeof len) && write_all(fd, blob.data(), blob.size());
}

bool read_blob(int fd, std::vector<uint8_t>& blob) {
  uint32_t len = 0;
  if (!read_all(fd, &len, sizeof len)) return false;
  blob.resize(len);
  return read_all(fd, blob.data(), len);
}

// This process (one rank, single-threaded still) into the named network
// namespace, as `ip netns exec` does.
void enter_netns(const std::string& name) {
  const std::string path = "/var/run/netns/" + name;
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0 || setns(fd, CLONE_NEWNET) != 0) {
    throw dt::core::Error(dt::core::ErrorCode::kIo, "bench: cannot enter network namespace " + path + ": " +
                                                        std::strerror(errno));
  }
  close(fd);
}

// One rank: the parent is the exchange (this rank's blob up `up`, everyone's
// down `down`).
void run_cpu_rank(const Options& o, int rank, int up, int down) {
  namespace host = dt::collective::host;
  const host::Exchange exchange = [&](const std::vector<uint8_t>& mine) {
    std::vector<std::vector<uint8_t>> all(static_cast<size_t>(o.ranks));
    if (!write_blob(up, mine)) throw dt::core::Error(dt::core::ErrorCode::kIo, "bench exchange: write to the parent");
    for (auto& blob : all) {
      if (!read_blob(down, blob)) throw dt::core::Error(dt::core::ErrorCode::kIo, "bench exchange: read from the parent");
    }
    return all;
  };
  host::HostCommunicatorOptions options;
  options.use_ipc = !o.tcp;
  if (o.chunk_bytes > 0) options.chunk_bytes = o.chunk_bytes;
  options.hierarchical = o.hierarchical;
  if (!o.netns.empty()) {
    const size_t at = static_cast<size_t>(rank) % o.netns.size();
    enter_netns(o.netns[at]);
    options.host = o.hosts[at];
  }
  options.timeout_s = 60;
  auto comm = host::HostCommunicator::create(rank, o.ranks, exchange, options);
  for (size_t bytes = o.min_bytes; bytes <= o.max_bytes; bytes *= o.factor) {
    const size_t count = bytes / sizeof(float);
    std::vector<float> data(count, 1.0f);
    comm->all_reduce_sum(data.data(), count, dt::core::DType::kFloat32);
    const float expected = static_cast<float>(o.ranks);
    for (size_t i = 0; i < count; ++i) {
      if (data[i] != expected) {
        throw dt::core::Error(dt::core::ErrorCode::kInternal,
                              "all-reduce result wrong on rank " + std::to_string(rank) + " element " +
                                  std::to_string(i) + ": " + std::to_string(data[i]) + ", expected " +
                                  std::to_string(expected));
      }
    }
    std::fill(data.begin(), data.end(), 0.0f);
    // Warm-up, then rank 0's estimate of how many calls fill half a second
    // (every rank makes the same calls: the counts are fixed or broadcast).
    const int warm = 5;
    for (int i = 0; i < warm; ++i) comm->all_reduce_sum(data.data(), count, dt::core::DType::kFloat32);
    Clock::time_point start = Clock::now();
    for (int i = 0; i < warm; ++i) comm->all_reduce_sum(data.data(), count, dt::core::DType::kFloat32);
    const double per_call = std::chrono::duration<double>(Clock::now() - start).count() / warm;
    int64_t iters = std::clamp<int64_t>(static_cast<int64_t>(0.5 / per_call), 5, 20000);
    comm->broadcast(&iters, sizeof iters, 0);
    comm->barrier();
    start = Clock::now();
    for (int64_t i = 0; i < iters; ++i) comm->all_reduce_sum(data.data(), count, dt::core::DType::kFloat32);
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count() / static_cast<double>(iters);
    // The shape a call of this size took (host_communicator.h's choice).
    const char* shape = bytes <= options.small_bytes ? "doubling" : comm->hierarchical() ? "hierarchical" : "ring";
    if (rank == 0) {
      print_line("cpu", "ranks", bytes, o.ranks, static_cast<int>(iters), seconds,
                 std::string(",\"transport\":\"") + (o.tcp ? "tcp" : "ipc") + "\",\"shape\":\"" + shape + "\"");
    }
  }
  comm->barrier();
}

int run_cpu(const Options& o) {
  std::fflush(stdout);
  std::vector<int> ups(static_cast<size_t>(o.ranks)), downs(static_cast<size_t>(o.ranks));
  std::vector<pid_t> children;
  for (int r = 0; r < o.ranks; ++r) {
    int up[2], down[2];
    if (pipe(up) != 0 || pipe(down) != 0) {
      std::perror("allreduce_bench: pipe");
      return 1;
    }
    const pid_t pid = fork();
    if (pid < 0) {
      std::perror("allreduce_bench: fork");
      return 1;
    }
    if (pid == 0) {
      close(up[0]);
      close(down[1]);
      int rc = 0;
      try {
        run_cpu_rank(o, r, up[1], down[0]);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "allreduce_bench: rank %d: %s\n", r, e.what());
        rc = 1;
      }
      std::fflush(stdout);
      _exit(rc);
    }
    close(up[1]);
    close(down[0]);
    ups[static_cast<size_t>(r)] = up[0];
    downs[static_cast<size_t>(r)] = down[1];
    children.push_back(pid);
  }
  // The rendezvous: every rank's blob to every rank.
  std::vector<std::vector<uint8_t>> blobs(static_cast<size_t>(o.ranks));
  bool ok = true;
  for (int r = 0; r < o.ranks && ok; ++r) ok = read_blob(ups[static_cast<size_t>(r)], blobs[static_cast<size_t>(r)]);
  for (int r = 0; r < o.ranks && ok; ++r) {
    for (const auto& blob : blobs) ok = ok && write_blob(downs[static_cast<size_t>(r)], blob);
  }
  for (int r = 0; r < o.ranks; ++r) {
    close(ups[static_cast<size_t>(r)]);
    close(downs[static_cast<size_t>(r)]);
  }
  int rc = ok ? 0 : 1;
  for (pid_t pid : children) {
    int status = 0;
    if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) rc = 1;
  }
  return rc;
}

// --- gpu: NCCL over this process's GPUs ------------------------------------
#if DT_WITH_NCCL

using dt::collective::nccl::Communicator;
using dt::core::NDArray;

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

int run_gpu(const Options& o) {
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
    print_line("gpu", "gpus", count * sizeof(float), n, iters, seconds, "");
  }
  return 0;
}

#endif  // DT_WITH_NCCL

}  // namespace

int main(int argc, char** argv) {
  const Options options = parse(argc, argv);
  try {
#if DT_WITH_NCCL
    if (options.gpu) return run_gpu(options);
#endif
    return run_cpu(options);
  } catch (const dt::core::Error& e) {
    std::fprintf(stderr, "allreduce_bench: %s\n", e.what());
    return 1;
  }
}
