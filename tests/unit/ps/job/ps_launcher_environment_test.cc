// Every launcher's variables, and their order: explicit options > DMLC_* >
// MX_CONFIG > RANK/WORLD_SIZE > OMPI_COMM_WORLD_* > PMI_* > SLURM_*.
#include <gtest/gtest.h>

#include <map>

#include "core/error.h"
#include "ps/job/job_config.h"
#include "ps/job/launcher_environment.h"
#include "unit/ps/job/env_of.h"

namespace dt::ps {
namespace {

using core::Error;
using core::ErrorCode;
using Vars = std::map<std::string, std::string>;

std::string error_text(const Vars& vars, const JobOverrides& overrides = {}) {
  try {
    job_config_from(env_of(vars), overrides);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    return e.what();
  }
  return "accepted";
}

const std::string kMxWorker1 =
    R"({"cluster":{"scheduler":[{"url":"127.0.0.1","port":9091}],)"
    R"("server":[{"url":"mx-server-0","port":9091}],)"
    R"("worker":[{"url":"mx-worker-0","port":9091},{"url":"mx-worker-1","port":9091}]},)"
    R"("labels":{"scheduler":"","server":"","worker":""},"task":{"type":"worker","index":1}})";

TEST(PsLauncherEnvironment, MxConfigGivesRoleCountsAndScheduler) {
  const JobConfig job = job_config_from(env_of({{"MX_CONFIG", kMxWorker1}}));
  EXPECT_EQ(job.role, Role::kWorker);
  EXPECT_EQ(job.worker_id, 1);
  EXPECT_EQ(job.num_servers, 1);
  EXPECT_EQ(job.num_workers, 2);
  EXPECT_EQ(job.root_url, "tcp://127.0.0.1:9091");
  EXPECT_EQ(job.layout_summary, "job layout from MX_CONFIG: worker 1");

  std::string server = kMxWorker1;
  const std::string task = R"("type":"worker","index":1)";
  server.replace(server.find(task), task.size(), R"("type":"server","index":0)");
  const LauncherLayout layout = resolve_launcher_layout(env_of({{"MX_CONFIG", server}}));
  EXPECT_EQ(layout.role, Role::kServer);
  EXPECT_FALSE(layout.worker_id);
}

TEST(PsLauncherEnvironment, MalformedMxConfigNamesTheVariable) {
  const std::string valid = kMxWorker1;
  const auto with = [&](const std::string& from, const std::string& to) {
    std::string s = valid;
    const size_t at = s.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return s.replace(at, from.size(), to);
  };
  for (const std::string& bad :
       {std::string("{not json"), std::string("[1,2]"), std::string(R"({"cluster":{}})"),
        with(R"("type":"worker")", R"("type":"tuner")"), with(R"("type":"worker")", R"("type":3)"),
        with(R"("index":1)", R"("index":2)"), with(R"("index":1)", R"("index":-1)"),
        with(R"("index":1)", R"("index":"1")"), with(R"("port":9091}],"server")", R"("port":"x"}],"server")"),
        with(R"([{"url":"127.0.0.1","port":9091}])", "[]"), with(R"("url":"127.0.0.1")", R"("url":"")"),
        with(R"("server":[{"url":"mx-server-0","port":9091}])", R"("server":{})")}) {
    const std::string text = error_text({{"MX_CONFIG", bad}});
    EXPECT_EQ(text.rfind("MX_CONFIG", 0), 0u) << bad << "\n -> " << text;
  }
}

TEST(PsLauncherEnvironment, TorchStyleRankWithMasterAddress) {
  const JobConfig job = job_config_from(env_of(
      {{"RANK", "2"}, {"WORLD_SIZE", "4"}, {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", "29500"}}));
  // No counts given: S = 4 / 2 = 2 servers (ranks 0, 1), workers 0, 1 on ranks 2, 3.
  EXPECT_EQ(job.role, Role::kWorker);
  EXPECT_EQ(job.worker_id, 0);
  EXPECT_EQ(job.num_servers, 2);
  EXPECT_EQ(job.num_workers, 2);
  EXPECT_EQ(job.root_url, "tcp://127.0.0.1:29500");
  EXPECT_EQ(job.layout_summary, "job layout from RANK/WORLD_SIZE (rank 2 of 4, 2 servers + 2 workers): worker 0");
}

TEST(PsLauncherEnvironment, OpenMpiRanksFollowTheRankRule) {
  const Vars base = {{"OMPI_COMM_WORLD_SIZE", "4"}, {"DMLC_NUM_SERVER", "1"}, {"DMLC_PS_ROOT_URI", "127.0.0.1"},
                     {"DMLC_PS_ROOT_PORT", "9000"}};
  for (int rank = 0; rank < 4; ++rank) {
    Vars vars = base;
    vars["OMPI_COMM_WORLD_RANK"] = std::to_string(rank);
    const JobConfig job = job_config_from(env_of(vars));
    EXPECT_EQ(job.num_servers, 1);
    EXPECT_EQ(job.num_workers, 3);
    if (rank == 0) {
      EXPECT_EQ(job.role, Role::kServer);
      EXPECT_EQ(job.worker_id, -1);
    } else {
      EXPECT_EQ(job.role, Role::kWorker);
      EXPECT_EQ(job.worker_id, rank - 1);
    }
  }
  Vars vars = base;
  vars["OMPI_COMM_WORLD_RANK"] = "3";
  EXPECT_EQ(job_config_from(env_of(vars)).layout_summary,
            "job layout from OMPI_COMM_WORLD_* (rank 3 of 4, 1 server + 3 workers): worker 2");
  vars["OMPI_COMM_WORLD_RANK"] = "0";
  EXPECT_EQ(job_config_from(env_of(vars)).layout_summary,
            "job layout from OMPI_COMM_WORLD_* (rank 0 of 4, 1 server + 3 workers): server 0");
}

TEST(PsLauncherEnvironment, RankRuleCounts) {
  const auto layout = [](Vars vars) {
    vars["PMI_RANK"] = "0";
    return resolve_launcher_layout(env_of(vars));
  };
  LauncherLayout l = layout({{"PMI_SIZE", "5"}});  // default: S = 5 / 2
  EXPECT_EQ(l.num_servers->value, 2);
  EXPECT_EQ(l.num_workers->value, 3);
  l = layout({{"PMI_SIZE", "5"}, {"DT_NUM_SERVER", "1"}});
  EXPECT_EQ(l.num_servers->value, 1);
  EXPECT_EQ(l.num_workers->value, 4);
  l = layout({{"PMI_SIZE", "5"}, {"DMLC_NUM_WORKER", "2"}});
  EXPECT_EQ(l.num_servers->value, 3);
  EXPECT_EQ(l.num_workers->value, 2);
  l = layout({{"PMI_SIZE", "5"}, {"DMLC_NUM_SERVER", "3"}, {"DT_NUM_SERVER", "1"}});  // DMLC_* first
  EXPECT_EQ(l.num_servers->value, 3);
  EXPECT_EQ(l.source, LayoutSource::kPmi);
  // Explicit counts beat DMLC_*.
  JobOverrides o;
  o.num_servers = 4;
  l = resolve_launcher_layout(env_of({{"PMI_RANK", "3"}, {"PMI_SIZE", "5"}, {"DMLC_NUM_SERVER", "1"}}), o);
  EXPECT_EQ(l.role, Role::kServer);
  EXPECT_EQ(l.num_workers->value, 1);
}

TEST(PsLauncherEnvironment, RankCountsThatDoNotFitNameTheVariables) {
  const Vars root = {{"DMLC_PS_ROOT_URI", "127.0.0.1"}, {"DMLC_PS_ROOT_PORT", "9000"}};
  const auto err = [&](Vars vars) {
    vars.insert(root.begin(), root.end());
    return error_text(vars);
  };
  std::string e = err({{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "4"}, {"DMLC_NUM_SERVER", "1"},
                       {"DMLC_NUM_WORKER", "2"}});
  EXPECT_NE(e.find("OMPI_COMM_WORLD_SIZE=4"), std::string::npos) << e;
  EXPECT_NE(e.find("DMLC_NUM_SERVER"), std::string::npos) << e;
  e = err({{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "2"}, {"DT_NUM_SERVER", "2"}});
  EXPECT_NE(e.find("no rank for a worker"), std::string::npos) << e;
  e = err({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "1"}});
  EXPECT_NE(e.find("SLURM_NTASKS=1"), std::string::npos) << e;
  e = err({{"RANK", "4"}, {"WORLD_SIZE", "4"}});
  EXPECT_NE(e.find("RANK=\"4\""), std::string::npos) << e;
  e = err({{"RANK", "0"}});
  EXPECT_NE(e.find("WORLD_SIZE is not set"), std::string::npos) << e;
  e = err({{"PMI_RANK", "x"}, {"PMI_SIZE", "2"}});
  EXPECT_NE(e.find("PMI_RANK"), std::string::npos) << e;
  e = err({{"PMI_RANK", "0"}, {"PMI_SIZE", "2"}, {"DT_NUM_SERVER", "zero"}});
  EXPECT_NE(e.find("DT_NUM_SERVER"), std::string::npos) << e;
}

TEST(PsLauncherEnvironment, SlurmSchedulerOnTheFirstHostOfTheAllocation) {
  Vars vars = {{"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "2"}, {"SLURM_JOB_NODELIST", "localhost,node[2-3]"},
               {"DMLC_PS_ROOT_PORT", "9100"}};
  const JobConfig job = job_config_from(env_of(vars));
  EXPECT_EQ(job.role, Role::kWorker);
  EXPECT_EQ(job.worker_id, 0);
  EXPECT_EQ(job.root_url.rfind("tcp://127.", 0), 0u) << job.root_url;
  EXPECT_EQ(resolve_launcher_layout(env_of(vars)).root_uri->variable, "SLURM_JOB_NODELIST (first host)");
  vars["SLURM_JOB_NODELIST"] = "node[3-1]";
  const std::string e = error_text(vars);
  EXPECT_EQ(e.rfind("SLURM_JOB_NODELIST", 0), 0u) << e;
  // Without a port from any source the error names DMLC_PS_ROOT_PORT.
  vars["SLURM_JOB_NODELIST"] = "localhost";
  vars.erase("DMLC_PS_ROOT_PORT");
  EXPECT_NE(error_text(vars).find("DMLC_PS_ROOT_PORT is not set"), std::string::npos);
}

TEST(PsLauncherEnvironment, PrecedenceOfTheRoleSources) {
  // Each source alone names a different role or worker id, so the winner shows.
  const Vars dmlc = {{"DMLC_ROLE", "server"}};
  const Vars mx = {{"MX_CONFIG", kMxWorker1}};
  const Vars torch = {{"RANK", "3"}, {"WORLD_SIZE", "4"}};               // worker 1 of 2+2
  const Vars ompi = {{"OMPI_COMM_WORLD_RANK", "2"}, {"OMPI_COMM_WORLD_SIZE", "4"}};  // worker 0
  const Vars pmi = {{"PMI_RANK", "0"}, {"PMI_SIZE", "4"}};              // server
  const Vars slurm = {{"SLURM_PROCID", "3"}, {"SLURM_NTASKS", "6"}};    // worker 0 of 3+3
  const std::vector<std::pair<LayoutSource, Vars>> order = {{LayoutSource::kDmlc, dmlc}, {LayoutSource::kMxConfig, mx},
                                                           {LayoutSource::kTorch, torch}, {LayoutSource::kOpenMpi, ompi},
                                                           {LayoutSource::kPmi, pmi}, {LayoutSource::kSlurm, slurm}};
  for (size_t first = 0; first < order.size(); ++first) {
    Vars all;
    for (size_t i = first; i < order.size(); ++i) all.insert(order[i].second.begin(), order[i].second.end());
    const LauncherLayout together = resolve_launcher_layout(env_of(all));
    const LauncherLayout alone = resolve_launcher_layout(env_of(order[first].second));
    EXPECT_EQ(together.source, order[first].first) << first;
    EXPECT_EQ(together.role, alone.role) << first;
    EXPECT_EQ(together.worker_id.has_value(), alone.worker_id.has_value()) << first;
    if (together.worker_id && alone.worker_id) EXPECT_EQ(together.worker_id->value, alone.worker_id->value);
    EXPECT_EQ(together.rank, alone.rank) << first;
  }
  // Explicit options beat them all.
  Vars all;
  for (const auto& [source, vars] : order) all.insert(vars.begin(), vars.end());
  JobOverrides o;
  o.role = Role::kScheduler;
  EXPECT_EQ(resolve_launcher_layout(env_of(all), o).source, LayoutSource::kExplicit);
  EXPECT_EQ(resolve_launcher_layout(env_of(all), o).role, Role::kScheduler);
  // Nothing at all: a worker, as in MXNet.
  EXPECT_EQ(resolve_launcher_layout(env_of({})).source, LayoutSource::kDmlc);
  EXPECT_EQ(resolve_launcher_layout(env_of({})).role, Role::kWorker);
}

TEST(PsLauncherEnvironment, DmlcWorkerIdHonouredAndValuesTakenPerField) {
  // DMLC_ROLE wins the role; counts and address fall through to MX_CONFIG.
  Vars vars = {{"DMLC_ROLE", "worker"}, {"DMLC_WORKER_ID", "0"}, {"MX_CONFIG", kMxWorker1}};
  JobConfig job = job_config_from(env_of(vars));
  EXPECT_EQ(job.worker_id, 0);
  EXPECT_EQ(job.num_workers, 2);
  EXPECT_EQ(job.root_url, "tcp://127.0.0.1:9091");
  EXPECT_EQ(job.layout_summary, "job layout from DMLC_*: worker 0");
  // DMLC_PS_ROOT_PORT beats MX_CONFIG's port; DMLC_WORKER_ID counts without DMLC_ROLE too.
  vars = {{"DMLC_WORKER_ID", "1"}, {"DMLC_NUM_SERVER", "1"}, {"DMLC_NUM_WORKER", "2"},
          {"DMLC_PS_ROOT_URI", "127.0.0.1"}, {"DMLC_PS_ROOT_PORT", "9300"}, {"MASTER_PORT", "1"}};
  job = job_config_from(env_of(vars));
  EXPECT_EQ(job.worker_id, 1);
  EXPECT_EQ(job.root_url, "tcp://127.0.0.1:9300");
  // A stale, malformed MX_CONFIG is not read when DMLC_* has everything...
  vars["DMLC_ROLE"] = "worker";
  vars["MX_CONFIG"] = "{broken";
  EXPECT_NO_THROW(job_config_from(env_of(vars)));
  // ...but without DMLC_ROLE it is the source of the role, and is refused.
  vars.erase("DMLC_ROLE");
  EXPECT_EQ(error_text(vars).rfind("MX_CONFIG", 0), 0u);
}

TEST(PsLauncherEnvironment, ExplicitOptionsBeatTheEnvironment) {
  JobOverrides o;
  o.role = Role::kWorker;
  o.worker_id = 1;
  o.num_servers = 3;
  o.num_workers = 2;
  o.root_uri = "127.0.0.1";
  o.root_port = 9500;
  const JobConfig job = job_config_from(
      env_of({{"DMLC_ROLE", "server"}, {"DMLC_NUM_SERVER", "1"}, {"DMLC_NUM_WORKER", "1"},
              {"DMLC_PS_ROOT_URI", "no-such-host.invalid"}, {"DMLC_PS_ROOT_PORT", "9091"}}),
      o);
  EXPECT_EQ(job.role, Role::kWorker);
  EXPECT_EQ(job.worker_id, 1);
  EXPECT_EQ(job.num_servers, 3);
  EXPECT_EQ(job.root_url, "tcp://127.0.0.1:9500");
  EXPECT_EQ(job.layout_summary, "job layout from explicit options: worker 1");
  o.worker_id = 2;  // 2 workers: ids 0..1
  EXPECT_NE(error_text({}, o).find("explicit option worker_id"), std::string::npos);
}

}  // namespace
}  // namespace dt::ps
