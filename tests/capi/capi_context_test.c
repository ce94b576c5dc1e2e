/*
 * Contexts: creation, queries, bad devices, GPU availability by build,
 * double free, a context kept alive by its arrays, and the allocator's
 * memory statistics on the CPU (capi_memory_stats_gpu_test has the GPU's).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "capi_check.h"

/* Checks *out is still the sentinel; frees an unexpectedly created one. */
static void expect_untouched_ctx(dt_context *c, int line) {
  if (!capi_check_impl(c == CAPI_SENTINEL(dt_context), __FILE__, line,
                       "out-parameter dt_context* left untouched")) {
    if (c != NULL) dt_context_free(c);
  }
}

static void test_cpu(void) {
  dt_context *ctx = NULL;
  dt_device_type type = (dt_device_type)0;
  int32_t id = -5;

  CHECK_OK(dt_context_create(&ctx, DT_DEVICE_CPU, 0));
  CHECK(ctx != NULL);
  CHECK_OK(dt_context_device_type(&type, ctx));
  CHECK_EQ_I64(type, DT_DEVICE_CPU);
  CHECK_OK(dt_context_device_id(&id, ctx));
  CHECK_EQ_I64(id, 0);

  /* NULL out-pointers leave nothing written. */
  CHECK_STATUS(dt_context_device_type(NULL, ctx), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_context_device_id(NULL, ctx), DT_ERR_INVALID_ARGUMENT);
  /* NULL context. */
  type = (dt_device_type)77;
  id = 77;
  CHECK_STATUS(dt_context_device_type(&type, NULL), DT_ERR_INVALID_ARGUMENT);
  CHECK_EQ_I64(type, 77);
  CHECK_STATUS(dt_context_device_id(&id, NULL), DT_ERR_INVALID_ARGUMENT);
  CHECK_EQ_I64(id, 77);
  dt_context_free(ctx);

  /* Two contexts on one device are independent handles. */
  {
    dt_context *a = NULL;
    dt_context *b = NULL;
    CHECK_OK(dt_context_create(&a, DT_DEVICE_CPU, 0));
    CHECK_OK(dt_context_create(&b, DT_DEVICE_CPU, 0));
    CHECK(a != b);
    dt_context_free(a);
    type = (dt_device_type)0;
    CHECK_OK(dt_context_device_type(&type, b));
    CHECK_EQ_I64(type, DT_DEVICE_CPU);
    dt_context_free(b);
  }
}

static void test_bad_create(void) {
  dt_context *ctx;

  CHECK_STATUS(dt_context_create(NULL, DT_DEVICE_CPU, 0),
               DT_ERR_INVALID_ARGUMENT);

  ctx = CAPI_SENTINEL(dt_context);
  CHECK_STATUS(dt_context_create(&ctx, DT_DEVICE_CPU, 1),
               DT_ERR_INVALID_ARGUMENT);
  expect_untouched_ctx(ctx, __LINE__);

  ctx = CAPI_SENTINEL(dt_context);
  CHECK_STATUS(dt_context_create(&ctx, DT_DEVICE_CPU, -1),
               DT_ERR_INVALID_ARGUMENT);
  expect_untouched_ctx(ctx, __LINE__);

  ctx = CAPI_SENTINEL(dt_context);
  CHECK_STATUS(dt_context_create(&ctx, DT_DEVICE_CPU, INT32_MAX),
               DT_ERR_INVALID_ARGUMENT);
  expect_untouched_ctx(ctx, __LINE__);

  ctx = CAPI_SENTINEL(dt_context);
  CHECK_STATUS(dt_context_create(&ctx, (dt_device_type)7, 0),
               DT_ERR_INVALID_ARGUMENT);
  expect_untouched_ctx(ctx, __LINE__);

  ctx = CAPI_SENTINEL(dt_context);
  CHECK_STATUS(dt_context_create(&ctx, (dt_device_type)0, 0),
               DT_ERR_INVALID_ARGUMENT);
  expect_untouched_ctx(ctx, __LINE__);

  ctx = CAPI_SENTINEL(dt_context);
  CHECK_STATUS(dt_context_create(&ctx, (dt_device_type)3, 0),
               DT_ERR_INVALID_ARGUMENT);
  expect_untouched_ctx(ctx, __LINE__);

  CHECK_STATUS(dt_context_create(NULL, (dt_device_type)7, 0),
               DT_ERR_INVALID_ARGUMENT);
}

static void test_gpu_by_build(void) {
  dt_build_info info;
  int32_t gpus = -1;
  dt_context *ctx;

  dt_build_info_init(&info, sizeof info);
  CHECK_OK(dt_build_info_get(&info));
  CHECK_OK(dt_gpu_count(&gpus));

  if (info.with_cuda == 0) {
    CHECK_EQ_I64(gpus, 0);
    ctx = CAPI_SENTINEL(dt_context);
    CHECK_STATUS(dt_context_create(&ctx, DT_DEVICE_GPU, 0),
                 DT_ERR_NOT_SUPPORTED);
    expect_untouched_ctx(ctx, __LINE__);
    ctx = CAPI_SENTINEL(dt_context);
    CHECK_STATUS(dt_context_create(&ctx, DT_DEVICE_GPU, 1),
                 DT_ERR_NOT_SUPPORTED);
    expect_untouched_ctx(ctx, __LINE__);
    /* A negative id is a bad argument or unsupported: both are errors. */
    ctx = CAPI_SENTINEL(dt_context);
    CHECK_STATUS2(dt_context_create(&ctx, DT_DEVICE_GPU, -1),
                  DT_ERR_INVALID_ARGUMENT, DT_ERR_NOT_SUPPORTED);
    expect_untouched_ctx(ctx, __LINE__);
    return;
  }

  ctx = CAPI_SENTINEL(dt_context);
  CHECK_STATUS(dt_context_create(&ctx, DT_DEVICE_GPU, gpus),
               DT_ERR_NO_DEVICE);
  expect_untouched_ctx(ctx, __LINE__);
  ctx = CAPI_SENTINEL(dt_context);
  CHECK_STATUS(dt_context_create(&ctx, DT_DEVICE_GPU, gpus + 100),
               DT_ERR_NO_DEVICE);
  expect_untouched_ctx(ctx, __LINE__);
  ctx = CAPI_SENTINEL(dt_context);
  CHECK_STATUS(dt_context_create(&ctx, DT_DEVICE_GPU, -1),
               DT_ERR_INVALID_ARGUMENT);
  expect_untouched_ctx(ctx, __LINE__);

  if (gpus > 0) {
    dt_device_type type = DT_DEVICE_CPU;
    int32_t id = -1;
    ctx = NULL;
    CHECK_OK(dt_context_create(&ctx, DT_DEVICE_GPU, gpus - 1));
    CHECK_OK(dt_context_device_type(&type, ctx));
    CHECK_EQ_I64(type, DT_DEVICE_GPU);
    CHECK_OK(dt_context_device_id(&id, ctx));
    CHECK_EQ_I64(id, gpus - 1);
    dt_context_free(ctx);
  }
}

static void test_free_and_double_free(void) {
  dt_context *ctx = NULL;
  char before[512];
  dt_device_type type = (dt_device_type)55;
  int32_t id = 55;

  dt_context_free(NULL); /* accepted */

  CHECK_OK(dt_context_create(&ctx, DT_DEVICE_CPU, 0));
  /* Record a known message, then double free and expect a new one. */
  CHECK_STATUS(dt_context_device_type(NULL, ctx), DT_ERR_INVALID_ARGUMENT);
  strncpy(before, dt_last_error(), sizeof before - 1);
  before[sizeof before - 1] = '\0';
  dt_context_free(ctx);
  dt_context_free(ctx); /* detected, not a crash */
  CHECK_LAST_ERROR();
  CHECK(strcmp(dt_last_error(), before) != 0);

  CHECK_OK(dt_context_create(&ctx, DT_DEVICE_CPU, 0));
  dt_context_free(ctx);
  CHECK_STATUS(dt_context_device_type(&type, ctx), DT_ERR_INVALID_HANDLE);
  CHECK_EQ_I64(type, 55);
  CHECK_STATUS(dt_context_device_id(&id, ctx), DT_ERR_INVALID_HANDLE);
  CHECK_EQ_I64(id, 55);
}

static void test_wrong_kind(void) {
  dt_context *ctx = NULL;
  dt_ndarray *arr = NULL;
  dt_device_type type = (dt_device_type)55;
  int32_t id = 55;
  const int64_t dims[1] = {4};

  CHECK_OK(dt_context_create(&ctx, DT_DEVICE_CPU, 0));
  CHECK_OK(dt_ndarray_create(&arr, ctx, DT_FLOAT32, dims, 1));
  CHECK_STATUS(dt_context_device_type(&type, (const dt_context *)arr),
               DT_ERR_INVALID_HANDLE);
  CHECK_EQ_I64(type, 55);
  CHECK_STATUS(dt_context_device_id(&id, (const dt_context *)arr),
               DT_ERR_INVALID_HANDLE);
  CHECK_EQ_I64(id, 55);
  /* Freeing a wrong-kind handle is detected and ignored. */
  dt_context_free((dt_context *)arr);
  CHECK_LAST_ERROR();
  /* ... and the array is still alive. */
  CHECK_OK(dt_ndarray_fill(arr, 1.0));
  dt_ndarray_free(arr);
  dt_context_free(ctx);
}

static void test_arrays_keep_context_alive(void) {
  dt_context *ctx = NULL;
  dt_context *again = NULL;
  dt_ndarray *a = NULL;
  dt_ndarray *b = NULL;
  const int64_t dims[2] = {2, 3};
  float host[6];
  size_t i;
  dt_device_type type = (dt_device_type)0;
  int32_t id = -1;

  CHECK_OK(dt_context_create(&ctx, DT_DEVICE_CPU, 0));
  CHECK_OK(dt_ndarray_create(&a, ctx, DT_FLOAT32, dims, 2));
  CHECK_OK(dt_ndarray_create(&b, ctx, DT_FLOAT32, dims, 2));
  dt_context_free(ctx);

  /* The freed handle is dead even though the device object lives on. */
  CHECK_STATUS(dt_context_device_type(&type, ctx), DT_ERR_INVALID_HANDLE);

  /* The arrays still work, and can hand out a fresh context handle. */
  CHECK_OK(dt_ndarray_fill(a, 2.5));
  CHECK_OK(dt_ndarray_fill(b, 1.0));
  CHECK_OK(dt_ndarray_add(b, a, b));
  memset(host, 0, sizeof host);
  CHECK_OK(dt_ndarray_copy_to_host(host, sizeof host, b));
  for (i = 0; i < 6; i++) CHECK_EQ_DBL(host[i], 3.5);
  CHECK_OK(dt_ndarray_context(&again, a));
  CHECK_OK(dt_context_device_type(&type, again));
  CHECK_EQ_I64(type, DT_DEVICE_CPU);
  CHECK_OK(dt_context_device_id(&id, again));
  CHECK_EQ_I64(id, 0);
  dt_ndarray_free(a);
  /* b still keeps the device alive: create a new array on `again`. */
  a = NULL;
  CHECK_OK(dt_ndarray_create(&a, again, DT_FLOAT64, dims, 2));
  dt_context_free(again);
  dt_ndarray_free(b);
  CHECK_OK(dt_ndarray_fill(a, -1.0));
  dt_ndarray_free(a);
}

static void test_many_contexts(void) {
  dt_context *ctx[32];
  int i;
  for (i = 0; i < 32; i++) {
    ctx[i] = NULL;
    CHECK_OK(dt_context_create(&ctx[i], DT_DEVICE_CPU, 0));
  }
  for (i = 0; i < 32; i++) dt_context_free(ctx[i]);
}

static void test_memory_stats(void) {
  dt_context *ctx = NULL;
  dt_context *other = NULL;
  dt_context *again = NULL;
  dt_ndarray *a = NULL;
  dt_ndarray *b = NULL;
  dt_ndarray *c = NULL;
  dt_memory_stats s;
  /* Multiples of the CPU's 64-byte rounding, so the counts are exact. */
  const int64_t dims_a[1] = {1024}; /* 4096 bytes of float32 */
  const int64_t dims_b[1] = {2048}; /* 8192 bytes */
  const int64_t dims_c[1] = {10};   /* 40 bytes, reserved as 64 */

  CHECK_OK(dt_context_create(&ctx, DT_DEVICE_CPU, 0));
  CHECK_OK(dt_context_create(&other, DT_DEVICE_CPU, 0));
  CHECK_EQ_U64(capi_memory_stats_of(ctx).struct_size, sizeof s);
  CHECK_MEMORY_STATS(ctx, 0, 0, 0, 0);

  CHECK_OK(dt_ndarray_create(&a, ctx, DT_FLOAT32, dims_a, 1));
  CHECK_OK(dt_ndarray_create(&b, ctx, DT_FLOAT32, dims_b, 1));
  CHECK_MEMORY_STATS(ctx, 4096 + 8192, 4096 + 8192, 0, 2);
  /* Another context of the CPU has its own allocator and counts apart. */
  CHECK_MEMORY_STATS(other, 0, 0, 0, 0);
  /* Another handle to the same device object reads the same counts. */
  CHECK_OK(dt_ndarray_context(&again, a));
  CHECK_MEMORY_STATS(again, 4096 + 8192, 4096 + 8192, 0, 2);

  /* Freeing gives the bytes back; the peak stays until it is reset. */
  dt_ndarray_free(a);
  CHECK_MEMORY_STATS(ctx, 8192, 4096 + 8192, 0, 2);
  CHECK_OK(dt_context_reset_peak_memory(ctx));
  CHECK_MEMORY_STATS(ctx, 8192, 8192, 0, 2);
  /* The next peak is that of the work after the reset; sizes are rounded. */
  CHECK_OK(dt_ndarray_create(&c, ctx, DT_FLOAT32, dims_c, 1));
  CHECK_MEMORY_STATS(ctx, 8192 + 64, 8192 + 64, 0, 3);
  dt_ndarray_free(c);
  dt_ndarray_free(b);
  CHECK_MEMORY_STATS(ctx, 0, 8192 + 64, 0, 3);
  CHECK_OK(dt_context_reset_peak_memory(ctx));
  CHECK_MEMORY_STATS(ctx, 0, 0, 0, 3);

  /* A shorter struct (an older header's) is written only up to its size. */
  {
    dt_memory_stats shorter;
    memset(&shorter, 0xAB, sizeof shorter);
    shorter.struct_size = offsetof(dt_memory_stats, peak_bytes);
    CHECK_OK(dt_context_memory_stats(&shorter, ctx));
    CHECK_EQ_U64(shorter.in_use_bytes, 0);
    CHECK(shorter.peak_bytes == (size_t)0xABABABABABABABABull);
  }

  /* Bad arguments: clear statuses, nothing written. */
  CHECK_STATUS(dt_context_memory_stats(NULL, ctx), DT_ERR_INVALID_ARGUMENT);
  CHECK_OK(dt_memory_stats_init(&s, sizeof s));
  s.in_use_bytes = 77;
  CHECK_STATUS(dt_context_memory_stats(&s, NULL), DT_ERR_INVALID_ARGUMENT);
  CHECK_EQ_U64(s.in_use_bytes, 77);
  CHECK_STATUS(dt_context_reset_peak_memory(NULL), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_memory_stats_init(NULL, sizeof s), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_memory_stats_init(&s, 0), DT_ERR_INVALID_ARGUMENT);
  s.struct_size = 0;
  CHECK_STATUS(dt_context_memory_stats(&s, ctx), DT_ERR_INVALID_ARGUMENT);

  dt_context_free(again);
  dt_context_free(other);
  dt_context_free(ctx);
  CHECK_OK(dt_memory_stats_init(&s, sizeof s));
  CHECK_STATUS(dt_context_memory_stats(&s, ctx), DT_ERR_INVALID_HANDLE);
  CHECK_STATUS(dt_context_reset_peak_memory(ctx), DT_ERR_INVALID_HANDLE);
}

int main(void) {
  test_cpu();
  test_bad_create();
  test_gpu_by_build();
  test_free_and_double_free();
  test_wrong_kind();
  test_arrays_keep_context_alive();
  test_many_contexts();
  test_memory_stats();
  return capi_finish();
}
