#include <gtest/gtest.h>

#include <algorithm>

#include "mpi_launcher.h"

namespace dt::dtrun {
namespace {

using Words = std::vector<std::string>;

JobLayout layout_of(const Options& o, const std::string& interface = "") {
  JobLayout layout;
  layout.root_uri = "127.0.0.1";
  layout.root_port = 40000;
  layout.num_servers = o.num_servers;
  layout.num_workers = o.num_workers;
  layout.interface = interface;
  return layout;
}

TEST(DtrunMpi, OneMpirunRunsEveryRankThroughDtNode) {
  const Options o = parse_options({"--launcher", "mpi", "-n", "2", "-s", "1", "--", "./train", "--epochs", "1"});
  EXPECT_EQ(o.launcher, Launcher::kMpi);
  EXPECT_EQ(mpirun_argv({}, o, layout_of(o), "/opt/dt/bin/dt-node", false),
            (Words{"mpirun", "--oversubscribe", "--tag-output", "-np", "3",
                   "-x", "DMLC_NUM_SERVER", "-x", "DMLC_NUM_WORKER", "-x", "DMLC_PS_ROOT_PORT",
                   "-x", "DMLC_PS_ROOT_URI", "-x", "DTRUN_DIE_WITH_LAUNCHER", "-x", "DT_RESTART_COUNT",
                   "-x", "OMP_WAIT_POLICY", "/opt/dt/bin/dt-node", "--", "./train", "--epochs", "1"}));
}

TEST(DtrunMpi, RootHostfileInterfaceAndEnvironment) {
  const Options o = parse_options({"--launcher", "mpi", "-n", "3", "-H", "/tmp/hosts", "--interface", "eth1",
                                   "--env", "A=1", "--env", "HOME", "--env", "UNSET_HERE", "--env-server", "S=2",
                                   "--env-worker", "W:x y", "--", "w"});
  // -s defaults to -n: 6 ranks. Values of --env travel in mpirun's own
  // environment, forwarded by name; role settings go to dt-node.
  EXPECT_EQ(mpirun_argv({{"HOME", "/home/u"}}, o, layout_of(o, "eth1"), "dt-node", true),
            (Words{"mpirun", "--allow-run-as-root", "--hostfile", "/tmp/hosts", "--tag-output", "-np", "6",
                   "-x", "A", "-x", "DMLC_INTERFACE", "-x", "DMLC_NUM_SERVER", "-x", "DMLC_NUM_WORKER",
                   "-x", "DMLC_PS_ROOT_PORT", "-x", "DMLC_PS_ROOT_URI", "-x", "DTRUN_DIE_WITH_LAUNCHER",
                   "-x", "DT_RESTART_COUNT", "-x", "HOME", "-x", "OMP_WAIT_POLICY",
                   "dt-node", "--env-server", "S=2", "--env-worker", "W=x y", "--", "w"}));
}

TEST(DtrunMpi, ForwardedNamesCoverTheRanksEnvironment) {
  const Options o = parse_options({"--launcher", "mpi", "-n", "1", "--env", "B=2", "--env-worker", "ONLY_W=1",
                                   "--", "w"});
  const JobLayout layout = layout_of(o);
  const Words names = mpirun_forwarded_names({}, o, layout);
  // Every variable the ranks need from mpirun's environment is forwarded,
  // and the per-role ones are not (they would reach the other role too).
  const EnvMap env = launcher_environment({}, o, layout);
  for (const auto& [name, value] : env) {
    EXPECT_NE(std::find(names.begin(), names.end(), name), names.end()) << name;
  }
  EXPECT_EQ(std::find(names.begin(), names.end(), "ONLY_W"), names.end());
  EXPECT_EQ(std::find(names.begin(), names.end(), "DMLC_ROLE"), names.end());
}

TEST(DtrunMpi, LauncherNameIsChecked) {
  EXPECT_THROW(parse_options({"--launcher", "mpich", "-n", "1", "--", "w"}), UsageError);
  try {
    parse_options({"--launcher", "openmpi", "-n", "1", "--", "w"});
    FAIL() << "accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("mpi"), std::string::npos);
  }
}

}  // namespace
}  // namespace dt::dtrun
