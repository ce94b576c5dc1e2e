// codec_bench: single-core throughput of the gradient codecs
// (ps/compression/gradient_codec.h), encode and decode, for every mode
// at 1 MiB and 64 MiB of float32 gradient. One JSON line per measurement:
//   {"op":"encode","mode":"2bit:threshold=0.5,error_feedback=on","bytes":1048576,
//    "encoded_bytes":65536,"gbps":...,"median_us":...,"reps":...}
// gbps counts float32 gradient bytes (4 per element) per second for both
// directions, so encode and decode figures compare directly with each other
// and with memcpy; the median of the repetitions is reported (this machine's
// neighbours make a few repetitions slow).
//
// codec_bench [--max-bytes N] [--modes 2bit,topk:fraction=0.01,...]
// narrows the run: sizes up to N bytes, the given configs separated by '/'
// (a config's own fields are separated by commas).
//
// Input: uniform in [-1, 1), fixed seed; thresholds 0.5 (2bit, 1bit) and
// 0.99 (threshold: ~1% of the elements sent), topk 1%.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "ps/compression/gradient_codec.h"

namespace {

using Clock = std::chrono::steady_clock;
using dt::ps::compression::CompressionConfig;
using dt::ps::compression::GradientCodec;

const char* const kDefaultModes[] = {"none", "fp16", "bf16", "2bit:threshold=0.5", "1bit:threshold=0.5",
                                     "topk:fraction=0.01", "threshold:threshold=0.99"};

// Repeats fn until 0.3 s have passed (at least 3 times, at most 500) and
// returns the median seconds of one call.
template <typename Fn>
std::pair<double, size_t> time_median(Fn fn) {
  fn();  // warm: caches, page tables, the allocator's free lists
  std::vector<double> seconds;
  const auto begin = Clock::now();
  while (seconds.size() < 3 || (seconds.size() < 500 && Clock::now() - begin < std::chrono::milliseconds(300))) {
    const auto start = Clock::now();
    fn();
    seconds.push_back(std::chrono::duration<double>(Clock::now() - start).count());
  }
  std::sort(seconds.begin(), seconds.end());
  return {seconds[seconds.size() / 2], seconds.size()};
}

void print(const char* op, const std::string& mode, size_t bytes, size_t encoded_bytes, std::pair<double, size_t> t) {
  std::printf("{\"op\":\"%s\",\"mode\":\"%s\",\"bytes\":%zu,\"encoded_bytes\":%zu,\"gbps\":%.3f,\"median_us\":%.1f,"
              "\"reps\":%zu}\n",
              op, mode.c_str(), bytes, encoded_bytes, double(bytes) / t.first / 1e9, t.first * 1e6, t.second);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  size_t max_bytes = size_t{64} << 20;
  std::vector<std::string> modes(std::begin(kDefaultModes), std::end(kDefaultModes));
  for (int i = 1; i < argc; i += 2) {
    if (i + 1 >= argc) {
      std::fprintf(stderr, "usage: codec_bench [--max-bytes N] [--modes CONFIG/CONFIG/...]\n");
      return 2;
    }
    if (std::strcmp(argv[i], "--max-bytes") == 0) {
      max_bytes = static_cast<size_t>(std::strtoull(argv[i + 1], nullptr, 10));
    } else if (std::strcmp(argv[i], "--modes") == 0) {
      modes.clear();
      std::string list = argv[i + 1];
      size_t start = 0;
      while (start <= list.size()) {
        const size_t slash = list.find('/', start);
        modes.push_back(list.substr(start, slash == std::string::npos ? std::string::npos : slash - start));
        if (slash == std::string::npos) break;
        start = slash + 1;
      }
    } else {
      std::fprintf(stderr, "codec_bench: unknown option %s\n", argv[i]);
      return 2;
    }
  }
  try {
    for (size_t bytes : {size_t{1} << 20, size_t{64} << 20}) {
      if (bytes > max_bytes) continue;
      const size_t n = bytes / sizeof(float);
      std::vector<float> gradient(n);
      std::mt19937 rng(1);
      std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
      for (float& v : gradient) v = uniform(rng);
      std::vector<float> dst(n, 0.0f);
      for (const std::string& text : modes) {
        const GradientCodec codec(CompressionConfig::parse(text));
        const std::string mode = codec.config().to_string();
        std::vector<uint8_t> encoded(codec.max_encoded_size(n), 0);
        size_t size = 0;
        const auto encode_time =
            time_median([&] { size = codec.encode(gradient.data(), n, encoded.data(), encoded.size()); });
        print("encode", mode, bytes, size, encode_time);
        print("decode", mode, bytes, size,
              time_median([&] { codec.decode_add(encoded.data(), size, dst.data(), n); }));
      }
    }
  } catch (const dt::core::Error& e) {
    std::fprintf(stderr, "codec_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
