#pragma once

#include <oneapi/dnnl/dnnl.hpp>

namespace dt::ops::cpu {

// The oneDNN CPU engine and in-order stream every CPU kernel executes on, and
// the size of the worker pools behind them.
//
// Global state: oneDNN (built on OpenMP here) and OpenBLAS each run their own
// thread pool, and neither offers a per-object setting. The constructor
// therefore sets OpenMP's thread count for the constructing thread
// (omp_set_num_threads is a per-thread ICV) and OpenBLAS's for the whole
// process (openblas_set_num_threads), to the same value, so the two pools
// never ask for more cores than num_threads() between them in sequence.
// A different thread that will run kernels calls bind_current_thread().
// Nothing else in this file is global.
//
// Kernels copy the engine and stream handles (oneDNN reference-counts them),
// so a kernel may outlive the CpuEngine it was built from. A stream is not
// meant for concurrent use: run kernels of one CpuEngine from one thread at a
// time.
class CpuEngine {
 public:
  // num_threads == 0: the first value of OMP_NUM_THREADS if it is a positive
  // integer, else the number of CPUs this process may run on.
  explicit CpuEngine(int num_threads = 0);

  CpuEngine(const CpuEngine&) = delete;
  CpuEngine& operator=(const CpuEngine&) = delete;

  const dnnl::engine& engine() const { return engine_; }
  const dnnl::stream& stream() const { return stream_; }
  int num_threads() const { return num_threads_; }

  // Applies num_threads() to OpenMP for the calling thread.
  void bind_current_thread() const;

 private:
  int num_threads_;
  dnnl::engine engine_;
  dnnl::stream stream_;
};

}  // namespace dt::ops::cpu
