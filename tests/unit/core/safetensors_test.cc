#include "core/safetensors.h"

#include <dirent.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "core/error.h"

namespace dt::core {
namespace {

class SafetensorsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/dt-safetensors-test.XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    if (DIR* d = ::opendir(dir_.c_str())) {
      while (dirent* e = ::readdir(d)) {
        const std::string name = e->d_name;
        if (name != "." && name != "..") std::remove((dir_ + "/" + name).c_str());
      }
      ::closedir(d);
    }
    ::rmdir(dir_.c_str());
  }

  // Writes an 8-byte length, the header text, then `data_bytes` zero bytes.
  std::string write_raw(const std::string& header, size_t data_bytes, uint64_t claimed_length = UINT64_MAX) {
    const std::string path = dir_ + "/raw.safetensors";
    std::ofstream out(path, std::ios::binary);
    const uint64_t length = claimed_length == UINT64_MAX ? header.size() : claimed_length;
    for (int i = 0; i < 8; ++i) out.put(static_cast<char>(length >> (8 * i)));
    out << header << std::string(data_bytes, '\0');
    return path;
  }

  // The code loading path fails with; its bytes, parsed in memory, must
  // fail alike.
  ErrorCode load_error(const std::string& path) {
    ErrorCode code = ErrorCode::kInternal;
    try {
      load_safetensors(path, cpu_);
      ADD_FAILURE() << "loaded a defective file " << path;
    } catch (const Error& e) {
      code = e.code();
    }
    struct stat info;
    if (::stat(path.c_str(), &info) != 0 || !S_ISREG(info.st_mode)) return code;
    std::ifstream in(path, std::ios::binary);
    const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (code == ErrorCode::kIo) {
      try {
        parse_safetensors(bytes, cpu_, "the bytes of " + path);
        ADD_FAILURE() << "parsed the defective bytes of " << path;
      } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::kIo) << e.what();
        EXPECT_NE(std::string(e.what()).find("the bytes of " + path), std::string::npos) << e.what();
      }
    }
    return code;
  }

  std::string dir_;
  std::shared_ptr<Context> cpu_ = make_cpu_context();
};

TEST_F(SafetensorsTest, RoundTripKeepsOrderDtypesShapesAndMetadata) {
  NDArray a = NDArray::zeros(cpu_, DType::kFloat16, Shape({2, 3}));
  NDArray b = NDArray::zeros(cpu_, DType::kInt64, Shape());
  NDArray c = NDArray::zeros(cpu_, DType::kUInt8, Shape({0, 4}));
  a.data_as<uint16_t>()[5] = 0x3c00;
  b.data_as<int64_t>()[0] = -7;
  const std::string path = dir_ + "/ok.safetensors";
  save_safetensors(path, {{"z.weight", a}, {"a.step", b}, {"empty", c}}, {{"format", "pt"}});
  const SafetensorsContents loaded = load_safetensors(path, cpu_);
  ASSERT_EQ(loaded.arrays.size(), 3u);
  EXPECT_EQ(loaded.arrays[0].first, "z.weight");
  EXPECT_EQ(loaded.arrays[1].first, "a.step");
  EXPECT_EQ(loaded.arrays[0].second.dtype(), DType::kFloat16);
  EXPECT_EQ(loaded.arrays[0].second.shape(), Shape({2, 3}));
  EXPECT_EQ(loaded.arrays[0].second.data_as<uint16_t>()[5], 0x3c00);
  EXPECT_EQ(loaded.arrays[1].second.shape().ndim(), 0u);
  EXPECT_EQ(loaded.arrays[1].second.data_as<int64_t>()[0], -7);
  EXPECT_EQ(loaded.arrays[2].second.size(), 0u);
  EXPECT_EQ(loaded.metadata.at("format"), "pt");
}

// In memory: the bytes a file would hold, read back alike.
TEST_F(SafetensorsTest, BytesAreTheFilesBytesAndReadBack) {
  NDArray a = NDArray::zeros(cpu_, DType::kFloat32, Shape({3}));
  NDArray b = NDArray::zeros(cpu_, DType::kInt32, Shape({2, 1}));
  a.data_as<float>()[2] = 1.5f;
  b.data_as<int32_t>()[1] = -3;
  const NamedArrays arrays = {{"w", a}, {"step", b}};
  const std::string path = dir_ + "/same.safetensors";
  save_safetensors(path, arrays, {{"epoch", "2"}});
  std::ifstream in(path, std::ios::binary);
  const std::vector<uint8_t> file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::vector<uint8_t> bytes = safetensors_bytes(arrays, {{"epoch", "2"}});
  EXPECT_EQ(bytes, file);
  const SafetensorsContents parsed = parse_safetensors(bytes, cpu_, "state");
  ASSERT_EQ(parsed.arrays.size(), 2u);
  EXPECT_EQ(parsed.arrays[0].first, "w");
  EXPECT_EQ(parsed.arrays[0].second.data_as<float>()[2], 1.5f);
  EXPECT_EQ(parsed.arrays[1].second.shape(), Shape({2, 1}));
  EXPECT_EQ(parsed.arrays[1].second.data_as<int32_t>()[1], -3);
  EXPECT_EQ(parsed.metadata.at("epoch"), "2");
  EXPECT_THROW(safetensors_bytes({{"w", a}, {"w", b}}), Error);
  for (size_t cut : {size_t{0}, size_t{7}, bytes.size() - 1}) {
    const std::vector<uint8_t> truncated(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(cut));
    EXPECT_THROW(parse_safetensors(truncated, cpu_, "state"), Error) << cut;
  }
}

TEST_F(SafetensorsTest, RejectsBadNames) {
  NDArray a = NDArray::zeros(cpu_, DType::kFloat32, Shape({1}));
  const std::string path = dir_ + "/names.safetensors";
  EXPECT_THROW(save_safetensors(path, {{"", a}}), Error);
  EXPECT_THROW(save_safetensors(path, {{"x", a}, {"x", a}}), Error);
  EXPECT_THROW(save_safetensors(path, {{"__metadata__", a}}), Error);
}

TEST_F(SafetensorsTest, FailedSaveLeavesNoFileBehind) {
  NDArray a = NDArray::zeros(cpu_, DType::kFloat32, Shape({1}));
  try {
    save_safetensors(dir_ + "/missing-dir/x.safetensors", {{"x", a}});
    FAIL() << "saved into a missing directory";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIo);
  }
  // Saving over something that is not a regular file must not replace it.
  EXPECT_THROW(save_safetensors("/dev/null", {{"x", a}}), Error);
  struct stat null_info;
  ASSERT_EQ(::stat("/dev/null", &null_info), 0);
  EXPECT_TRUE(S_ISCHR(null_info.st_mode));
  {
    // A file-size limit makes write() fail as a full disk would.
    NDArray big = NDArray::zeros(cpu_, DType::kFloat32, Shape({4096}));
    struct rlimit saved;
    ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &saved), 0);
    const auto previous_handler = std::signal(SIGXFSZ, SIG_IGN);
    struct rlimit small = saved;
    small.rlim_cur = 1024;
    ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
    try {
      save_safetensors(dir_ + "/too-big.safetensors", {{"big", big}});
      ADD_FAILURE() << "a write past the size limit went unnoticed";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kIo);
      EXPECT_NE(std::string(e.what()).find("too-big"), std::string::npos) << e.what();
    }
    ::setrlimit(RLIMIT_FSIZE, &saved);
    std::signal(SIGXFSZ, previous_handler);
  }
  DIR* d = ::opendir(dir_.c_str());
  int entries = 0;
  while (dirent* e = ::readdir(d)) entries += std::string(e->d_name) != "." && std::string(e->d_name) != "..";
  ::closedir(d);
  EXPECT_EQ(entries, 0);
}

TEST_F(SafetensorsTest, RejectsMalformedFiles) {
  const std::string good_entry = R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  EXPECT_EQ(load_error(dir_ + "/absent"), ErrorCode::kNotFound);
  EXPECT_EQ(load_error(write_raw(good_entry, 8, 1u << 20)), ErrorCode::kIo);       // length past the end
  EXPECT_EQ(load_error(write_raw("{not json", 0)), ErrorCode::kIo);
  EXPECT_EQ(load_error(write_raw("[1, 2]", 0)), ErrorCode::kIo);                   // not an object
  EXPECT_EQ(load_error(write_raw(good_entry, 4)), ErrorCode::kIo);                 // data truncated
  EXPECT_EQ(load_error(write_raw(good_entry, 12)), ErrorCode::kIo);                // trailing bytes
  EXPECT_EQ(load_error(write_raw(R"({"x":{"dtype":"Q7","shape":[2],"data_offsets":[0,8]}})", 8)), ErrorCode::kIo);
  EXPECT_EQ(load_error(write_raw(R"({"x":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8)), ErrorCode::kIo);
  EXPECT_EQ(load_error(write_raw(R"({"x":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", 8)), ErrorCode::kIo);
  EXPECT_EQ(load_error(write_raw(R"({"x":{"dtype":"F32","shape":[2]}})", 8)), ErrorCode::kIo);
  EXPECT_EQ(load_error(write_raw(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", 8)), ErrorCode::kIo);
  EXPECT_EQ(load_error(write_raw(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                                 R"("y":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})",
                                 12)),
            ErrorCode::kIo);  // a hole
  EXPECT_EQ(load_error(write_raw(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                                 R"("y":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                                 8)),
            ErrorCode::kIo);  // an overlap
  EXPECT_EQ(load_error(write_raw(R"({"__metadata__":{"k":1}})", 0)), ErrorCode::kIo);
  {
    const std::string path = dir_ + "/short";
    std::ofstream(path) << "abc";
    EXPECT_EQ(load_error(path), ErrorCode::kIo);
  }
  EXPECT_EQ(load_error(dir_), ErrorCode::kIo);  // a directory
}

}  // namespace
}  // namespace dt::core
