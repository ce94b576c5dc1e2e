// What every gradient-compression mode shares: decode adds into the
// destination, non-finite input, short buffers, wrong lengths and hostile
// bytes are refused without touching the destination.
#include <gtest/gtest.h>

#include "compression_test_util.h"

namespace dt::ps::compression {
namespace {

using namespace compression_test;

// --- what every mode shares ------------------------------------------------------------

TEST(CompressionCodecAll, DecodeAddsIntoTheDestination) {
  for (const char* text : kAllModes) {
    const GradientCodec codec(config(text));
    const auto g = random_values(37, 11, 2.0f);
    const auto bytes = encode(codec, g);
    const auto alone = decode(codec, bytes, g.size());
    std::vector<float> dst(g.size());
    for (size_t i = 0; i < dst.size(); ++i) dst[i] = static_cast<float>(i);
    codec.decode_add(bytes.data(), bytes.size(), dst.data(), dst.size());
    for (size_t i = 0; i < dst.size(); ++i) EXPECT_EQ(dst[i], static_cast<float>(i) + alone[i]) << text << " " << i;
  }
}

TEST(CompressionCodecAll, NonFiniteInputIsRejectedNamingTheIndex) {
  for (const char* text : kAllModes) {
    const GradientCodec codec(config(text));
    for (size_t bad_index : {size_t{5}, size_t{37}}) {  // in the vectorised words, and in the tail
      for (float bad : {kNaN, kInf, -kInf}) {
        auto g = random_values(40, 5, 1.0f);
        g[bad_index] = bad;
        std::string message;
        EXPECT_EQ(code_of([&] { encode(codec, g); }, &message), ErrorCode::kInvalidArgument) << text;
        EXPECT_NE(message.find("element " + std::to_string(bad_index)), std::string::npos) << text << ": " << message;
      }
    }
  }
}

TEST(CompressionCodecAll, TooSmallAnOutputBufferIsRejected) {
  for (const char* text : kAllModes) {
    const GradientCodec codec(config(text));
    const std::vector<float> g(20, 1.0f);
    std::vector<uint8_t> out(codec.max_encoded_size(g.size()) - 1);
    EXPECT_EQ(code_of([&] { codec.encode(g.data(), g.size(), out.data(), out.size()); }),
              ErrorCode::kInvalidArgument)
        << text;
  }
}

TEST(CompressionCodecAll, WrongLengthsAreProtocolErrors) {
  for (const char* text : kAllModes) {
    const GradientCodec codec(config(text));
    const size_t n = 20;
    const auto bytes = encode(codec, std::vector<float>(n, 1.0f));
    std::vector<float> dst(n, 7.0f);
    for (long delta : {-1L, 1L, 8L}) {
      std::vector<uint8_t> wrong = bytes;
      wrong.resize(static_cast<size_t>(static_cast<long>(bytes.size()) + delta), 0);
      EXPECT_EQ(code_of([&] { codec.decode_add(wrong.data(), wrong.size(), dst.data(), n); }), ErrorCode::kProtocol)
          << text << " " << delta;
    }
    EXPECT_EQ(dst, std::vector<float>(n, 7.0f)) << text;
    // The same bytes read for another element count (threshold's pairs are
    // as valid for more elements, so only its own lengths are checked).
    if (codec.config().mode == CompressionMode::kThreshold) continue;
    std::vector<float> longer(n + 40, 7.0f);
    EXPECT_EQ(code_of([&] { codec.decode_add(bytes.data(), bytes.size(), longer.data(), n + 40); }),
              ErrorCode::kProtocol)
        << text;
  }
}

TEST(CompressionCodecAll, MalformedContentIsAProtocolErrorAndLeavesTheDestination) {
  struct Case {
    const char* config;
    size_t n;
    std::vector<uint8_t> bytes;
    const char* why;
  };
  const uint16_t half_nan = 0x7e00, half_inf = 0xfc00, bf16_inf = 0x7f80;
  auto u16 = [](std::vector<uint16_t> values) {
    std::vector<uint8_t> out(2 * values.size());
    std::memcpy(out.data(), values.data(), out.size());
    return out;
  };
  std::vector<uint8_t> none_nan(8, 0);
  std::memcpy(none_nan.data() + 4, &kNaN, 4);
  const Case cases[] = {
      {"none", 2, none_nan, "NaN"},
      {"fp16", 3, u16({0x3c00, half_nan, 0}), "NaN"},
      {"fp16", 3, u16({0x3c00, 0, half_inf}), "-Inf"},
      {"bf16", 2, u16({bf16_inf, 0}), "Inf"},
      {"2bit:magnitude=threshold", 16, {0x40, 0, 0, 0}, "code 01"},
      {"2bit:magnitude=threshold", 16, {0, 0, 0, 0x01}, "code 01 in the last value"},
      {"2bit:magnitude=threshold", 5, {0, 0x30, 0, 0}, "padding value 5"},
      {"2bit:magnitude=threshold", 5, {0, 0, 0, 0x80}, "padding value 12"},
      {"1bit", 9, {0, 0x40, 0, 0}, "padding bit of value 9"},
      {"1bit", 31, {0, 0, 0, 0x01}, "padding bit of value 31"},
      {"topk:fraction=0.5", 4, pairs({{1, 1.0f}, {4, 1.0f}}), "index out of range"},
      {"topk:fraction=0.5", 4, pairs({{2, 1.0f}, {1, 1.0f}}), "descending"},
      {"topk:fraction=0.5", 4, pairs({{1, 1.0f}, {1, 1.0f}}), "repeated"},
      {"topk:fraction=0.5", 4, pairs({{0, 1.0f}, {1, kInf}}), "Inf"},
      {"topk:fraction=0.5", 4, pairs({{0, 1.0f}}), "too few pairs"},
      {"threshold:threshold=0.5", 4, pairs({{0, 1.0f}, {1, 0.25f}}), "below the threshold"},
      {"threshold:threshold=0.5", 4, pairs({{0, 1.0f}, {1, -kNaN}}), "NaN"},
      {"threshold:threshold=0.5", 4, pairs({{3, 1.0f}, {0, 1.0f}}), "descending"},
      {"threshold:threshold=0.5", 2, pairs({{0, 1.0f}, {1, 1.0f}, {1, 1.0f}}), "more pairs than elements"},
      {"threshold:threshold=0.5", 4, pairs({{0xffffffffu, 1.0f}}), "index out of range"},
  };
  for (const Case& c : cases) {
    const GradientCodec codec(config(c.config));
    std::vector<float> dst(c.n, 7.0f);
    std::string message;
    EXPECT_EQ(code_of([&] { codec.decode_add(c.bytes.data(), c.bytes.size(), dst.data(), c.n); }, &message),
              ErrorCode::kProtocol)
        << c.config << ": " << c.why;
    EXPECT_NE(message.find("malformed"), std::string::npos) << message;
    EXPECT_EQ(dst, std::vector<float>(c.n, 7.0f)) << c.config << ": " << c.why;
  }
}

TEST(CompressionCodecAll, RandomAndMutatedBytesDecodeOrAreRefusedNeverWorse) {
  // What a hostile or broken peer might send: a valid encoding with bits
  // flipped, cut or extended, and plain random bytes. Each decodes (to
  // finite values) or is Error(kProtocol) with the destination untouched;
  // the sanitizer build checks that no read strays.
  std::mt19937 rng(99);
  for (const char* text : kAllModes) {
    const GradientCodec codec(config(text));
    for (int trial = 0; trial < 300; ++trial) {
      const size_t n = rng() % 70;
      std::vector<uint8_t> bytes = encode(codec, random_values(n, rng(), 1.0f));
      switch (trial % 3) {
        case 0:
          if (!bytes.empty()) bytes[rng() % bytes.size()] ^= static_cast<uint8_t>(1u << (rng() % 8));
          break;
        case 1: bytes.resize(rng() % (bytes.size() + 9), static_cast<uint8_t>(rng())); break;
        default:
          for (uint8_t& b : bytes) b = static_cast<uint8_t>(rng());
      }
      std::vector<float> dst(n, 7.0f);
      try {
        codec.decode_add(bytes.data(), bytes.size(), dst.data(), n);
        for (float v : dst) EXPECT_TRUE(std::isfinite(v)) << text << " trial " << trial;
      } catch (const core::Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::kProtocol) << text << " trial " << trial << ": " << e.what();
        EXPECT_EQ(dst, std::vector<float>(n, 7.0f)) << text << " trial " << trial;
      }
    }
  }
}

}  // namespace
}  // namespace dt::ps::compression
