/*
 * What the element-wise C API tests share: the CPU context, the dtypes, exact
 * half and bfloat16 conversions done by the test itself, and typed element
 * access.
 */
#ifndef CAPI_OPS_TEST_UTIL_H
#define CAPI_OPS_TEST_UTIL_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "../capi_check.h"

extern dt_context *g_ctx;

static const dt_dtype k_float_dtypes[4] = {DT_FLOAT32, DT_FLOAT64, DT_FLOAT16,
                                           DT_BFLOAT16};
static const dt_dtype k_all_dtypes[7] = {DT_FLOAT32, DT_FLOAT16, DT_BFLOAT16,
                                         DT_FLOAT64, DT_INT32,   DT_INT64,
                                         DT_UINT8};

/* ---- exact conversions done by the test itself (no libm) --------------- */

static inline double pow2(int e) {
  double v = 1.0;
  while (e > 0) {
    v *= 2.0;
    e--;
  }
  while (e < 0) {
    v *= 0.5;
    e++;
  }
  return v;
}

static inline double h2d(uint16_t h) {
  int e = (h >> 10) & 0x1F;
  int m = h & 0x3FF;
  double v;
  if (e == 0) {
    v = m * pow2(-24);
  } else if (e == 31) {
    v = m == 0 ? (double)INFINITY : (double)NAN;
  } else {
    v = (1024 + m) * pow2(e - 25);
  }
  return (h & 0x8000) ? -v : v;
}

/* Encodes a value that float16 represents exactly; *exact = 0 otherwise. */
static inline uint16_t d2h_exact(double v, int *exact) {
  uint16_t sign = 0;
  int e = 0;
  double m;
  if (signbit(v)) {
    sign = 0x8000;
    v = -v;
  }
  if (v == 0) return sign;
  m = v;
  while (m >= 2.0) {
    m *= 0.5;
    e++;
  }
  while (m < 1.0) {
    m *= 2.0;
    e--;
  }
  if (e > 15) {
    *exact = 0;
    return sign;
  }
  if (e >= -14) {
    double frac = (m - 1.0) * 1024.0;
    uint16_t f = (uint16_t)frac;
    if ((double)f != frac) *exact = 0;
    return (uint16_t)(sign | ((e + 15) << 10) | f);
  } else {
    double sub = v * pow2(24);
    uint16_t f = (uint16_t)sub;
    if ((double)f != sub || sub >= 1024) *exact = 0;
    return (uint16_t)(sign | f);
  }
}

static inline double bf2d(uint16_t b) {
  uint32_t u = (uint32_t)b << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

static inline uint16_t d2bf_exact(double v, int *exact) {
  float f = (float)v;
  uint32_t u;
  if ((double)f != v && v == v) *exact = 0;
  memcpy(&u, &f, 4);
  if (u & 0xFFFFu) *exact = 0;
  return (uint16_t)(u >> 16);
}

static inline size_t dsize(dt_dtype dt) {
  size_t s = 0;
  dt_dtype_size(&s, dt);
  return s;
}

/* Writes n exactly representable values into arr (of dtype dt). */
static inline void put(dt_ndarray *arr, dt_dtype dt, const double *v, size_t n,
                int line) {
  unsigned char buf[64 * 8];
  size_t i, es = dsize(dt);
  int exact = 1;
  for (i = 0; i < n; i++) {
    unsigned char *p = buf + i * es;
    switch (dt) {
      case DT_FLOAT32: {
        float f = (float)v[i];
        if ((double)f != v[i]) exact = 0;
        memcpy(p, &f, 4);
        break;
      }
      case DT_FLOAT64:
        memcpy(p, &v[i], 8);
        break;
      case DT_FLOAT16: {
        uint16_t h = d2h_exact(v[i], &exact);
        memcpy(p, &h, 2);
        break;
      }
      case DT_BFLOAT16: {
        uint16_t h = d2bf_exact(v[i], &exact);
        memcpy(p, &h, 2);
        break;
      }
      case DT_INT32: {
        int32_t x = (int32_t)v[i];
        if ((double)x != v[i]) exact = 0;
        memcpy(p, &x, 4);
        break;
      }
      case DT_INT64: {
        int64_t x = (int64_t)v[i];
        if ((double)x != v[i]) exact = 0;
        memcpy(p, &x, 8);
        break;
      }
      case DT_UINT8: {
        uint8_t x = (uint8_t)v[i];
        if ((double)x != v[i]) exact = 0;
        p[0] = x;
        break;
      }
    }
  }
  capi_check_impl(exact, __FILE__, line, "test values are representable");
  capi_check_status_impl(dt_ndarray_copy_from_host(arr, buf, n * es), DT_OK,
                         __FILE__, line, "dt_ndarray_copy_from_host(put)");
}

/* Reads n values of arr (of dtype dt) as doubles. */
static inline void get(double *out, const dt_ndarray *arr, dt_dtype dt, size_t n,
                int line) {
  unsigned char buf[64 * 8];
  size_t i, es = dsize(dt);
  memset(buf, 0, sizeof buf);
  capi_check_status_impl(dt_ndarray_copy_to_host(buf, n * es, arr), DT_OK,
                         __FILE__, line, "dt_ndarray_copy_to_host(get)");
  for (i = 0; i < n; i++) {
    const unsigned char *p = buf + i * es;
    switch (dt) {
      case DT_FLOAT32: {
        float f;
        memcpy(&f, p, 4);
        out[i] = f;
        break;
      }
      case DT_FLOAT64:
        memcpy(&out[i], p, 8);
        break;
      case DT_FLOAT16: {
        uint16_t h;
        memcpy(&h, p, 2);
        out[i] = h2d(h);
        break;
      }
      case DT_BFLOAT16: {
        uint16_t h;
        memcpy(&h, p, 2);
        out[i] = bf2d(h);
        break;
      }
      case DT_INT32: {
        int32_t x;
        memcpy(&x, p, 4);
        out[i] = x;
        break;
      }
      case DT_INT64: {
        int64_t x;
        memcpy(&x, p, 8);
        out[i] = (double)x;
        break;
      }
      case DT_UINT8:
        out[i] = p[0];
        break;
    }
  }
}

static inline void expect_values(const dt_ndarray *arr, dt_dtype dt,
                          const double *expect, size_t n, int line) {
  double got[64];
  size_t i;
  get(got, arr, dt, n, line);
  for (i = 0; i < n; i++) {
    if (!capi_check_impl(got[i] == expect[i], __FILE__, line,
                         "element has the expected value")) {
      fprintf(stderr, "  dtype %s element %u: got %.17g, expected %.17g\n",
              dt_dtype_name(dt), (unsigned)i, got[i], expect[i]);
    }
  }
}

static inline dt_ndarray *make(dt_dtype dtype, const int64_t *dims, size_t ndim) {
  dt_ndarray *a = NULL;
  if (!CHECK_OK(dt_ndarray_create(&a, g_ctx, dtype, dims, ndim))) return NULL;
  return a;
}

/* ------------------------------------------------------------------------ */

static const double k_a[6] = {1, 2.5, -3, 0.5, 4, -0.25};
static const double k_b[6] = {0.5, -1, 2, 8, -4, 0.75};

/* The groups of tests in capi_ops/, called by main in capi_ops_test.c. */
void test_cast_all_pairs(void);
void test_cast_values(void);
void test_cast_errors(void);

#endif
