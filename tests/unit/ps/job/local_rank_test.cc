// A worker's place among the workers of its host, from whichever launcher
// started it (ps/job/local_rank.h).
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "core/error.h"
#include "ps/job/local_rank.h"
#include "unit/ps/job/env_of.h"

namespace dt::ps {
namespace {

std::pair<int, int> place(const std::map<std::string, std::string>& vars) {
  const LocalRank local = local_rank_from(env_of(vars));
  return {local.rank, local.size};
}

std::string error_of(const std::map<std::string, std::string>& vars) {
  try {
    local_rank_from(env_of(vars));
  } catch (const core::Error& e) {
    EXPECT_EQ(e.code(), core::ErrorCode::kInvalidArgument);
    return e.what();
  }
  return "no error";
}

TEST(LocalRank, NothingSetIsTheOnlyProcessOfItsHost) { EXPECT_EQ(place({}), std::make_pair(0, 1)); }

TEST(LocalRank, EachLaunchersVariablesAndDtrunsFirst) {
  EXPECT_EQ(place({{"DT_LOCAL_RANK", "1"}, {"DT_LOCAL_SIZE", "2"}}), std::make_pair(1, 2));
  EXPECT_EQ(place({{"LOCAL_RANK", "3"}, {"LOCAL_WORLD_SIZE", "4"}}), std::make_pair(3, 4));  // torchrun
  EXPECT_EQ(place({{"OMPI_COMM_WORLD_LOCAL_RANK", "2"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "8"}}), std::make_pair(2, 8));
  EXPECT_EQ(place({{"MPI_LOCALRANKID", "0"}, {"MPI_LOCALNRANKS", "2"}}), std::make_pair(0, 2));  // MPICH
  EXPECT_EQ(place({{"SLURM_LOCALID", "5"}}), std::make_pair(5, 0));  // srun says no count
  // dtrun's own wins over what an outer launcher left in the environment.
  EXPECT_EQ(place({{"DT_LOCAL_RANK", "0"}, {"DT_LOCAL_SIZE", "1"}, {"SLURM_LOCALID", "3"}}), std::make_pair(0, 1));
  // An empty value is not set.
  EXPECT_EQ(place({{"DT_LOCAL_RANK", ""}, {"LOCAL_RANK", "1"}, {"LOCAL_WORLD_SIZE", "2"}}), std::make_pair(1, 2));
}

TEST(LocalRank, MalformedValuesNameTheVariable) {
  EXPECT_NE(error_of({{"DT_LOCAL_RANK", "-1"}}).find("DT_LOCAL_RANK=\"-1\""), std::string::npos);
  EXPECT_NE(error_of({{"LOCAL_RANK", "one"}}).find("LOCAL_RANK=\"one\""), std::string::npos);
  EXPECT_NE(error_of({{"DT_LOCAL_RANK", "0"}, {"DT_LOCAL_SIZE", "0"}}).find("DT_LOCAL_SIZE"), std::string::npos);
  EXPECT_NE(error_of({{"DT_LOCAL_RANK", "2"}, {"DT_LOCAL_SIZE", "2"}}).find("not below DT_LOCAL_SIZE=2"),
            std::string::npos);
}

}  // namespace
}  // namespace dt::ps
