/*
 * The allocator's memory statistics on a GPU context: block sizes as the
 * caching allocator rounds them, freed blocks counted as cached until they
 * are reused, the peak and its reset. capi_context_test checks the CPU's.
 * Exits 77 (CTest SKIP_RETURN_CODE) when no GPU is visible.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "capi_check.h"

#define KIB ((size_t)1024)
#define MIB (KIB * KIB)

int main(void) {
  const int skip = capi_gpu_skip_code();
  dt_context *gpu = NULL;
  dt_context *gpu_too = NULL;
  dt_ndarray *small = NULL;
  dt_ndarray *big = NULL;
  const int64_t small_dims[1] = {1000};          /* 4000 bytes: a 4 KiB block */
  const int64_t big_dims[1] = {3 * 256 * 1024};  /* 3 MiB: a 4 MiB block */

  if (skip != 0) return skip;
  if (!CHECK_OK(dt_context_create(&gpu, DT_DEVICE_GPU, 0)) ||
      !CHECK_OK(dt_context_create(&gpu_too, DT_DEVICE_GPU, 0))) {
    dt_context_free(gpu);
    return capi_finish();
  }
  CHECK_MEMORY_STATS(gpu, 0, 0, 0, 0);

  CHECK_OK(dt_ndarray_create(&small, gpu, DT_FLOAT32, small_dims, 1));
  CHECK_OK(dt_ndarray_create(&big, gpu, DT_FLOAT32, big_dims, 1));
  CHECK_MEMORY_STATS(gpu, 4 * KIB + 4 * MIB, 4 * KIB + 4 * MIB, 0, 2);
  /* A second context of the same GPU has its own allocator. */
  CHECK_MEMORY_STATS(gpu_too, 0, 0, 0, 0);

  /* A freed block stays cached: out of in_use, into cached. */
  dt_ndarray_free(big);
  big = NULL;
  CHECK_MEMORY_STATS(gpu, 4 * KIB, 4 * KIB + 4 * MIB, 4 * MIB, 2);
  CHECK_OK(dt_context_reset_peak_memory(gpu));
  CHECK_MEMORY_STATS(gpu, 4 * KIB, 4 * KIB, 4 * MIB, 2);

  /* Reused from the cache: counted as an allocation, the cache empties. */
  CHECK_OK(dt_ndarray_create(&big, gpu, DT_FLOAT32, big_dims, 1));
  CHECK_OK(dt_ndarray_fill(big, 1.5));
  CHECK_MEMORY_STATS(gpu, 4 * KIB + 4 * MIB, 4 * KIB + 4 * MIB, 0, 3);

  dt_ndarray_free(big);
  dt_ndarray_free(small);
  CHECK_MEMORY_STATS(gpu, 0, 4 * KIB + 4 * MIB, 4 * KIB + 4 * MIB, 3);
  CHECK_OK(dt_context_reset_peak_memory(gpu));
  CHECK_MEMORY_STATS(gpu, 0, 0, 4 * KIB + 4 * MIB, 3);

  dt_context_free(gpu_too);
  dt_context_free(gpu);
  return capi_finish();
}
