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

static dt_memory_stats stats_of(const dt_context *ctx) {
  dt_memory_stats s;
  memset(&s, 0xEE, sizeof s);
  CHECK_OK(dt_memory_stats_init(&s, sizeof s));
  CHECK_OK(dt_context_memory_stats(&s, ctx));
  return s;
}

int main(void) {
  const int skip = capi_gpu_skip_code();
  dt_context *gpu = NULL;
  dt_context *gpu_too = NULL;
  dt_ndarray *small = NULL;
  dt_ndarray *big = NULL;
  dt_memory_stats s;
  const int64_t small_dims[1] = {1000};          /* 4000 bytes: a 4 KiB block */
  const int64_t big_dims[1] = {3 * 256 * 1024};  /* 3 MiB: a 4 MiB block */

  if (skip != 0) return skip;
  if (!CHECK_OK(dt_context_create(&gpu, DT_DEVICE_GPU, 0)) ||
      !CHECK_OK(dt_context_create(&gpu_too, DT_DEVICE_GPU, 0))) {
    dt_context_free(gpu);
    return capi_finish();
  }
  s = stats_of(gpu);
  CHECK_EQ_U64(s.in_use_bytes, 0);
  CHECK_EQ_U64(s.peak_bytes, 0);
  CHECK_EQ_U64(s.cached_bytes, 0);
  CHECK_EQ_U64(s.allocations, 0);

  CHECK_OK(dt_ndarray_create(&small, gpu, DT_FLOAT32, small_dims, 1));
  CHECK_OK(dt_ndarray_create(&big, gpu, DT_FLOAT32, big_dims, 1));
  s = stats_of(gpu);
  CHECK_EQ_U64(s.in_use_bytes, 4 * KIB + 4 * MIB);
  CHECK_EQ_U64(s.peak_bytes, 4 * KIB + 4 * MIB);
  CHECK_EQ_U64(s.cached_bytes, 0);
  CHECK_EQ_U64(s.allocations, 2);
  /* A second context of the same GPU has its own allocator. */
  CHECK_EQ_U64(stats_of(gpu_too).in_use_bytes, 0);

  /* A freed block stays cached: out of in_use, into cached. */
  dt_ndarray_free(big);
  big = NULL;
  s = stats_of(gpu);
  CHECK_EQ_U64(s.in_use_bytes, 4 * KIB);
  CHECK_EQ_U64(s.cached_bytes, 4 * MIB);
  CHECK_EQ_U64(s.peak_bytes, 4 * KIB + 4 * MIB);

  CHECK_OK(dt_context_reset_peak_memory(gpu));
  CHECK_EQ_U64(stats_of(gpu).peak_bytes, 4 * KIB);

  /* Reused from the cache: counted as an allocation, the cache empties. */
  CHECK_OK(dt_ndarray_create(&big, gpu, DT_FLOAT32, big_dims, 1));
  CHECK_OK(dt_ndarray_fill(big, 1.5));
  s = stats_of(gpu);
  CHECK_EQ_U64(s.in_use_bytes, 4 * KIB + 4 * MIB);
  CHECK_EQ_U64(s.cached_bytes, 0);
  CHECK_EQ_U64(s.allocations, 3);
  CHECK_EQ_U64(s.peak_bytes, 4 * KIB + 4 * MIB);

  dt_ndarray_free(big);
  dt_ndarray_free(small);
  s = stats_of(gpu);
  CHECK_EQ_U64(s.in_use_bytes, 0);
  CHECK_EQ_U64(s.cached_bytes, 4 * KIB + 4 * MIB);
  CHECK_OK(dt_context_reset_peak_memory(gpu));
  CHECK_EQ_U64(stats_of(gpu).peak_bytes, 0);

  dt_context_free(gpu_too);
  dt_context_free(gpu);
  return capi_finish();
}
