/*
 * What the NDArray C API tests share: the CPU context, the dtypes and their
 * sizes, and helpers that create arrays and check shapes.
 */
#ifndef CAPI_NDARRAY_TEST_UTIL_H
#define CAPI_NDARRAY_TEST_UTIL_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../capi_check.h"

extern dt_context *g_ctx;

static const dt_dtype k_dtypes[7] = {DT_FLOAT32, DT_FLOAT16, DT_BFLOAT16,
                                     DT_FLOAT64, DT_INT32,   DT_INT64,
                                     DT_UINT8};
static const size_t k_sizes[7] = {4, 2, 2, 8, 4, 8, 1};

static inline void expect_untouched_arr(dt_ndarray *a, int line) {
  if (!capi_check_impl(a == CAPI_SENTINEL(dt_ndarray), __FILE__, line,
                       "out-parameter dt_ndarray* left untouched")) {
    if (a != NULL) dt_ndarray_free(a);
  }
}

/* Creates an array, counting a failure (and returning NULL) if it fails. */
static inline dt_ndarray *make(dt_dtype dtype, const int64_t *dims, size_t ndim) {
  dt_ndarray *a = NULL;
  if (!CHECK_OK(dt_ndarray_create(&a, g_ctx, dtype, dims, ndim))) return NULL;
  return a;
}

static inline void check_shape(const dt_ndarray *a, const int64_t *dims, size_t ndim,
                        int line) {
  size_t got_ndim = 999;
  int64_t got[DT_MAX_NDIM + 1];
  size_t i;
  int ok = dt_ndarray_ndim(&got_ndim, a) == DT_OK && got_ndim == ndim;
  if (ok) {
    for (i = 0; i < DT_MAX_NDIM + 1; i++) got[i] = -99;
    ok = dt_ndarray_shape(got, DT_MAX_NDIM + 1, a) == DT_OK;
    for (i = 0; ok && i < ndim; i++) ok = got[i] == dims[i];
    /* Writes exactly ndim dims. */
    for (i = ndim; ok && i < DT_MAX_NDIM + 1; i++) ok = got[i] == -99;
  }
  capi_check_impl(ok, __FILE__, line, "array has the expected shape");
}

static inline uint16_t u16_at(const unsigned char *p) {
  uint16_t v;
  memcpy(&v, p, 2);
  return v;
}

/* The groups of tests in capi_ndarray/, called by main in capi_ndarray_test.c. */
void test_copy(void);
void test_fill(void);
void test_reshape(void);
void test_slice(void);

#endif
