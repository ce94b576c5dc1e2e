// A job's checkpoint directory (issue 19, item 4): the manifest names only
// an epoch every worker committed, is replaced whole, and refuses a job of
// another size.
#include "train/checkpoint_directory.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include "core/error.h"

namespace dt::train {
namespace {

std::string fresh_dir(const std::string& name) {
  const std::string dir = std::string("/tmp/dt-ckpt-dir-") + std::to_string(::getpid()) + "-" + name;
  std::filesystem::remove_all(dir);
  return dir;
}

// The code of the Error f throws; a test failure when it throws none.
core::ErrorCode code_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const core::Error& e) {
    return e.code();
  }
  ADD_FAILURE() << "no error";
  return core::ErrorCode::kInternal;
}

TEST(CheckpointDirectory, TheManifestNamesTheLastCommittedEpochOnly) {
  const std::string dir = fresh_dir("commit");
  const CheckpointDirectory worker0(dir, 0, 2), worker1(dir, 1, 2);
  EXPECT_EQ(worker0.last_complete_epoch(), std::nullopt) << "no manifest yet";
  EXPECT_EQ(worker0.worker_file(1), dir + "/epoch-1/worker-0.safetensors");
  EXPECT_EQ(worker1.worker_file(1), dir + "/epoch-1/worker-1.safetensors");
  // Worker 1 commits first: only worker 0 writes the manifest.
  worker1.commit(1, nullptr);
  EXPECT_EQ(worker1.last_complete_epoch(), std::nullopt);
  worker0.commit(1, nullptr);
  EXPECT_EQ(worker1.last_complete_epoch(), 1);
  worker0.worker_file(2);
  worker0.commit(2, nullptr);
  EXPECT_EQ(worker0.last_complete_epoch(), 2);
  EXPECT_FALSE(std::filesystem::exists(dir + "/epoch-1")) << "an epoch before the manifest's is removed";
  EXPECT_TRUE(std::filesystem::exists(dir + "/epoch-2"));
  EXPECT_FALSE(std::filesystem::exists(dir + "/MANIFEST.json.tmp"));
  std::filesystem::remove_all(dir);
}

// A worker the job went on without in an epoch (DT_WORKER_LOSS=continue)
// wrote no file of it: it resumes from the lowest-ranked worker's.
TEST(CheckpointDirectory, AWorkerWithoutAFileOfTheEpochResumesFromAnothers) {
  const std::string dir = fresh_dir("resume");
  const CheckpointDirectory worker0(dir, 0, 3), worker1(dir, 1, 3), worker2(dir, 2, 3);
  EXPECT_EQ(code_of([&] { worker0.resume_file(1); }), core::ErrorCode::kNotFound);
  std::ofstream(worker2.worker_file(1)) << "2";
  std::ofstream(worker1.worker_file(1)) << "1";
  EXPECT_EQ(worker1.resume_file(1), dir + "/epoch-1/worker-1.safetensors") << "its own first";
  EXPECT_EQ(worker0.resume_file(1), dir + "/epoch-1/worker-1.safetensors");
  EXPECT_EQ(code_of([&] { worker0.resume_file(2); }), core::ErrorCode::kNotFound);
  std::filesystem::remove_all(dir);
}

TEST(CheckpointDirectory, ABadManifestOrAnotherJobSizeIsAClearError) {
  const std::string dir = fresh_dir("bad");
  const CheckpointDirectory two(dir, 0, 2);
  two.commit(3, nullptr);
  const CheckpointDirectory three(dir, 0, 3);
  EXPECT_EQ(code_of([&] { three.last_complete_epoch(); }), core::ErrorCode::kInvalidArgument);
  for (const char* text : {"not json", "[]", R"({"format":"other","epoch":1,"workers":2})",
                           R"({"format":"disttrain-checkpoint-directory","epoch":-1,"workers":2})",
                           R"({"format":"disttrain-checkpoint-directory","epoch":"1","workers":2})"}) {
    std::ofstream(dir + "/MANIFEST.json") << text;
    EXPECT_EQ(code_of([&] { two.last_complete_epoch(); }), core::ErrorCode::kIo) << text;
  }
  std::filesystem::remove_all(dir);
}

TEST(CheckpointDirectory, BadArgumentsAreErrors) {
  EXPECT_EQ(code_of([] { CheckpointDirectory("", 0, 1); }), core::ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of([] { CheckpointDirectory("/tmp/x", 2, 2); }), core::ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of([] { CheckpointDirectory("/proc/version/x", 0, 1); }), core::ErrorCode::kIo);
}

}  // namespace
}  // namespace dt::train
