// The deadlines, bounds and MXNet knobs every node of a job reads from its
// environment (ps/job/environment_options.h).
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "core/error.h"
#include "ps/job/environment_options.h"
#include "unit/ps/job/env_of.h"

namespace dt::ps {
namespace {

std::string error_of(const std::map<std::string, std::string>& vars) {
  try {
    ps_options_from_environment(env_of(vars));
  } catch (const core::Error& e) {
    EXPECT_EQ(e.code(), core::ErrorCode::kInvalidArgument);
    return e.what();
  }
  return "no error";
}

TEST(PsEnvironmentOptions, NothingSetKeepsTheDefaults) {
  const PsOptions o = ps_options_from_environment(env_of({}));
  const PsOptions d;
  EXPECT_EQ(o.request_timeout_s, d.request_timeout_s);
  EXPECT_EQ(o.bigarray_bound_bytes, d.bigarray_bound_bytes);
  EXPECT_TRUE(mxnet_knob_notes(env_of({})).empty());
}

TEST(PsEnvironmentOptions, DeadlinesAndTheBigArrayBoundComeFromTheEnvironment) {
  const PsOptions o = ps_options_from_environment(env_of({{"DT_STARTUP_TIMEOUT_S", "7"},
                                                          {"DT_REQUEST_TIMEOUT_S", "2.5"},
                                                          {"DT_HEARTBEAT_INTERVAL_S", "0.25"},
                                                          {"DT_HEARTBEAT_TIMEOUT_S", "3"},
                                                          {"DT_SHUTDOWN_TIMEOUT_S", "4"},
                                                          {"MXNET_KVSTORE_BIGARRAY_BOUND", "1000"}}));
  EXPECT_EQ(o.startup_timeout_s, 7);
  EXPECT_EQ(o.request_timeout_s, 2.5);
  EXPECT_EQ(o.heartbeat_interval_s, 0.25);
  EXPECT_EQ(o.heartbeat_timeout_s, 3);
  EXPECT_EQ(o.shutdown_timeout_s, 4);
  // MXNet counts elements (float32): 1000 of them are 4000 bytes.
  EXPECT_EQ(o.bigarray_bound_bytes, 4000u);
  // The byte variable wins when both are set.
  EXPECT_EQ(ps_options_from_environment(env_of({{"MXNET_KVSTORE_BIGARRAY_BOUND", "1000"},
                                                {"DT_BIGARRAY_BOUND_BYTES", "123"}}))
                .bigarray_bound_bytes,
            123u);
}

TEST(PsEnvironmentOptions, StallWarningSecondsOrZeroForOff) {
  EXPECT_EQ(ps_options_from_environment(env_of({})).stall_warning_s, 60);
  EXPECT_EQ(ps_options_from_environment(env_of({{"DT_STALL_WARNING_S", "2.5"}})).stall_warning_s, 2.5);
  EXPECT_EQ(ps_options_from_environment(env_of({{"DT_STALL_WARNING_S", "0"}})).stall_warning_s, 0);
  EXPECT_NE(error_of({{"DT_STALL_WARNING_S", "-1"}}).find("DT_STALL_WARNING_S"), std::string::npos);
}

TEST(PsEnvironmentOptions, MalformedValuesAreErrorsNamingTheVariable) {
  EXPECT_NE(error_of({{"DT_REQUEST_TIMEOUT_S", "soon"}}).find("DT_REQUEST_TIMEOUT_S=\"soon\""), std::string::npos);
  EXPECT_NE(error_of({{"DT_HEARTBEAT_TIMEOUT_S", "-1"}}).find("DT_HEARTBEAT_TIMEOUT_S"), std::string::npos);
  EXPECT_NE(error_of({{"MXNET_KVSTORE_BIGARRAY_BOUND", "0"}}).find("MXNET_KVSTORE_BIGARRAY_BOUND"),
            std::string::npos);
  EXPECT_NE(error_of({{"DT_BIGARRAY_BOUND_BYTES", "-5"}}).find("DT_BIGARRAY_BOUND_BYTES"), std::string::npos);
  EXPECT_NE(error_of({{"DT_BIGARRAY_BOUND_BYTES", "12abc"}}).find("positive count of bytes"), std::string::npos);
}

TEST(PsEnvironmentOptions, RefusedMxnetVariablesAreNamedNotIgnored) {
  const auto notes = mxnet_knob_notes(env_of({{"PS_RESEND", "1"},
                                              {"MXNET_ENABLE_GPU_P2P", "0"},
                                              {"MXNET_KVSTORE_REDUCTION_NTHREADS", "2"},
                                              {"MXNET_UPDATE_ON_KVSTORE", "0"}}));
  ASSERT_EQ(notes.size(), 1u);  // the others are honoured
  EXPECT_EQ(notes[0].rfind("MXNET_UPDATE_ON_KVSTORE=0: refused, not honoured here: ", 0), 0u) << notes[0];
  EXPECT_NE(notes[0].find("update_on_kvstore"), std::string::npos) << notes[0];
}

TEST(PsEnvironmentOptions, ReductionThreadsComeFromMxnetsVariable) {
  EXPECT_EQ(ps_options_from_environment(env_of({})).reduction_threads, 4);
  const PsOptions o = ps_options_from_environment(
      env_of({{"MXNET_KVSTORE_REDUCTION_NTHREADS", "2"}, {"MXNET_KVSTORE_BIGARRAY_BOUND", "1000"}}));
  EXPECT_EQ(o.reduction().threads, 2);
  EXPECT_EQ(o.reduction().parallel_bytes, 4000u) << "from MXNet's bound on, as MXNet";
  EXPECT_NE(error_of({{"MXNET_KVSTORE_REDUCTION_NTHREADS", "0"}}).find("positive count of threads"),
            std::string::npos);
  EXPECT_NE(error_of({{"MXNET_KVSTORE_REDUCTION_NTHREADS", "300"}}).find("more than 256 threads"), std::string::npos);
}

TEST(PsEnvironmentOptions, PsResendTurnsResendingOnWithItsTimeoutInMilliseconds) {
  EXPECT_EQ(ps_options_from_environment(env_of({})).resend_timeout_s, 0);
  EXPECT_EQ(ps_options_from_environment(env_of({{"PS_RESEND", "0"}})).resend_timeout_s, 0);
  EXPECT_EQ(ps_options_from_environment(env_of({{"PS_RESEND", "1"}})).resend_timeout_s, 1.0);
  EXPECT_EQ(ps_options_from_environment(env_of({{"PS_RESEND", "1"}, {"PS_RESEND_TIMEOUT", "250"}})).resend_timeout_s,
            0.25);
  EXPECT_NE(error_of({{"PS_RESEND", "1"}, {"PS_RESEND_TIMEOUT", "soon"}}).find("PS_RESEND_TIMEOUT"),
            std::string::npos);
}

TEST(PsEnvironmentOptions, WorkerLossIsFailOrContinue) {
  EXPECT_EQ(ps_options_from_environment(env_of({})).worker_loss, WorkerLossPolicy::kFail);
  EXPECT_EQ(ps_options_from_environment(env_of({{"DT_WORKER_LOSS", "fail"}})).worker_loss, WorkerLossPolicy::kFail);
  EXPECT_EQ(ps_options_from_environment(env_of({{"DT_WORKER_LOSS", "continue"}})).worker_loss,
            WorkerLossPolicy::kContinue);
  EXPECT_NE(error_of({{"DT_WORKER_LOSS", "ignore"}}).find("DT_WORKER_LOSS=\"ignore\""), std::string::npos);
}

TEST(PsEnvironmentOptions, ServerReplicationIsZeroOrOne) {
  EXPECT_EQ(ps_options_from_environment(env_of({})).server_replicas, 0);
  EXPECT_EQ(ps_options_from_environment(env_of({{"DT_SERVER_REPLICATION", "0"}})).server_replicas, 0);
  EXPECT_EQ(ps_options_from_environment(env_of({{"DT_SERVER_REPLICATION", "1"}})).server_replicas, 1);
  for (const char* bad : {"2", "yes", "-1"}) {
    EXPECT_NE(error_of({{"DT_SERVER_REPLICATION", bad}}).find("DT_SERVER_REPLICATION=\"" + std::string(bad) + "\""),
              std::string::npos)
        << bad;
  }
}

TEST(PsEnvironmentOptions, PsVerboseIsALogLevelNotANote) {
  EXPECT_EQ(ps_verbose_level(env_of({})), 0);
  EXPECT_EQ(ps_verbose_level(env_of({{"PS_VERBOSE", ""}})), 0);
  EXPECT_EQ(ps_verbose_level(env_of({{"PS_VERBOSE", "1"}})), 1);
  EXPECT_EQ(ps_verbose_level(env_of({{"PS_VERBOSE", "2"}})), 2);
  EXPECT_EQ(ps_verbose_level(env_of({{"PS_VERBOSE", "3"}})), 2);  // ps-lite's higher levels log as 2
  EXPECT_TRUE(mxnet_knob_notes(env_of({{"PS_VERBOSE", "2"}})).empty());
  EXPECT_NE(error_of({{"PS_VERBOSE", "loud"}}).find("PS_VERBOSE=\"loud\""), std::string::npos);
  EXPECT_NE(error_of({{"PS_VERBOSE", "-1"}}).find("PS_VERBOSE"), std::string::npos);
}

}  // namespace
}  // namespace dt::ps
