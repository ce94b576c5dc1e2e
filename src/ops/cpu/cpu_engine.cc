#include "ops/cpu/cpu_engine.h"

#include <omp.h>
#include <sched.h>

#include <cstdlib>
#include <stdexcept>
#include <string>
#include <thread>

#include "core/parameter_table.h"

// Declared here rather than through <cblas.h>: depending on the BLAS
// alternative selected, that header may be netlib's, which lacks it.
extern "C" void openblas_set_num_threads(int num_threads);

namespace dt::ops::cpu {
namespace {

// OMP_NUM_THREADS may be a nesting list ("4,2"); the outer level is the one
// the kernels parallelise over.
int threads_from_environment() {
  const char* env = core::read_parameter("OMP_NUM_THREADS");
  if (env == nullptr) return 0;
  char* end = nullptr;
  const long value = std::strtol(env, &end, 10);
  if (end == env || value <= 0 || value > 4096) return 0;
  return static_cast<int>(value);
}

// hardware_concurrency counts every CPU of the machine; a container or a
// taskset may allow fewer, and more threads than allowed CPUs only thrash.
int usable_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    const int count = CPU_COUNT(&set);
    if (count > 0) return count;
  }
  const unsigned hw = std::thread::hardware_concurrency();
  return hw > 0 ? static_cast<int>(hw) : 1;
}

int resolve_threads(int requested) {
  if (requested < 0) {
    throw std::invalid_argument("CpuEngine: num_threads must be >= 0, got " +
                                std::to_string(requested));
  }
  if (requested > 0) return requested;
  const int from_env = threads_from_environment();
  return from_env > 0 ? from_env : usable_cpus();
}

}  // namespace

CpuEngine::CpuEngine(int num_threads)
    : num_threads_(resolve_threads(num_threads)),
      engine_(dnnl::engine::kind::cpu, 0),
      stream_(engine_) {
  bind_current_thread();
  openblas_set_num_threads(num_threads_);
}

void CpuEngine::bind_current_thread() const { omp_set_num_threads(num_threads_); }

}  // namespace dt::ops::cpu
