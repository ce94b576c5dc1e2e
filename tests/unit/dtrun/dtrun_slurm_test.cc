#include <gtest/gtest.h>

#include "slurm_launcher.h"

namespace dt::dtrun {
namespace {

TEST(DtrunSlurm, SrunRunsServersAndWorkersAsOneMultiProgStep) {
  const Options o = parse_options({"-n", "4", "-s", "2", "--", "./train", "--epochs", "1"});
  EXPECT_EQ(srun_argv(o, "/tmp/d/srun.multi-prog"),
            (std::vector<std::string>{"srun", "--ntasks=6", "--kill-on-bad-exit=1", "--label", "--multi-prog",
                                      "/tmp/d/srun.multi-prog"}));
  EXPECT_EQ(multi_prog_text({}, o, "/opt/dt/bin/dt-node"),
            "0-1 env DMLC_ROLE=server /opt/dt/bin/dt-node\n"
            "2-5 env DMLC_ROLE=worker DMLC_WORKER_ID=%o ./train --epochs 1\n");
}

TEST(DtrunSlurm, RoleSettingsGoOnTheirLinesAndSingleTasksHaveNoRange) {
  const Options o = parse_options({"-n", "1", "-s", "1", "--env", "ALL=1", "--env-server", "S=2", "--env-worker",
                                   "HOME", "--", "w"});
  EXPECT_EQ(multi_prog_text({{"HOME", "/home/u"}}, o, "dt-node"),
            "0 env DMLC_ROLE=server S=2 dt-node\n"
            "1 env DMLC_ROLE=worker DMLC_WORKER_ID=%o HOME=/home/u w\n");
}

TEST(DtrunSlurm, ArgumentsTheFileCannotCarryAreRefused) {
  for (const char* bad : {"a b", "it's", "100%", "back\\slash", ""}) {
    const Options o = parse_options({"-n", "1", "--", "w", bad});
    EXPECT_THROW(multi_prog_text({}, o, "dt-node"), UsageError) << bad;
  }
}

}  // namespace
}  // namespace dt::dtrun
