#include <gtest/gtest.h>

#include "environment.h"

namespace dt::dtrun {
namespace {

JobLayout layout() {
  JobLayout l;
  l.root_uri = "127.0.0.1";
  l.root_port = 40123;
  l.num_servers = 2;
  l.num_workers = 3;
  l.port_file = "/tmp/x/scheduler.port";
  return l;
}

TEST(DtrunEnvironment, EachRoleGetsTheLayoutAndItsOwnVariables) {
  const EnvMap inherited{{"PATH", "/bin"},
                         {"DMLC_WORKER_ID", "9"},
                         {"DT_PS_ROOT_URL", "inproc://old"},
                         {"DT_RESTART_COUNT", "7"}};
  const Options o = parse_options({"-n", "3", "-s", "2", "--", "w"});
  const EnvMap worker = child_environment(inherited, o, layout(), Role::kWorker, 2);
  EXPECT_EQ(worker.at("PATH"), "/bin");
  EXPECT_EQ(worker.at("DMLC_ROLE"), "worker");
  EXPECT_EQ(worker.at("DMLC_WORKER_ID"), "2");
  EXPECT_EQ(worker.at("DMLC_PS_ROOT_URI"), "127.0.0.1");
  EXPECT_EQ(worker.at("DMLC_PS_ROOT_PORT"), "40123");
  EXPECT_EQ(worker.at("DMLC_NUM_SERVER"), "2");
  EXPECT_EQ(worker.at("DMLC_NUM_WORKER"), "3");
  EXPECT_EQ(worker.count("DT_PS_PORT_FILE"), 0u);
  EXPECT_EQ(worker.count("DT_PS_ROOT_URL"), 0u);  // a stale one would bypass the layout
  EXPECT_EQ(worker.at("DT_RESTART_COUNT"), "0");    // this job's first run, not the shell's
  // Every worker runs on this host: its local place is its rank among them.
  EXPECT_EQ(worker.at("DT_LOCAL_RANK"), "2");
  EXPECT_EQ(worker.at("DT_LOCAL_SIZE"), "3");
  EXPECT_EQ(worker.at("LOCAL_RANK"), "2");
  EXPECT_EQ(worker.at("LOCAL_WORLD_SIZE"), "3");
  const EnvMap placed = child_environment(inherited, o, layout(), Role::kWorker, 2, LocalPlace{1, 2});
  EXPECT_EQ(placed.at("DT_LOCAL_RANK"), "1");
  EXPECT_EQ(placed.at("LOCAL_WORLD_SIZE"), "2");
  JobLayout restarted = layout();
  restarted.restart_count = 2;
  EXPECT_EQ(child_environment(inherited, o, restarted, Role::kServer, 0).at("DT_RESTART_COUNT"), "2");

  const EnvMap server = child_environment(inherited, o, layout(), Role::kServer, 1);
  EXPECT_EQ(server.at("DMLC_ROLE"), "server");
  EXPECT_EQ(server.count("DMLC_WORKER_ID"), 0u);  // inherited one dropped
  EXPECT_EQ(server.count("DT_LOCAL_RANK"), 0u);   // a worker's GPU, not a server's
  EXPECT_EQ(server.count("LOCAL_RANK"), 0u);

  const EnvMap scheduler = child_environment(inherited, o, layout(), Role::kScheduler, -1);
  EXPECT_EQ(scheduler.at("DMLC_ROLE"), "scheduler");
  EXPECT_EQ(scheduler.at("DMLC_PS_ROOT_PORT"), "0");  // binds a free port itself
  EXPECT_EQ(scheduler.at("DT_PS_PORT_FILE"), "/tmp/x/scheduler.port");
}

TEST(DtrunEnvironment, UserSettingsOverrideInheritedAndRoleSettingsOverrideCommonOnes) {
  const EnvMap inherited{{"A", "inherited"}, {"B", "inherited"}, {"PASS", "from-shell"}};
  const Options o = parse_options({"-n", "1", "--env", "A=all", "--env", "C=all", "--env", "PASS", "--env",
                                   "UNSET_HERE", "--env-worker", "C=worker", "--env-server", "A=server", "--",
                                   "w"});
  const EnvMap worker = child_environment(inherited, o, layout(), Role::kWorker, 0);
  EXPECT_EQ(worker.at("A"), "all");
  EXPECT_EQ(worker.at("B"), "inherited");
  EXPECT_EQ(worker.at("C"), "worker");
  EXPECT_EQ(worker.at("PASS"), "from-shell");
  EXPECT_EQ(worker.count("UNSET_HERE"), 0u);
  const EnvMap server = child_environment(inherited, o, layout(), Role::kServer, 0);
  EXPECT_EQ(server.at("A"), "server");
  EXPECT_EQ(server.at("C"), "all");
  const EnvMap scheduler = child_environment(inherited, o, layout(), Role::kScheduler, -1);
  EXPECT_EQ(scheduler.at("A"), "server");  // --env-server: every dt-node process
}

TEST(DtrunEnvironment, OpenMpWaitsPassivelyUnlessTheUserChose) {
  const Options plain = parse_options({"-n", "1", "--", "w"});
  EXPECT_EQ(child_environment({}, plain, layout(), Role::kWorker, 0).at("OMP_WAIT_POLICY"), "passive");
  EXPECT_EQ(child_environment({{"OMP_WAIT_POLICY", "active"}}, plain, layout(), Role::kWorker, 0).at("OMP_WAIT_POLICY"),
            "active");
  const Options chosen = parse_options({"-n", "1", "--env-worker", "OMP_WAIT_POLICY=active", "--", "w"});
  EXPECT_EQ(child_environment({}, chosen, layout(), Role::kWorker, 0).at("OMP_WAIT_POLICY"), "active");
  EXPECT_EQ(child_environment({}, chosen, layout(), Role::kServer, 0).at("OMP_WAIT_POLICY"), "passive");
}

TEST(DtrunEnvironment, InterfaceAndLauncherEnvironment) {
  const Options o = parse_options({"-n", "2", "--env", "A=1", "--env-worker", "W=1", "--", "w"});
  JobLayout l = layout();
  l.interface = "eth1";
  const EnvMap env = launcher_environment({{"DMLC_ROLE", "worker"}}, o, l);
  EXPECT_EQ(env.at("DMLC_INTERFACE"), "eth1");
  EXPECT_EQ(env.at("A"), "1");
  EXPECT_EQ(env.count("W"), 0u);  // per task, on srun's lines
  EXPECT_EQ(env.count("DMLC_ROLE"), 0u);
  EXPECT_EQ(env.at("DMLC_PS_ROOT_PORT"), "40123");
  EXPECT_EQ(to_envp({{"A", "1"}, {"B", "x=y"}}), (std::vector<std::string>{"A=1", "B=x=y"}));
}

}  // namespace
}  // namespace dt::dtrun
