// The parameter table's defaults (core/parameter_table.h) are the ones the
// job's readers apply, and PS_VERBOSE's lines still come out as they did.
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "core/log.h"
#include "core/parameter_table.h"
#include "ps/job/environment_options.h"

namespace dt::ps {
namespace {

std::string default_of(const char* name) {
  const core::Parameter* p = core::find_parameter(name);
  EXPECT_NE(p, nullptr) << name;
  return p != nullptr ? p->default_value : "";
}

std::string text_of(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

TEST(PsParameterDefaults, DeadlinesAndBoundsMatchPsOptions) {
  const PsOptions d;
  EXPECT_EQ(default_of("DT_STARTUP_TIMEOUT_S"), text_of(d.startup_timeout_s));
  EXPECT_EQ(default_of("DT_REQUEST_TIMEOUT_S"), text_of(d.request_timeout_s));
  EXPECT_EQ(default_of("DT_HEARTBEAT_INTERVAL_S"), text_of(d.heartbeat_interval_s));
  EXPECT_EQ(default_of("DT_HEARTBEAT_TIMEOUT_S"), text_of(d.heartbeat_timeout_s));
  EXPECT_EQ(default_of("DT_SHUTDOWN_TIMEOUT_S"), text_of(d.shutdown_timeout_s));
  EXPECT_EQ(default_of("DT_STALL_WARNING_S"), text_of(d.stall_warning_s));
  EXPECT_EQ(default_of("DT_BIGARRAY_BOUND_BYTES"), std::to_string(d.bigarray_bound_bytes));
  EXPECT_EQ(default_of("MXNET_KVSTORE_BIGARRAY_BOUND"), std::to_string(d.bigarray_bound_bytes / sizeof(float)));
  EXPECT_EQ(default_of("DT_WORKER_LOSS"), "fail");
  EXPECT_EQ(default_of("DT_SERVER_REPLICATION"), std::to_string(d.server_replicas));
  EXPECT_EQ(default_of("MXNET_KVSTORE_REDUCTION_NTHREADS"), std::to_string(d.reduction_threads));
  // A pool made without settings (a test's store) sums as a job's would.
  EXPECT_EQ(d.reduction().threads, ops::cpu::ReductionSettings{}.threads);
  EXPECT_EQ(d.reduction().parallel_bytes, ops::cpu::ReductionSettings{}.parallel_bytes);
}

TEST(PsParameterDefaults, VerboseLogForwardsToTheLogChannel) {
  core::set_log_handler(core::LogLevel::kDebug, nullptr, nullptr);
  EXPECT_EQ(ps_verbose(), 1);
  testing::internal::CaptureStderr();
  verbose_log(1, "scheduler: node table published");
  verbose_log(2, "scheduler: Heartbeat on connection 3");
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "disttrain[PS_VERBOSE]: scheduler: node table published\n");
  core::set_log_handler(core::LogLevel::kTrace, nullptr, nullptr);
  EXPECT_EQ(ps_verbose(), 2);
  core::set_log_handler(core::LogLevel::kInfo, nullptr, nullptr);
  EXPECT_EQ(ps_verbose(), 0);
}

}  // namespace
}  // namespace dt::ps
