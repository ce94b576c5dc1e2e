// The DMLC_* environment as a JobConfig, and PsOptions validation.
#include <gtest/gtest.h>

#include <map>

#include "core/error.h"
#include "ps/job/job_config.h"
#include "unit/ps/job/env_of.h"

namespace dt::ps {
namespace {

using core::Error;
using core::ErrorCode;

std::map<std::string, std::string> base() {
  return {{"DMLC_ROLE", "worker"},      {"DMLC_PS_ROOT_URI", "127.0.0.1"}, {"DMLC_PS_ROOT_PORT", "9091"},
          {"DMLC_NUM_SERVER", "2"},     {"DMLC_NUM_WORKER", "3"}};
}

std::string error_text(const std::map<std::string, std::string>& vars) {
  try {
    job_config_from(env_of(vars));
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    return e.what();
  }
  return "accepted";
}

TEST(PsJobConfig, SchedulerListensOnEveryInterfaceOnlyWhenAsked) {
  auto vars = base();
  vars["DT_PS_LISTEN_ALL"] = "1";
  EXPECT_EQ(job_config_from(env_of(vars)).scheduler_listen_url, "tcp://0.0.0.0:9091");
  vars["DT_PS_LISTEN_ALL"] = "0";
  EXPECT_EQ(job_config_from(env_of(vars)).scheduler_listen_url, "tcp://127.0.0.1:9091");
  // An address that is not this host's (a service address routed here):
  // this node's own address instead, never every interface.
  vars.erase("DT_PS_LISTEN_ALL");
  vars["DMLC_PS_ROOT_URI"] = "192.0.2.1";
  vars["DMLC_NODE_HOST"] = "127.0.0.5";
  EXPECT_EQ(job_config_from(env_of(vars)).scheduler_listen_url, "tcp://127.0.0.5:9091");
  // "localhost" is this host alone.
  vars["DMLC_PS_ROOT_URI"] = "localhost";
  EXPECT_EQ(job_config_from(env_of(vars)).scheduler_listen_url, "tcp://127.0.0.1:9091");
}

TEST(PsJobConfig, ReadsTheMxnetEnvironment) {
  auto vars = base();
  vars["DMLC_WORKER_ID"] = "2";
  const JobConfig job = job_config_from(env_of(vars));
  EXPECT_EQ(job.role, Role::kWorker);
  EXPECT_EQ(job.root_url, "tcp://127.0.0.1:9091");
  // Listens where told, not on every interface.
  EXPECT_EQ(job.scheduler_listen_url, "tcp://127.0.0.1:9091");
  EXPECT_EQ(job.num_servers, 2);
  EXPECT_EQ(job.num_workers, 3);
  EXPECT_EQ(job.worker_id, 2);
  EXPECT_EQ(job.node_host, "127.0.0.1");
}

TEST(PsJobConfig, ResolvesHostNames) {
  auto vars = base();
  vars["DMLC_PS_ROOT_URI"] = "localhost";
  EXPECT_EQ(job_config_from(env_of(vars)).root_url.find("tcp://127."), 0u);
}

TEST(PsJobConfig, MissingOrInvalidValuesNameTheVariable) {
  for (const char* name : {"DMLC_PS_ROOT_URI", "DMLC_PS_ROOT_PORT", "DMLC_NUM_SERVER", "DMLC_NUM_WORKER"}) {
    auto vars = base();
    vars.erase(name);
    EXPECT_NE(error_text(vars).find(name), std::string::npos) << name;
  }
  auto vars = base();
  vars["DMLC_NUM_WORKER"] = "two";
  EXPECT_NE(error_text(vars).find("DMLC_NUM_WORKER"), std::string::npos);
  vars = base();
  vars["DMLC_WORKER_ID"] = "3";  // 3 workers: ids 0..2
  EXPECT_NE(error_text(vars).find("DMLC_WORKER_ID"), std::string::npos);
  vars = base();
  vars["DMLC_ROLE"] = "boss";
  EXPECT_NE(error_text(vars).find("DMLC_ROLE"), std::string::npos);
  vars = base();
  vars["DMLC_PS_ROOT_URI"] = "no-such-host.invalid";
  EXPECT_NE(error_text(vars).find("DMLC_PS_ROOT_URI"), std::string::npos);
  vars = base();
  vars["DMLC_INTERFACE"] = "no-such-if0";
  EXPECT_NE(error_text(vars).find("DMLC_INTERFACE"), std::string::npos);
  vars = base();
  vars["DMLC_PS_ROOT_PORT"] = "0";  // only the scheduler may pick a port
  EXPECT_NE(error_text(vars).find("DMLC_PS_ROOT_PORT"), std::string::npos);
}

TEST(PsJobConfig, InterfaceAndHostOverrides) {
  auto vars = base();
  vars["DMLC_INTERFACE"] = "lo";
  EXPECT_EQ(job_config_from(env_of(vars)).node_host, "127.0.0.1");
  vars["DMLC_NODE_HOST"] = "node7.example";
  EXPECT_EQ(job_config_from(env_of(vars)).node_host, "node7.example");
}

TEST(PsJobConfig, UrlOverrideAndPortFile) {
  auto vars = base();
  vars.erase("DMLC_PS_ROOT_URI");
  vars.erase("DMLC_PS_ROOT_PORT");
  vars["DT_PS_ROOT_URL"] = "inproc://sched";
  vars["DMLC_ROLE"] = "scheduler";
  vars["DT_PS_PORT_FILE"] = "/tmp/port";
  const JobConfig job = job_config_from(env_of(vars));
  EXPECT_EQ(job.role, Role::kScheduler);
  EXPECT_EQ(job.root_url, "inproc://sched");
  EXPECT_EQ(job.scheduler_listen_url, "inproc://sched");
  EXPECT_EQ(job.port_file, "/tmp/port");
}

TEST(PsJobConfig, RoleDefaultsToWorker) {
  EXPECT_EQ(role_from(env_of({})), Role::kWorker);
  EXPECT_EQ(role_from(env_of({{"DMLC_ROLE", "server"}})), Role::kServer);
}

TEST(PsOptions, ValidateNamesTheField) {
  PsOptions o;
  EXPECT_NO_THROW(o.validate());
  o.heartbeat_timeout_s = 0.5;  // below the 1 s interval
  try {
    o.validate();
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("heartbeat_timeout_s"), std::string::npos);
  }
  o = PsOptions{};
  o.startup_timeout_s = -1;
  EXPECT_THROW(o.validate(), Error);
}

}  // namespace
}  // namespace dt::ps
