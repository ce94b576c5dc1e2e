// The factory's answers for the GPU kvstore types in this build and on this
// machine: never a silent CPU fallback, always a status that names the cause.
#include "kvstore/kvstore_factory.h"

#include <gtest/gtest.h>

#include <string>

#include "core/context.h"
#include "core/error.h"

namespace dt::kvstore {
namespace {

using core::Error;
using core::ErrorCode;

// The error create_kvstore(type) throws; kInternal (and a failure) when it succeeds.
Error error_of(const std::string& type) {
  try {
    create_kvstore(type);
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "'" << type << "' was created";
  return Error(ErrorCode::kInternal, "created");
}

bool contains(const Error& e, const std::string& text) { return std::string(e.what()).find(text) != std::string::npos; }

TEST(KVStoreFactory, NcclNeedsNcclInTheBuildAndAGpu) {
  if (!DT_WITH_NCCL) {
    const Error e = error_of("nccl");
    EXPECT_EQ(e.code(), ErrorCode::kNotSupported);
    EXPECT_TRUE(contains(e, "without NCCL")) << e.what();
  } else if (core::gpu_count() == 0) {
    const Error e = error_of("nccl");
    EXPECT_EQ(e.code(), ErrorCode::kNoDevice);
    EXPECT_TRUE(contains(e, "'nccl'")) << e.what();
  } else {
    EXPECT_EQ(create_kvstore("nccl")->type(), "nccl");
  }
}

TEST(KVStoreFactory, DeviceNeedsAGpu) {
  if (core::gpu_count() > 0) {
    EXPECT_EQ(create_kvstore("device")->type(), "device");
    return;
  }
  const Error e = error_of("device");
  EXPECT_EQ(e.code(), DT_WITH_CUDA ? ErrorCode::kNoDevice : ErrorCode::kNotSupported) << e.what();
  EXPECT_TRUE(contains(e, "'device'")) << e.what();
}

// Without a GPU the "_device" types fail before reading the job layout; with
// one they read it, and with no DMLC_* variables set here that fails before
// joining anything (tests/gpu/dist_device_kvstore_gpu_test.cc joins a job).
TEST(KVStoreFactory, DistDeviceTypesNeedAGpuAndNameTheAlternative) {
  for (const std::string type : {"dist_sync_device", "dist_async_device"}) {
    const Error e = error_of(type);
    if (core::gpu_count() > 0) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << type << ": " << e.what();
      continue;
    }
    EXPECT_EQ(e.code(), DT_WITH_CUDA ? ErrorCode::kNoDevice : ErrorCode::kNotSupported) << type;
    EXPECT_TRUE(contains(e, "'" + type + "'")) << e.what();
    EXPECT_TRUE(contains(e, "use '" + type.substr(0, type.size() - 7) + "'")) << e.what();
  }
}

TEST(KVStoreFactory, DistNcclNeedsNcclInTheBuildAndAGpu) {
  const Error e = error_of("dist_nccl");
  if (DT_WITH_NCCL && core::gpu_count() > 0) {
    // The job layout is read next: no DMLC_* variables, so it fails there.
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
    return;
  }
  EXPECT_EQ(e.code(), DT_WITH_NCCL ? ErrorCode::kNoDevice : ErrorCode::kNotSupported) << e.what();
  EXPECT_TRUE(contains(e, "'dist_nccl'")) << e.what();
  EXPECT_TRUE(contains(e, DT_WITH_NCCL ? "GPU" : "without NCCL")) << e.what();
  EXPECT_TRUE(contains(e, "use 'dist_sync'")) << e.what();
}

// Its NCCL ring is not rebuilt after a worker loss: the policy that would
// need it is refused first, on any machine, naming the stores that go on.
TEST(KVStoreFactory, DistNcclRefusesToGoOnAfterAWorkerLoss) {
  ps::PsOptions options;
  options.worker_loss = ps::WorkerLossPolicy::kContinue;
  try {
    create_kvstore("dist_nccl", options);
    ADD_FAILURE() << "dist_nccl was created under DT_WORKER_LOSS=continue";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotSupported) << e.what();
    EXPECT_TRUE(contains(e, "DT_WORKER_LOSS=continue")) << e.what();
    EXPECT_TRUE(contains(e, "'allreduce'")) << e.what();
  }
}

TEST(KVStoreFactory, UnknownTypesListEveryKnownOne) {
  const Error e = error_of("dist_mpi");
  EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
  for (const char* known : {"local", "device", "nccl", "dist_sync", "dist_async", "dist_sync_device",
                            "dist_async_device", "dist_nccl"}) {
    EXPECT_TRUE(contains(e, known)) << known << " missing from: " << e.what();
  }
}

}  // namespace
}  // namespace dt::kvstore
