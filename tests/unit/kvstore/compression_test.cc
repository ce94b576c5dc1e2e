// The codec layer of gradient compression: config text, every wire format
// bit for bit, hostile bytes, and error feedback's bookkeeping.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.h"
#include "error_code_of.h"
#include "kvstore/compression/compression_mode.h"

namespace dt::kvstore::compression {
namespace {

using core::ErrorCode;
using test_support::code_of;

CompressionConfig config(const std::string& text) { return CompressionConfig::parse(text); }

// --- config -------------------------------------------------------------------

TEST(CompressionConfig, ParsesDefaultsAndPrintsCanonicalText) {
  EXPECT_EQ(config("none").to_string(), "none");
  EXPECT_EQ(config("fp16").to_string(), "fp16:error_feedback=on");
  EXPECT_EQ(config("bf16:error_feedback=off").to_string(), "bf16:error_feedback=off");
  EXPECT_EQ(config("2bit").to_string(), "2bit:threshold=0.5,error_feedback=on");
  EXPECT_EQ(config("1bit").to_string(), "1bit:threshold=0.5,error_feedback=on");
  EXPECT_EQ(config("2bit:error_feedback=off,threshold=2").to_string(), "2bit:threshold=2,error_feedback=off");
  EXPECT_EQ(config("topk:fraction=0.01").to_string(), "topk:fraction=0.01,error_feedback=on");
  EXPECT_EQ(config("threshold:threshold=1e-3").to_string(), "threshold:threshold=0.001,error_feedback=on");

  const CompressionConfig two_bit = config("2bit:threshold=0.75");
  EXPECT_EQ(two_bit.mode, CompressionMode::k2Bit);
  EXPECT_EQ(two_bit.threshold_or_fraction, 0.75);
  EXPECT_TRUE(two_bit.error_feedback);
  EXPECT_FALSE(config("none").error_feedback);
  EXPECT_EQ(CompressionConfig::defaults(CompressionMode::k2Bit), config("2bit"));
  EXPECT_EQ(CompressionConfig::defaults(CompressionMode::kNone), CompressionConfig{});
}

TEST(CompressionConfig, TextRoundTripsExactly) {
  for (const char* text : {"none", "fp16", "bf16:error_feedback=off", "2bit:threshold=0.30000000000000004",
                           "1bit:threshold=3.4028234663852886e+38", "topk:fraction=1", "topk:fraction=0.1",
                           "threshold:threshold=1.401298464324817e-45"}) {
    const CompressionConfig parsed = config(text);
    EXPECT_EQ(CompressionConfig::parse(parsed.to_string()), parsed) << text;
    EXPECT_EQ(CompressionConfig::parse(parsed.to_string()).to_string(), parsed.to_string()) << text;
  }
  EXPECT_EQ(config("2bit:threshold=0.30000000000000004").threshold_or_fraction, 0.30000000000000004);
}

TEST(CompressionConfig, ParseErrorsNameTheField) {
  struct Case {
    const char* text;
    std::vector<const char*> named;
  };
  const Case cases[] = {
      {"3bit", {"mode", "'3bit'"}},
      {"2BIT", {"mode", "'2BIT'"}},
      {"", {"mode", "''"}},
      {" 2bit", {"mode"}},
      {"2bit:threshold=abc", {"threshold", "'abc'"}},
      {"2bit:threshold=", {"threshold", "''"}},
      {"2bit:threshold=0.5x", {"threshold", "'0.5x'"}},
      {"2bit:threshold=-1", {"threshold", "-1"}},
      {"2bit:threshold=0", {"threshold", "0"}},
      {"2bit:threshold=inf", {"threshold", "'inf'"}},
      {"2bit:threshold=nan", {"threshold", "'nan'"}},
      {"1bit:threshold=1e40", {"threshold", "float"}},
      {"threshold:threshold=1e-50", {"threshold", "float"}},
      {"threshold", {"threshold=<value>"}},
      {"topk", {"fraction=<value>"}},
      {"topk:fraction=0", {"fraction", "(0, 1]"}},
      {"topk:fraction=1.5", {"fraction", "1.5"}},
      {"topk:threshold=0.5", {"topk", "threshold"}},
      {"2bit:fraction=0.1", {"2bit", "fraction"}},
      {"fp16:threshold=0.1", {"fp16", "threshold"}},
      {"none:error_feedback=on", {"error_feedback", "none"}},
      {"2bit:error_feedback=yes", {"error_feedback", "'yes'"}},
      {"2bit:threshold=0.5,threshold=0.6", {"threshold", "twice"}},
      {"2bit:error_feedback=on,error_feedback=off", {"error_feedback", "twice"}},
      {"2bit:bogus=1", {"'bogus'"}},
      {"2bit:", {"field", "''"}},
      {"2bit:threshold", {"field", "'threshold'"}},
      {"2bit:threshold=0.5,", {"field", "''"}},
  };
  for (const Case& c : cases) {
    std::string message;
    EXPECT_EQ(code_of([&] { CompressionConfig::parse(c.text); }, &message), ErrorCode::kInvalidArgument) << c.text;
    for (const char* word : c.named) EXPECT_NE(message.find(word), std::string::npos) << c.text << ": " << message;
  }
}

TEST(CompressionConfig, ValidateChecksHandBuiltConfigs) {
  CompressionConfig c;
  c.validate();
  c.threshold_or_fraction = 0.5;
  EXPECT_EQ(code_of([&] { c.validate(); }), ErrorCode::kInvalidArgument);  // none takes no value
  c = CompressionConfig{CompressionMode::kTopK, 0.0, true};
  EXPECT_EQ(code_of([&] { c.validate(); }), ErrorCode::kInvalidArgument);
  c = CompressionConfig{static_cast<CompressionMode>(99), 0.0, false};
  EXPECT_EQ(code_of([&] { c.validate(); }), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of([&] { CompressionConfig::defaults(CompressionMode::kTopK); }), ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace dt::kvstore::compression
