/*
 * Element-wise arithmetic (add, scale, axpy) and casts.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "capi_check.h"

static dt_context *g_ctx;

static const dt_dtype k_float_dtypes[4] = {DT_FLOAT32, DT_FLOAT64, DT_FLOAT16,
                                           DT_BFLOAT16};
static const dt_dtype k_all_dtypes[7] = {DT_FLOAT32, DT_FLOAT16, DT_BFLOAT16,
                                         DT_FLOAT64, DT_INT32,   DT_INT64,
                                         DT_UINT8};

/* ---- exact conversions done by the test itself (no libm) --------------- */

static double pow2(int e) {
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

static double h2d(uint16_t h) {
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
static uint16_t d2h_exact(double v, int *exact) {
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

static double bf2d(uint16_t b) {
  uint32_t u = (uint32_t)b << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

static uint16_t d2bf_exact(double v, int *exact) {
  float f = (float)v;
  uint32_t u;
  if ((double)f != v && v == v) *exact = 0;
  memcpy(&u, &f, 4);
  if (u & 0xFFFFu) *exact = 0;
  return (uint16_t)(u >> 16);
}

static size_t dsize(dt_dtype dt) {
  size_t s = 0;
  dt_dtype_size(&s, dt);
  return s;
}

/* Writes n exactly representable values into arr (of dtype dt). */
static void put(dt_ndarray *arr, dt_dtype dt, const double *v, size_t n,
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
static void get(double *out, const dt_ndarray *arr, dt_dtype dt, size_t n,
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

static void expect_values(const dt_ndarray *arr, dt_dtype dt,
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

static dt_ndarray *make(dt_dtype dtype, const int64_t *dims, size_t ndim) {
  dt_ndarray *a = NULL;
  if (!CHECK_OK(dt_ndarray_create(&a, g_ctx, dtype, dims, ndim))) return NULL;
  return a;
}

/* ------------------------------------------------------------------------ */

static const double k_a[6] = {1, 2.5, -3, 0.5, 4, -0.25};
static const double k_b[6] = {0.5, -1, 2, 8, -4, 0.75};

static void test_arith_float(void) {
  const int64_t d23[2] = {2, 3};
  size_t k, i;
  for (k = 0; k < 4; k++) {
    dt_dtype dt = k_float_dtypes[k];
    dt_ndarray *a = make(dt, d23, 2);
    dt_ndarray *b = make(dt, d23, 2);
    dt_ndarray *o = make(dt, d23, 2);
    double e[6];
    fprintf(stderr, "-- arithmetic on %s\n", dt_dtype_name(dt));

    put(a, dt, k_a, 6, __LINE__);
    put(b, dt, k_b, 6, __LINE__);
    CHECK_OK(dt_ndarray_add(o, a, b));
    for (i = 0; i < 6; i++) e[i] = k_a[i] + k_b[i];
    expect_values(o, dt, e, 6, __LINE__);
    expect_values(a, dt, k_a, 6, __LINE__); /* inputs unchanged */
    expect_values(b, dt, k_b, 6, __LINE__);

    /* scale */
    CHECK_OK(dt_ndarray_scale(o, 2.5));
    for (i = 0; i < 6; i++) e[i] = (k_a[i] + k_b[i]) * 2.5;
    expect_values(o, dt, e, 6, __LINE__);
    CHECK_OK(dt_ndarray_scale(o, 0.0));
    for (i = 0; i < 6; i++) e[i] = 0.0;
    expect_values(o, dt, e, 6, __LINE__);
    put(o, dt, k_a, 6, __LINE__);
    CHECK_OK(dt_ndarray_scale(o, -0.5));
    for (i = 0; i < 6; i++) e[i] = k_a[i] * -0.5;
    expect_values(o, dt, e, 6, __LINE__);
    CHECK_OK(dt_ndarray_scale(o, 1.0));
    expect_values(o, dt, e, 6, __LINE__);

    /* axpy: y = b - 0.5 a */
    put(o, dt, k_b, 6, __LINE__);
    CHECK_OK(dt_ndarray_axpy(o, -0.5, a));
    for (i = 0; i < 6; i++) e[i] = k_b[i] - 0.5 * k_a[i];
    expect_values(o, dt, e, 6, __LINE__);
    expect_values(a, dt, k_a, 6, __LINE__);
    CHECK_OK(dt_ndarray_axpy(o, 0.0, a));
    expect_values(o, dt, e, 6, __LINE__);

    /* Aliasing. */
    put(o, dt, k_a, 6, __LINE__);
    CHECK_OK(dt_ndarray_add(o, o, o));
    for (i = 0; i < 6; i++) e[i] = 2 * k_a[i];
    expect_values(o, dt, e, 6, __LINE__);
    put(o, dt, k_a, 6, __LINE__);
    CHECK_OK(dt_ndarray_add(o, o, b));
    for (i = 0; i < 6; i++) e[i] = k_a[i] + k_b[i];
    expect_values(o, dt, e, 6, __LINE__);
    put(o, dt, k_b, 6, __LINE__);
    CHECK_OK(dt_ndarray_add(o, a, o));
    expect_values(o, dt, e, 6, __LINE__);
    put(o, dt, k_a, 6, __LINE__);
    CHECK_OK(dt_ndarray_axpy(o, 2.0, o));
    for (i = 0; i < 6; i++) e[i] = 3 * k_a[i];
    expect_values(o, dt, e, 6, __LINE__);

    dt_ndarray_free(a);
    dt_ndarray_free(b);
    dt_ndarray_free(o);
  }
}

/* Results that need rounding: exact float32/float64 semantics, and float16 /
 * bfloat16 rounded to nearest after computing in float32. */
static void test_arith_rounding(void) {
  const int64_t d1[1] = {1};
  {
    dt_ndarray *a = make(DT_FLOAT32, d1, 1), *b = make(DT_FLOAT32, d1, 1);
    const float x = 0.1f, y = 0.2f;
    volatile float sum = x + y;
    float got = 0;
    CHECK_OK(dt_ndarray_copy_from_host(a, &x, 4));
    CHECK_OK(dt_ndarray_copy_from_host(b, &y, 4));
    CHECK_OK(dt_ndarray_add(a, a, b));
    CHECK_OK(dt_ndarray_copy_to_host(&got, 4, a));
    CHECK_EQ_DBL(got, sum);
    dt_ndarray_free(a);
    dt_ndarray_free(b);
  }
  {
    dt_ndarray *a = make(DT_FLOAT64, d1, 1), *b = make(DT_FLOAT64, d1, 1);
    const double x = 0.1, y = 0.2;
    volatile double sum = x + y, prod = x * 3.0;
    double got = 0;
    CHECK_OK(dt_ndarray_copy_from_host(a, &x, 8));
    CHECK_OK(dt_ndarray_copy_from_host(b, &y, 8));
    CHECK_OK(dt_ndarray_add(b, a, b));
    CHECK_OK(dt_ndarray_copy_to_host(&got, 8, b));
    CHECK_EQ_DBL(got, sum);
    CHECK_OK(dt_ndarray_scale(a, 3.0));
    CHECK_OK(dt_ndarray_copy_to_host(&got, 8, a));
    CHECK_EQ_DBL(got, prod);
    dt_ndarray_free(a);
    dt_ndarray_free(b);
  }
  {
    /* bf16: 1 + 3*2^-9 lies 3/4 of the way to 1 + 2^-7. */
    dt_ndarray *a = make(DT_BFLOAT16, d1, 1), *b = make(DT_BFLOAT16, d1, 1);
    const double one = 1.0, small = 3.0 / 512.0;
    double e = 1.0078125;
    put(a, DT_BFLOAT16, &one, 1, __LINE__);
    put(b, DT_BFLOAT16, &small, 1, __LINE__);
    CHECK_OK(dt_ndarray_add(a, a, b));
    expect_values(a, DT_BFLOAT16, &e, 1, __LINE__);
    dt_ndarray_free(a);
    dt_ndarray_free(b);
  }
  {
    /* f16: 1 + 3*2^-12 lies 3/4 of the way to 1 + 2^-10; 65504 * 2 is
     * beyond float16's range and rounds to infinity. */
    dt_ndarray *a = make(DT_FLOAT16, d1, 1), *b = make(DT_FLOAT16, d1, 1);
    const double one = 1.0, small = 3.0 / 4096.0, big = 65504.0;
    double e = 1.0 + 1.0 / 1024.0;
    uint16_t h = 0;
    put(a, DT_FLOAT16, &one, 1, __LINE__);
    put(b, DT_FLOAT16, &small, 1, __LINE__);
    CHECK_OK(dt_ndarray_add(a, a, b));
    expect_values(a, DT_FLOAT16, &e, 1, __LINE__);
    put(a, DT_FLOAT16, &big, 1, __LINE__);
    CHECK_OK(dt_ndarray_scale(a, 2.0));
    CHECK_OK(dt_ndarray_copy_to_host(&h, 2, a));
    CHECK_EQ_U64(h, 0x7C00);
    dt_ndarray_free(a);
    dt_ndarray_free(b);
  }
}

static void test_arith_int_not_supported(void) {
  const int64_t d3[1] = {3};
  const double v[3] = {1, 2, 3};
  size_t k;
  for (k = 4; k < 7; k++) {
    dt_dtype dt = k_all_dtypes[k];
    dt_ndarray *a = make(dt, d3, 1), *b = make(dt, d3, 1),
               *o = make(dt, d3, 1);
    const double zero[3] = {0, 0, 0};
    put(a, dt, v, 3, __LINE__);
    put(b, dt, v, 3, __LINE__);
    if (!CHECK_STATUS(dt_ndarray_add(o, a, b), DT_ERR_NOT_SUPPORTED))
      fprintf(stderr, "  dtype %s\n", dt_dtype_name(dt));
    if (!CHECK_STATUS(dt_ndarray_scale(a, 2.0), DT_ERR_NOT_SUPPORTED))
      fprintf(stderr, "  dtype %s\n", dt_dtype_name(dt));
    if (!CHECK_STATUS(dt_ndarray_axpy(a, 2.0, b), DT_ERR_NOT_SUPPORTED))
      fprintf(stderr, "  dtype %s\n", dt_dtype_name(dt));
    expect_values(a, dt, v, 3, __LINE__);
    expect_values(o, dt, zero, 3, __LINE__);
    dt_ndarray_free(a);
    dt_ndarray_free(b);
    dt_ndarray_free(o);
  }
}

static void test_arith_mismatch(void) {
  const int64_t d23[2] = {2, 3}, d32[2] = {3, 2}, d6[1] = {6}, d22[2] = {2, 2};
  dt_ndarray *a = make(DT_FLOAT32, d23, 2);
  dt_ndarray *b = make(DT_FLOAT32, d23, 2);
  dt_ndarray *o = make(DT_FLOAT32, d23, 2);
  dt_ndarray *t = make(DT_FLOAT32, d32, 2);
  dt_ndarray *f = make(DT_FLOAT32, d6, 1);
  dt_ndarray *s = make(DT_FLOAT32, d22, 2);
  dt_ndarray *a64 = make(DT_FLOAT64, d23, 2);
  dt_ndarray *a16 = make(DT_FLOAT16, d23, 2);
  const double zero[6] = {0, 0, 0, 0, 0, 0};

  put(a, DT_FLOAT32, k_a, 6, __LINE__);
  put(b, DT_FLOAT32, k_b, 6, __LINE__);

  CHECK_STATUS(dt_ndarray_add(o, a, t), DT_ERR_SHAPE_MISMATCH);
  CHECK_STATUS(dt_ndarray_add(o, t, a), DT_ERR_SHAPE_MISMATCH);
  CHECK_STATUS(dt_ndarray_add(t, a, b), DT_ERR_SHAPE_MISMATCH);
  CHECK_STATUS(dt_ndarray_add(f, a, b), DT_ERR_SHAPE_MISMATCH);
  CHECK_STATUS(dt_ndarray_add(o, a, s), DT_ERR_SHAPE_MISMATCH);
  CHECK_STATUS(dt_ndarray_axpy(o, 1.0, t), DT_ERR_SHAPE_MISMATCH);
  CHECK_STATUS(dt_ndarray_axpy(o, 1.0, s), DT_ERR_SHAPE_MISMATCH);
  CHECK_STATUS(dt_ndarray_add(o, a, a64), DT_ERR_DTYPE_MISMATCH);
  CHECK_STATUS(dt_ndarray_add(o, a64, a), DT_ERR_DTYPE_MISMATCH);
  CHECK_STATUS(dt_ndarray_add(a64, a, b), DT_ERR_DTYPE_MISMATCH);
  CHECK_STATUS(dt_ndarray_add(o, a16, b), DT_ERR_DTYPE_MISMATCH);
  CHECK_STATUS(dt_ndarray_axpy(o, 1.0, a64), DT_ERR_DTYPE_MISMATCH);
  CHECK_STATUS(dt_ndarray_axpy(a16, 1.0, a), DT_ERR_DTYPE_MISMATCH);
  expect_values(o, DT_FLOAT32, zero, 6, __LINE__);
  expect_values(a64, DT_FLOAT64, zero, 6, __LINE__);
  expect_values(a16, DT_FLOAT16, zero, 6, __LINE__);

  CHECK_STATUS(dt_ndarray_add(NULL, a, b), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_ndarray_add(o, NULL, b), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_ndarray_add(o, a, NULL), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_ndarray_scale(NULL, 2.0), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_ndarray_axpy(NULL, 2.0, a), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_ndarray_axpy(o, 2.0, NULL), DT_ERR_INVALID_ARGUMENT);
  expect_values(o, DT_FLOAT32, zero, 6, __LINE__);

  dt_ndarray_free(a);
  dt_ndarray_free(b);
  dt_ndarray_free(o);
  dt_ndarray_free(t);
  dt_ndarray_free(f);
  dt_ndarray_free(s);
  dt_ndarray_free(a64);
  dt_ndarray_free(a16);
}

/* Arithmetic through slices touches only the viewed rows. */
static void test_arith_views(void) {
  const int64_t d42[2] = {4, 2};
  const double av[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  const double bv[8] = {10, 20, 30, 40, 50, 60, 70, 80};
  double e[8];
  dt_ndarray *a = make(DT_FLOAT32, d42, 2), *b = make(DT_FLOAT32, d42, 2);
  dt_ndarray *sa = NULL, *sb = NULL;
  size_t i;
  put(a, DT_FLOAT32, av, 8, __LINE__);
  put(b, DT_FLOAT32, bv, 8, __LINE__);
  CHECK_OK(dt_ndarray_slice(&sa, a, 1, 3));
  CHECK_OK(dt_ndarray_slice(&sb, b, 1, 3));
  CHECK_OK(dt_ndarray_add(sa, sa, sb));
  for (i = 0; i < 8; i++) e[i] = (i >= 2 && i < 6) ? av[i] + bv[i] : av[i];
  expect_values(a, DT_FLOAT32, e, 8, __LINE__);
  CHECK_OK(dt_ndarray_scale(sb, 0.5));
  for (i = 0; i < 8; i++) e[i] = (i >= 2 && i < 6) ? bv[i] * 0.5 : bv[i];
  expect_values(b, DT_FLOAT32, e, 8, __LINE__);
  dt_ndarray_free(sa);
  dt_ndarray_free(sb);
  dt_ndarray_free(a);
  dt_ndarray_free(b);
}

static void test_cast_all_pairs(void) {
  const int64_t d6[1] = {6};
  const double v[6] = {0, 1, 2, 3, 4, 5};
  size_t i, j;
  for (i = 0; i < 7; i++) {
    for (j = 0; j < 7; j++) {
      dt_ndarray *s = make(k_all_dtypes[i], d6, 1);
      dt_ndarray *d = make(k_all_dtypes[j], d6, 1);
      put(s, k_all_dtypes[i], v, 6, __LINE__);
      if (!CHECK_OK(dt_ndarray_cast(d, s)))
        fprintf(stderr, "  %s -> %s\n", dt_dtype_name(k_all_dtypes[i]),
                dt_dtype_name(k_all_dtypes[j]));
      expect_values(d, k_all_dtypes[j], v, 6, __LINE__);
      dt_ndarray_free(s);
      dt_ndarray_free(d);
    }
  }
}

static void test_cast_values(void) {
  const int64_t d9[1] = {9};
  const int64_t d6[1] = {6};
  const int64_t d1[1] = {1};
  /* float16-representable values, via float32 -> float16 -> float32. */
  {
    const float vals[9] = {1.5f,      -2.0f, 65504.0f, 6.103515625e-05f,
                           5.9604644775390625e-08f, 0.0f, -0.0f, 1024.0f,
                           0.0999755859375f};
    static const uint16_t bits[9] = {0x3E00, 0xC000, 0x7BFF, 0x0400, 0x0001,
                                     0x0000, 0x8000, 0x6400, 0x2E66};
    float back[9];
    uint16_t h[9];
    dt_ndarray *f = make(DT_FLOAT32, d9, 1), *g = make(DT_FLOAT16, d9, 1);
    dt_ndarray *r = make(DT_FLOAT32, d9, 1);
    size_t i;
    CHECK_OK(dt_ndarray_copy_from_host(f, vals, sizeof vals));
    CHECK_OK(dt_ndarray_cast(g, f));
    memset(h, 0xAA, sizeof h);
    CHECK_OK(dt_ndarray_copy_to_host(h, sizeof h, g));
    for (i = 0; i < 9; i++) CHECK_EQ_U64(h[i], bits[i]);
    CHECK_OK(dt_ndarray_cast(r, g));
    memset(back, 0xAA, sizeof back);
    CHECK_OK(dt_ndarray_copy_to_host(back, sizeof back, r));
    CHECK(memcmp(back, vals, sizeof vals) == 0); /* -0 keeps its sign */
    dt_ndarray_free(f);
    dt_ndarray_free(g);
    dt_ndarray_free(r);
  }
  /* Rounding to nearest (not truncation) into float16 and bfloat16. */
  {
    const float x[2] = {1.0f + 1.0f / 2048 + 1.0f / 8192, 0.1f};
    uint16_t h[2] = {0, 0};
    dt_ndarray *f = NULL, *g = NULL, *b = NULL;
    const int64_t d2[1] = {2};
    f = make(DT_FLOAT32, d2, 1);
    g = make(DT_FLOAT16, d2, 1);
    b = make(DT_BFLOAT16, d2, 1);
    CHECK_OK(dt_ndarray_copy_from_host(f, x, sizeof x));
    CHECK_OK(dt_ndarray_cast(g, f));
    CHECK_OK(dt_ndarray_copy_to_host(h, sizeof h, g));
    CHECK_EQ_U64(h[0], 0x3C01);
    CHECK_EQ_U64(h[1], 0x2E66);
    CHECK_OK(dt_ndarray_cast(b, f));
    CHECK_OK(dt_ndarray_copy_to_host(h, sizeof h, b));
    CHECK_EQ_U64(h[0], 0x3F80);
    CHECK_EQ_U64(h[1], 0x3DCD);
    dt_ndarray_free(f);
    dt_ndarray_free(g);
    dt_ndarray_free(b);
  }
  /* Float to integer truncates toward zero. */
  {
    const float x[6] = {-2.7f, 2.7f, -0.5f, 0.5f, 100.99f, -100.99f};
    const int32_t e[6] = {-2, 2, 0, 0, 100, -100};
    int32_t got[6];
    dt_ndarray *f = make(DT_FLOAT32, d6, 1), *n = make(DT_INT32, d6, 1);
    CHECK_OK(dt_ndarray_copy_from_host(f, x, sizeof x));
    CHECK_OK(dt_ndarray_cast(n, f));
    memset(got, 0x55, sizeof got);
    CHECK_OK(dt_ndarray_copy_to_host(got, sizeof got, n));
    CHECK(memcmp(got, e, sizeof e) == 0);
    dt_ndarray_free(f);
    dt_ndarray_free(n);
  }
  {
    const double x[2] = {-3.9, 1e15 + 0.5};
    const int64_t e[2] = {-3, INT64_C(1000000000000000)};
    int64_t got[2] = {0, 0};
    const int64_t d2[1] = {2};
    dt_ndarray *f = make(DT_FLOAT64, d2, 1), *n = make(DT_INT64, d2, 1);
    CHECK_OK(dt_ndarray_copy_from_host(f, x, sizeof x));
    CHECK_OK(dt_ndarray_cast(n, f));
    CHECK_OK(dt_ndarray_copy_to_host(got, sizeof got, n));
    CHECK_EQ_I64(got[0], e[0]);
    CHECK_EQ_I64(got[1], e[1]);
    dt_ndarray_free(f);
    dt_ndarray_free(n);
  }
  {
    const double x = -2.5, e = -2;
    dt_ndarray *h = make(DT_FLOAT16, d1, 1), *n = make(DT_INT32, d1, 1);
    put(h, DT_FLOAT16, &x, 1, __LINE__);
    CHECK_OK(dt_ndarray_cast(n, h));
    expect_values(n, DT_INT32, &e, 1, __LINE__);
    dt_ndarray_free(h);
    dt_ndarray_free(n);
  }
  {
    const double x = 200, y = 255;
    dt_ndarray *b = make(DT_BFLOAT16, d1, 1), *u = make(DT_UINT8, d1, 1);
    dt_ndarray *f = make(DT_FLOAT32, d1, 1);
    put(b, DT_BFLOAT16, &x, 1, __LINE__);
    CHECK_OK(dt_ndarray_cast(u, b));
    expect_values(u, DT_UINT8, &x, 1, __LINE__);
    put(u, DT_UINT8, &y, 1, __LINE__);
    CHECK_OK(dt_ndarray_cast(f, u));
    expect_values(f, DT_FLOAT32, &y, 1, __LINE__);
    dt_ndarray_free(b);
    dt_ndarray_free(u);
    dt_ndarray_free(f);
  }
  {
    const int64_t big = INT64_C(9007199254740992); /* 2^53 */
    double got = 0;
    dt_ndarray *i = make(DT_INT64, d1, 1), *f = make(DT_FLOAT64, d1, 1);
    CHECK_OK(dt_ndarray_copy_from_host(i, &big, 8));
    CHECK_OK(dt_ndarray_cast(f, i));
    CHECK_OK(dt_ndarray_copy_to_host(&got, 8, f));
    CHECK_EQ_DBL(got, 9007199254740992.0);
    dt_ndarray_free(i);
    dt_ndarray_free(f);
  }
  {
    const double x = 0.1;
    uint16_t h = 0;
    float f32 = 0;
    dt_ndarray *d = make(DT_FLOAT64, d1, 1), *g = make(DT_FLOAT16, d1, 1);
    dt_ndarray *f = make(DT_FLOAT32, d1, 1);
    CHECK_OK(dt_ndarray_copy_from_host(d, &x, 8));
    CHECK_OK(dt_ndarray_cast(g, d));
    CHECK_OK(dt_ndarray_copy_to_host(&h, 2, g));
    CHECK_EQ_U64(h, 0x2E66);
    CHECK_OK(dt_ndarray_cast(f, d));
    CHECK_OK(dt_ndarray_copy_to_host(&f32, 4, f));
    CHECK_EQ_DBL(f32, 0.1f);
    dt_ndarray_free(d);
    dt_ndarray_free(g);
    dt_ndarray_free(f);
  }
}

static void test_cast_errors(void) {
  const int64_t d23[2] = {2, 3}, d32[2] = {3, 2}, d5[1] = {5};
  const double zero[6] = {0, 0, 0, 0, 0, 0};
  dt_ndarray *s = make(DT_FLOAT32, d23, 2);
  dt_ndarray *t = make(DT_INT32, d32, 2);
  dt_ndarray *u = make(DT_FLOAT64, d5, 1);
  dt_ndarray *same = make(DT_FLOAT32, d32, 2);
  put(s, DT_FLOAT32, k_a, 6, __LINE__);
  CHECK_STATUS(dt_ndarray_cast(t, s), DT_ERR_SHAPE_MISMATCH);
  CHECK_STATUS(dt_ndarray_cast(u, s), DT_ERR_SHAPE_MISMATCH);
  CHECK_STATUS(dt_ndarray_cast(same, s), DT_ERR_SHAPE_MISMATCH);
  CHECK_STATUS(dt_ndarray_cast(NULL, s), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_ndarray_cast(t, NULL), DT_ERR_INVALID_ARGUMENT);
  expect_values(t, DT_INT32, zero, 6, __LINE__);
  expect_values(same, DT_FLOAT32, zero, 6, __LINE__);
  /* Same dtype: a copy. */
  {
    dt_ndarray *c = make(DT_FLOAT32, d23, 2);
    CHECK_OK(dt_ndarray_cast(c, s));
    expect_values(c, DT_FLOAT32, k_a, 6, __LINE__);
    dt_ndarray_free(c);
  }
  dt_ndarray_free(s);
  dt_ndarray_free(t);
  dt_ndarray_free(u);
  dt_ndarray_free(same);
}

int main(void) {
  if (dt_context_create(&g_ctx, DT_DEVICE_CPU, 0) != DT_OK) {
    fprintf(stderr, "cannot create a CPU context: %s\n", dt_last_error());
    printf("0 passed, 1 failed\n");
    return 1;
  }
  test_arith_float();
  test_arith_rounding();
  test_arith_int_not_supported();
  test_arith_mismatch();
  test_arith_views();
  test_cast_all_pairs();
  test_cast_values();
  test_cast_errors();
  dt_context_free(g_ctx);
  return capi_finish();
}
