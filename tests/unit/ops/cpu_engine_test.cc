#include "ops/cpu/cpu_engine.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <cstdlib>
#include <stdexcept>
#include <string>

extern "C" int openblas_get_num_threads(void);

namespace dt::ops::cpu {
namespace {

TEST(CpuEngineTest, ExplicitThreadCountSetsBothPools) {
  CpuEngine engine(1);
  EXPECT_EQ(engine.num_threads(), 1);
  EXPECT_EQ(omp_get_max_threads(), 1);
  EXPECT_EQ(openblas_get_num_threads(), 1);
  EXPECT_EQ(engine.engine().get_kind(), dnnl::engine::kind::cpu);
}

TEST(CpuEngineTest, ZeroReadsOmpNumThreads) {
  const char* saved = std::getenv("OMP_NUM_THREADS");
  const std::string restore = saved ? saved : "";
  setenv("OMP_NUM_THREADS", "3,1", 1);
  {
    CpuEngine engine(0);
    EXPECT_EQ(engine.num_threads(), 3);
    EXPECT_EQ(omp_get_max_threads(), 3);
  }
  unsetenv("OMP_NUM_THREADS");
  {
    CpuEngine engine(0);
    EXPECT_GE(engine.num_threads(), 1);
  }
  if (saved) setenv("OMP_NUM_THREADS", restore.c_str(), 1);
}

TEST(CpuEngineTest, RejectsNegativeThreads) {
  EXPECT_THROW(CpuEngine(-1), std::invalid_argument);
}

}  // namespace
}  // namespace dt::ops::cpu
