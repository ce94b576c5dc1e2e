/*
 * NDArrays: creation, queries, host copies, copy, fill, reshape, slice.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capi_check.h"

static dt_context *g_ctx;

static const dt_dtype k_dtypes[7] = {DT_FLOAT32, DT_FLOAT16, DT_BFLOAT16,
                                     DT_FLOAT64, DT_INT32,   DT_INT64,
                                     DT_UINT8};
static const size_t k_sizes[7] = {4, 2, 2, 8, 4, 8, 1};

static void expect_untouched_arr(dt_ndarray *a, int line) {
  if (!capi_check_impl(a == CAPI_SENTINEL(dt_ndarray), __FILE__, line,
                       "out-parameter dt_ndarray* left untouched")) {
    if (a != NULL) dt_ndarray_free(a);
  }
}

/* Creates an array, counting a failure (and returning NULL) if it fails. */
static dt_ndarray *make(dt_dtype dtype, const int64_t *dims, size_t ndim) {
  dt_ndarray *a = NULL;
  if (!CHECK_OK(dt_ndarray_create(&a, g_ctx, dtype, dims, ndim))) return NULL;
  return a;
}

static void check_shape(const dt_ndarray *a, const int64_t *dims, size_t ndim,
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

static uint16_t u16_at(const unsigned char *p) {
  uint16_t v;
  memcpy(&v, p, 2);
  return v;
}

/* ------------------------------------------------------------------------ */

static void test_create_ndims(void) {
  int64_t dims[DT_MAX_NDIM + 1];
  size_t ndim, i, k;
  unsigned char buf[256 * 8 + 1];

  for (i = 0; i < DT_MAX_NDIM + 1; i++) dims[i] = 2;
  for (k = 0; k < 7; k++) {
    for (ndim = 0; ndim <= DT_MAX_NDIM; ndim++) {
      dt_ndarray *a = make(k_dtypes[k], dims, ndim);
      size_t n = 0, nb = 0, nd = 99;
      dt_dtype dt = (dt_dtype)99;
      size_t expect_n = (size_t)1 << ndim;
      if (a == NULL) continue;
      CHECK_OK(dt_ndarray_ndim(&nd, a));
      CHECK_EQ_U64(nd, ndim);
      check_shape(a, dims, ndim, __LINE__);
      CHECK_OK(dt_ndarray_dtype(&dt, a));
      CHECK_EQ_I64(dt, k_dtypes[k]);
      CHECK_OK(dt_ndarray_size(&n, a));
      CHECK_EQ_U64(n, expect_n);
      CHECK_OK(dt_ndarray_nbytes(&nb, a));
      CHECK_EQ_U64(nb, expect_n * k_sizes[k]);
      /* Zero-filled. */
      memset(buf, 0xFF, sizeof buf);
      if (CHECK_OK(dt_ndarray_copy_to_host(buf, nb, a))) {
        for (i = 0; i < nb && buf[i] == 0; i++) {
        }
        CHECK(i == nb);
        CHECK(buf[nb] == 0xFF);
      }
      dt_ndarray_free(a);
    }
  }

  /* A scalar with dims NULL: one element. */
  {
    dt_ndarray *a = make(DT_FLOAT64, NULL, 0);
    size_t n = 0, nb = 0, nd = 7;
    double v = 5.0;
    CHECK_OK(dt_ndarray_ndim(&nd, a));
    CHECK_EQ_U64(nd, 0);
    CHECK_OK(dt_ndarray_size(&n, a));
    CHECK_EQ_U64(n, 1);
    CHECK_OK(dt_ndarray_nbytes(&nb, a));
    CHECK_EQ_U64(nb, 8);
    CHECK_OK(dt_ndarray_copy_to_host(&v, sizeof v, a));
    CHECK_EQ_DBL(v, 0.0);
    /* Shape of a scalar with capacity 0 writes nothing. */
    dims[0] = 42;
    CHECK_OK(dt_ndarray_shape(dims, 0, a));
    CHECK_EQ_I64(dims[0], 42);
    dt_ndarray_free(a);
  }
}

static void test_create_bad(void) {
  dt_ndarray *a;
  int64_t dims9[DT_MAX_NDIM + 1];
  size_t i;
  const int64_t neg[2] = {3, -1};
  const int64_t neg_big[1] = {INT64_MIN};
  const int64_t over1[2] = {INT64_MAX, 2};
  const int64_t over2[2] = {(int64_t)1 << 40, (int64_t)1 << 40};
  const int64_t over3[1] = {(int64_t)1 << 62}; /* bytes overflow for F32 */
  const int64_t over4[2] = {2, INT64_MAX};
  const int64_t over5[3] = {INT64_MAX, INT64_MAX, INT64_MAX};
  const int64_t ok_dims[1] = {4};

  for (i = 0; i < DT_MAX_NDIM + 1; i++) dims9[i] = 1;

  CHECK_STATUS(dt_ndarray_create(NULL, g_ctx, DT_FLOAT32, ok_dims, 1),
               DT_ERR_INVALID_ARGUMENT);

  a = CAPI_SENTINEL(dt_ndarray);
  CHECK_STATUS(dt_ndarray_create(&a, NULL, DT_FLOAT32, ok_dims, 1),
               DT_ERR_INVALID_ARGUMENT);
  expect_untouched_arr(a, __LINE__);

  a = CAPI_SENTINEL(dt_ndarray);
  CHECK_STATUS(dt_ndarray_create(&a, g_ctx, DT_FLOAT32, dims9, 9),
               DT_ERR_INVALID_ARGUMENT);
  expect_untouched_arr(a, __LINE__);

  a = CAPI_SENTINEL(dt_ndarray);
  CHECK_STATUS(dt_ndarray_create(&a, g_ctx, DT_FLOAT32, dims9, 1000),
               DT_ERR_INVALID_ARGUMENT);
  expect_untouched_arr(a, __LINE__);

  a = CAPI_SENTINEL(dt_ndarray);
  CHECK_STATUS(dt_ndarray_create(&a, g_ctx, DT_FLOAT32, neg, 2),
               DT_ERR_INVALID_ARGUMENT);
  expect_untouched_arr(a, __LINE__);

  a = CAPI_SENTINEL(dt_ndarray);
  CHECK_STATUS(dt_ndarray_create(&a, g_ctx, DT_FLOAT32, neg_big, 1),
               DT_ERR_INVALID_ARGUMENT);
  expect_untouched_arr(a, __LINE__);

  a = CAPI_SENTINEL(dt_ndarray);
  CHECK_STATUS(dt_ndarray_create(&a, g_ctx, DT_FLOAT32, over1, 2),
               DT_ERR_INVALID_ARGUMENT);
  expect_untouched_arr(a, __LINE__);

  a = CAPI_SENTINEL(dt_ndarray);
  CHECK_STATUS(dt_ndarray_create(&a, g_ctx, DT_FLOAT32, over2, 2),
               DT_ERR_INVALID_ARGUMENT);
  expect_untouched_arr(a, __LINE__);

  a = CAPI_SENTINEL(dt_ndarray);
  CHECK_STATUS(dt_ndarray_create(&a, g_ctx, DT_UINT8, over2, 2),
               DT_ERR_INVALID_ARGUMENT);
  expect_untouched_arr(a, __LINE__);

  a = CAPI_SENTINEL(dt_ndarray);
  CHECK_STATUS(dt_ndarray_create(&a, g_ctx, DT_FLOAT32, over3, 1),
               DT_ERR_INVALID_ARGUMENT);
  expect_untouched_arr(a, __LINE__);

  a = CAPI_SENTINEL(dt_ndarray);
  CHECK_STATUS(dt_ndarray_create(&a, g_ctx, DT_FLOAT64, over4, 2),
               DT_ERR_INVALID_ARGUMENT);
  expect_untouched_arr(a, __LINE__);

  a = CAPI_SENTINEL(dt_ndarray);
  CHECK_STATUS(dt_ndarray_create(&a, g_ctx, DT_INT64, over5, 3),
               DT_ERR_INVALID_ARGUMENT);
  expect_untouched_arr(a, __LINE__);

  a = CAPI_SENTINEL(dt_ndarray);
  CHECK_STATUS(dt_ndarray_create(&a, g_ctx, DT_FLOAT32, NULL, 2),
               DT_ERR_INVALID_ARGUMENT);
  expect_untouched_arr(a, __LINE__);

  a = CAPI_SENTINEL(dt_ndarray);
  CHECK_STATUS(dt_ndarray_create(&a, g_ctx, (dt_dtype)7, ok_dims, 1),
               DT_ERR_INVALID_ARGUMENT);
  expect_untouched_arr(a, __LINE__);

  a = CAPI_SENTINEL(dt_ndarray);
  CHECK_STATUS(dt_ndarray_create(&a, g_ctx, (dt_dtype)99, ok_dims, 1),
               DT_ERR_INVALID_ARGUMENT);
  expect_untouched_arr(a, __LINE__);

  a = CAPI_SENTINEL(dt_ndarray);
  CHECK_STATUS(dt_ndarray_create(&a, g_ctx, (dt_dtype)-1, ok_dims, 1),
               DT_ERR_INVALID_ARGUMENT);
  expect_untouched_arr(a, __LINE__);
}

static void test_zero_size(void) {
  static const int64_t shapes[3][2] = {{0, 0}, {3, 0}, {0, 5}};
  size_t k, nb, n;
  unsigned char byte = 0xEE;
  for (k = 0; k < 3; k++) {
    dt_ndarray *a = make(DT_FLOAT32, shapes[k], 2);
    dt_ndarray *b = make(DT_FLOAT32, shapes[k], 2);
    n = 9;
    nb = 9;
    CHECK_OK(dt_ndarray_size(&n, a));
    CHECK_EQ_U64(n, 0);
    CHECK_OK(dt_ndarray_nbytes(&nb, a));
    CHECK_EQ_U64(nb, 0);
    check_shape(a, shapes[k], 2, __LINE__);
    CHECK_OK(dt_ndarray_copy_to_host(&byte, 0, a));
    CHECK_OK(dt_ndarray_copy_from_host(a, &byte, 0));
    CHECK_EQ_U64(byte, 0xEE);
    CHECK_STATUS(dt_ndarray_copy_to_host(&byte, 1, a), DT_ERR_SHAPE_MISMATCH);
    CHECK_OK(dt_ndarray_fill(a, 3.0));
    CHECK_OK(dt_ndarray_copy(b, a));
    CHECK_OK(dt_ndarray_add(b, a, b));
    CHECK_OK(dt_ndarray_scale(b, 2.0));
    CHECK_OK(dt_ndarray_axpy(b, 2.0, a));
    dt_ndarray_free(a);
    dt_ndarray_free(b);
  }
  /* One dim of zero among eight. */
  {
    const int64_t d8[8] = {2, 2, 2, 0, 2, 2, 2, 2};
    dt_ndarray *a = make(DT_UINT8, d8, 8);
    n = 9;
    CHECK_OK(dt_ndarray_size(&n, a));
    CHECK_EQ_U64(n, 0);
    dt_ndarray_free(a);
  }
}

static void test_queries_bad(void) {
  const int64_t dims[3] = {2, 3, 4};
  dt_ndarray *a = make(DT_INT32, dims, 3);
  size_t sz = 1234;
  int64_t shape[3] = {-7, -7, -7};
  dt_dtype dt = (dt_dtype)42;
  dt_context *c;

  CHECK_STATUS(dt_ndarray_ndim(NULL, a), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_ndarray_ndim(&sz, NULL), DT_ERR_INVALID_ARGUMENT);
  CHECK_EQ_U64(sz, 1234);
  CHECK_STATUS(dt_ndarray_shape(NULL, 3, a), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_ndarray_shape(shape, 3, NULL), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_ndarray_shape(shape, 2, a), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_ndarray_shape(shape, 0, a), DT_ERR_INVALID_ARGUMENT);
  CHECK(shape[0] == -7 && shape[1] == -7 && shape[2] == -7);
  CHECK_OK(dt_ndarray_shape(shape, 3, a));
  CHECK(shape[0] == 2 && shape[1] == 3 && shape[2] == 4);
  CHECK_STATUS(dt_ndarray_dtype(NULL, a), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_ndarray_dtype(&dt, NULL), DT_ERR_INVALID_ARGUMENT);
  CHECK_EQ_I64(dt, 42);
  CHECK_STATUS(dt_ndarray_size(NULL, a), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_ndarray_size(&sz, NULL), DT_ERR_INVALID_ARGUMENT);
  CHECK_EQ_U64(sz, 1234);
  CHECK_STATUS(dt_ndarray_nbytes(NULL, a), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_ndarray_nbytes(&sz, NULL), DT_ERR_INVALID_ARGUMENT);
  CHECK_EQ_U64(sz, 1234);
  CHECK_STATUS(dt_ndarray_context(NULL, a), DT_ERR_INVALID_ARGUMENT);
  c = CAPI_SENTINEL(dt_context);
  CHECK_STATUS(dt_ndarray_context(&c, NULL), DT_ERR_INVALID_ARGUMENT);
  CHECK(c == CAPI_SENTINEL(dt_context));

  /* context: a new handle, right type and id, independent of g_ctx. */
  c = NULL;
  if (CHECK_OK(dt_ndarray_context(&c, a))) {
    dt_device_type t = (dt_device_type)0;
    int32_t id = -1;
    dt_context *c2 = NULL;
    CHECK(c != NULL && c != g_ctx);
    CHECK_OK(dt_context_device_type(&t, c));
    CHECK_EQ_I64(t, DT_DEVICE_CPU);
    CHECK_OK(dt_context_device_id(&id, c));
    CHECK_EQ_I64(id, 0);
    CHECK_OK(dt_ndarray_context(&c2, a));
    CHECK(c2 != c);
    dt_context_free(c);
    /* The other handle is unaffected. */
    CHECK_OK(dt_context_device_type(&t, c2));
    dt_context_free(c2);
  }
  dt_ndarray_free(a);
}

static void test_host_copies(void) {
  const int64_t dims[2] = {3, 5};
  size_t k, i;
  unsigned char src[15 * 8], dst[15 * 8 + 1];

  for (k = 0; k < 7; k++) {
    dt_ndarray *a = make(k_dtypes[k], dims, 2);
    size_t nb = 15 * k_sizes[k];
    for (i = 0; i < sizeof src; i++)
      src[i] = (unsigned char)((i * 131u + k * 17u + 7u) & 0xFFu);
    /* Wrong sizes: rejected; the array stays zero. */
    CHECK_STATUS(dt_ndarray_copy_from_host(a, src, nb - 1),
                 DT_ERR_SHAPE_MISMATCH);
    CHECK_STATUS(dt_ndarray_copy_from_host(a, src, nb + 1),
                 DT_ERR_SHAPE_MISMATCH);
    CHECK_STATUS(dt_ndarray_copy_from_host(a, src, 0), DT_ERR_SHAPE_MISMATCH);
    CHECK_STATUS(dt_ndarray_copy_from_host(a, NULL, nb),
                 DT_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(dt_ndarray_copy_from_host(NULL, src, nb),
                 DT_ERR_INVALID_ARGUMENT);
    memset(dst, 0x5A, sizeof dst);
    CHECK_STATUS(dt_ndarray_copy_to_host(dst, nb - 1, a),
                 DT_ERR_SHAPE_MISMATCH);
    CHECK_STATUS(dt_ndarray_copy_to_host(dst, nb + 1, a),
                 DT_ERR_SHAPE_MISMATCH);
    CHECK_STATUS(dt_ndarray_copy_to_host(dst, 0, a), DT_ERR_SHAPE_MISMATCH);
    CHECK_STATUS(dt_ndarray_copy_to_host(NULL, nb, a),
                 DT_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(dt_ndarray_copy_to_host(dst, nb, NULL),
                 DT_ERR_INVALID_ARGUMENT);
    for (i = 0; i < sizeof dst && dst[i] == 0x5A; i++) {
    }
    CHECK(i == sizeof dst); /* untouched */
    CHECK_OK(dt_ndarray_copy_to_host(dst, nb, a));
    for (i = 0; i < nb && dst[i] == 0; i++) {
    }
    CHECK(i == nb); /* failed copies wrote nothing */
    /* Exact-byte round trip, NaN patterns included. */
    CHECK_OK(dt_ndarray_copy_from_host(a, src, nb));
    memset(dst, 0x5A, sizeof dst);
    CHECK_OK(dt_ndarray_copy_to_host(dst, nb, a));
    CHECK(memcmp(src, dst, nb) == 0);
    CHECK(dst[nb] == 0x5A);
    dt_ndarray_free(a);
  }
}

static void test_copy(void) {
  const int64_t d23[2] = {2, 3}, d32[2] = {3, 2}, d6[1] = {6}, d24[2] = {2, 4};
  const float vals[6] = {1.f, -2.f, 3.5f, 4.f, 5.f, -6.25f};
  float out[6];
  dt_ndarray *a = make(DT_FLOAT32, d23, 2);
  dt_ndarray *b = make(DT_FLOAT32, d23, 2);
  dt_ndarray *c = make(DT_FLOAT32, d32, 2);
  dt_ndarray *d = make(DT_FLOAT32, d6, 1);
  dt_ndarray *e = make(DT_FLOAT64, d23, 2);
  dt_ndarray *f = make(DT_FLOAT32, d24, 2);
  dt_ndarray *g = make(DT_INT32, d23, 2);
  size_t i;

  CHECK_OK(dt_ndarray_copy_from_host(a, vals, sizeof vals));
  CHECK_OK(dt_ndarray_copy(b, a));
  memset(out, 0, sizeof out);
  CHECK_OK(dt_ndarray_copy_to_host(out, sizeof out, b));
  CHECK(memcmp(out, vals, sizeof vals) == 0);
  CHECK_OK(dt_ndarray_copy(a, a)); /* self copy */
  CHECK_OK(dt_ndarray_copy_to_host(out, sizeof out, a));
  CHECK(memcmp(out, vals, sizeof vals) == 0);

  CHECK_STATUS(dt_ndarray_copy(c, a), DT_ERR_SHAPE_MISMATCH);
  CHECK_STATUS(dt_ndarray_copy(d, a), DT_ERR_SHAPE_MISMATCH);
  CHECK_STATUS(dt_ndarray_copy(f, a), DT_ERR_SHAPE_MISMATCH);
  CHECK_STATUS(dt_ndarray_copy(a, f), DT_ERR_SHAPE_MISMATCH);
  CHECK_STATUS(dt_ndarray_copy(e, a), DT_ERR_DTYPE_MISMATCH);
  CHECK_STATUS(dt_ndarray_copy(a, e), DT_ERR_DTYPE_MISMATCH);
  CHECK_STATUS(dt_ndarray_copy(g, a), DT_ERR_DTYPE_MISMATCH);
  CHECK_STATUS(dt_ndarray_copy(NULL, a), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_ndarray_copy(a, NULL), DT_ERR_INVALID_ARGUMENT);
  /* Failed copies left the destinations zero. */
  CHECK_OK(dt_ndarray_copy_to_host(out, sizeof out, c));
  for (i = 0; i < 6; i++) CHECK_EQ_DBL(out[i], 0.0);
  CHECK_OK(dt_ndarray_copy_to_host(out, sizeof out, d));
  for (i = 0; i < 6; i++) CHECK_EQ_DBL(out[i], 0.0);

  dt_ndarray_free(a);
  dt_ndarray_free(b);
  dt_ndarray_free(c);
  dt_ndarray_free(d);
  dt_ndarray_free(e);
  dt_ndarray_free(f);
  dt_ndarray_free(g);
}

/* Fills a 4-element array of dtype and returns element 0's bytes. */
static void fill_bytes(unsigned char *out4, dt_dtype dtype, double value,
                       dt_status expect, int line) {
  const int64_t dims[1] = {4};
  dt_ndarray *a = make(dtype, dims, 1);
  unsigned char buf[32];
  size_t es = 0, i;
  int same = 1;
  dt_dtype_size(&es, dtype);
  capi_check_status_impl(dt_ndarray_fill(a, value), expect, __FILE__, line,
                         "dt_ndarray_fill(a, value)");
  memset(buf, 0xEE, sizeof buf);
  dt_ndarray_copy_to_host(buf, 4 * es, a);
  for (i = 1; i < 4; i++) same = same && memcmp(buf, buf + i * es, es) == 0;
  capi_check_impl(same, __FILE__, line, "every element filled alike");
  memcpy(out4, buf, es);
  dt_ndarray_free(a);
}

static void test_fill(void) {
  unsigned char b[8];
  float f;
  double d;
  int32_t i32;
  int64_t i64;
  uint16_t h;

  fill_bytes(b, DT_FLOAT32, 1.5, DT_OK, __LINE__);
  memcpy(&f, b, 4);
  CHECK_EQ_DBL(f, 1.5f);
  fill_bytes(b, DT_FLOAT32, 0.1, DT_OK, __LINE__);
  memcpy(&f, b, 4);
  CHECK_EQ_DBL(f, 0.1f);
  /* A finite value past the dtype's range is an error, not a silent inf
   * (the array keeps its zeros); an infinity is stored as one. */
  fill_bytes(b, DT_FLOAT32, 1e39, DT_ERR_INVALID_ARGUMENT, __LINE__);
  memcpy(&f, b, 4);
  CHECK_EQ_DBL(f, 0.0f);
  fill_bytes(b, DT_FLOAT32, -1e300, DT_ERR_INVALID_ARGUMENT, __LINE__);
  fill_bytes(b, DT_FLOAT32, INFINITY, DT_OK, __LINE__);
  memcpy(&f, b, 4);
  CHECK(isinf(f) && f > 0);
  fill_bytes(b, DT_FLOAT32, NAN, DT_OK, __LINE__);
  memcpy(&f, b, 4);
  CHECK(f != f);

  fill_bytes(b, DT_FLOAT64, 0.1, DT_OK, __LINE__);
  memcpy(&d, b, 8);
  CHECK_EQ_DBL(d, 0.1);
  fill_bytes(b, DT_FLOAT64, -1e300, DT_OK, __LINE__);
  memcpy(&d, b, 8);
  CHECK_EQ_DBL(d, -1e300);

  fill_bytes(b, DT_FLOAT16, 1.5, DT_OK, __LINE__);
  CHECK_EQ_U64(u16_at(b), 0x3E00);
  fill_bytes(b, DT_FLOAT16, -2.0, DT_OK, __LINE__);
  CHECK_EQ_U64(u16_at(b), 0xC000);
  fill_bytes(b, DT_FLOAT16, 65504.0, DT_OK, __LINE__);
  CHECK_EQ_U64(u16_at(b), 0x7BFF);
  fill_bytes(b, DT_FLOAT16, 0.1, DT_OK, __LINE__);
  CHECK_EQ_U64(u16_at(b), 0x2E66);
  fill_bytes(b, DT_FLOAT16, 5.960464477539063e-08, DT_OK, __LINE__); /* 2^-24 */
  CHECK_EQ_U64(u16_at(b), 0x0001);
  fill_bytes(b, DT_FLOAT16, 1e10, DT_ERR_INVALID_ARGUMENT, __LINE__);
  fill_bytes(b, DT_FLOAT16, 65520.0, DT_ERR_INVALID_ARGUMENT, __LINE__); /* rounds to inf */
  fill_bytes(b, DT_FLOAT16, -INFINITY, DT_OK, __LINE__);
  CHECK_EQ_U64(u16_at(b), 0xFC00);
  fill_bytes(b, DT_FLOAT16, 0.0, DT_OK, __LINE__);
  CHECK_EQ_U64(u16_at(b), 0x0000);
  fill_bytes(b, DT_FLOAT16, NAN, DT_OK, __LINE__);
  h = u16_at(b);
  CHECK((h & 0x7C00) == 0x7C00 && (h & 0x03FF) != 0);

  fill_bytes(b, DT_BFLOAT16, 1.5, DT_OK, __LINE__);
  CHECK_EQ_U64(u16_at(b), 0x3FC0);
  fill_bytes(b, DT_BFLOAT16, -2.0, DT_OK, __LINE__);
  CHECK_EQ_U64(u16_at(b), 0xC000);
  fill_bytes(b, DT_BFLOAT16, 0.1, DT_OK, __LINE__);
  CHECK_EQ_U64(u16_at(b), 0x3DCD); /* rounded to nearest, not truncated */
  fill_bytes(b, DT_BFLOAT16, 1.0, DT_OK, __LINE__);
  CHECK_EQ_U64(u16_at(b), 0x3F80);
  fill_bytes(b, DT_BFLOAT16, 1e39, DT_ERR_INVALID_ARGUMENT, __LINE__);
  fill_bytes(b, DT_BFLOAT16, NAN, DT_OK, __LINE__);
  h = u16_at(b);
  CHECK((h & 0x7F80) == 0x7F80 && (h & 0x007F) != 0);

  fill_bytes(b, DT_INT32, 7.0, DT_OK, __LINE__);
  memcpy(&i32, b, 4);
  CHECK_EQ_I64(i32, 7);
  fill_bytes(b, DT_INT32, -3.0, DT_OK, __LINE__);
  memcpy(&i32, b, 4);
  CHECK_EQ_I64(i32, -3);
  fill_bytes(b, DT_INT32, 2.7, DT_OK, __LINE__); /* nearest */
  memcpy(&i32, b, 4);
  CHECK_EQ_I64(i32, 3);
  fill_bytes(b, DT_INT32, -2.7, DT_OK, __LINE__);
  memcpy(&i32, b, 4);
  CHECK_EQ_I64(i32, -3);
  fill_bytes(b, DT_INT32, 2147483647.0, DT_OK, __LINE__);
  memcpy(&i32, b, 4);
  CHECK_EQ_I64(i32, INT32_MAX);
  fill_bytes(b, DT_INT32, -2147483648.0, DT_OK, __LINE__);
  memcpy(&i32, b, 4);
  CHECK_EQ_I64(i32, INT32_MIN);

  fill_bytes(b, DT_INT64, 1e18, DT_OK, __LINE__);
  memcpy(&i64, b, 8);
  CHECK_EQ_I64(i64, INT64_C(1000000000000000000));
  fill_bytes(b, DT_INT64, -9223372036854775808.0, DT_OK, __LINE__);
  memcpy(&i64, b, 8);
  CHECK_EQ_I64(i64, INT64_MIN);
  fill_bytes(b, DT_INT64, -5.0, DT_OK, __LINE__);
  memcpy(&i64, b, 8);
  CHECK_EQ_I64(i64, -5);

  fill_bytes(b, DT_UINT8, 255.0, DT_OK, __LINE__);
  CHECK_EQ_U64(b[0], 255);
  fill_bytes(b, DT_UINT8, 0.0, DT_OK, __LINE__);
  CHECK_EQ_U64(b[0], 0);
  fill_bytes(b, DT_UINT8, 17.0, DT_OK, __LINE__);
  CHECK_EQ_U64(b[0], 17);

  /* Out of range, NaN and infinity into integers: rejected, unchanged. */
  {
    static const struct {
      dt_dtype dtype;
      double value;
    } bad[] = {
        {DT_UINT8, 300.0},          {DT_UINT8, 256.0},
        {DT_UINT8, -1.0},           {DT_UINT8, NAN},
        {DT_UINT8, INFINITY},       {DT_INT32, 1e30},
        {DT_INT32, 2147483648.0},   {DT_INT32, -2147483649.0},
        {DT_INT32, NAN},            {DT_INT32, -INFINITY},
        {DT_INT64, 9.3e18},         {DT_INT64, 9223372036854775808.0},
        {DT_INT64, -1e19},          {DT_INT64, NAN},
        {DT_INT64, INFINITY},
    };
    const int64_t dims[1] = {3};
    size_t k;
    for (k = 0; k < sizeof bad / sizeof bad[0]; k++) {
      dt_ndarray *a = make(bad[k].dtype, dims, 1);
      unsigned char buf[24];
      size_t i, es = 0;
      dt_dtype_size(&es, bad[k].dtype);
      CHECK_OK(dt_ndarray_fill(a, 1.0));
      if (!CHECK_STATUS(dt_ndarray_fill(a, bad[k].value),
                        DT_ERR_INVALID_ARGUMENT)) {
        fprintf(stderr, "  dtype %s, value %g\n", dt_dtype_name(bad[k].dtype),
                bad[k].value);
      }
      memset(buf, 0, sizeof buf);
      CHECK_OK(dt_ndarray_copy_to_host(buf, 3 * es, a));
      for (i = 0; i < 3; i++) {
        int64_t v = 0;
        if (es == 1) v = buf[i];
        if (es == 4) {
          memcpy(&i32, buf + 4 * i, 4);
          v = i32;
        }
        if (es == 8) memcpy(&v, buf + 8 * i, 8);
        CHECK_EQ_I64(v, 1); /* unchanged by the failed fill */
      }
      dt_ndarray_free(a);
    }
  }
  CHECK_STATUS(dt_ndarray_fill(NULL, 1.0), DT_ERR_INVALID_ARGUMENT);
}

static void test_reshape(void) {
  const int64_t d234[3] = {2, 3, 4};
  int32_t host[24], out[24];
  dt_ndarray *a = make(DT_INT32, d234, 3);
  dt_ndarray *v;
  size_t i;

  for (i = 0; i < 24; i++) host[i] = (int32_t)i;
  CHECK_OK(dt_ndarray_copy_from_host(a, host, sizeof host));

  {
    const int64_t d[2] = {6, 4}, e[2] = {6, 4};
    v = NULL;
    CHECK_OK(dt_ndarray_reshape(&v, a, d, 2));
    check_shape(v, e, 2, __LINE__);
    memset(out, 0, sizeof out);
    CHECK_OK(dt_ndarray_copy_to_host(out, sizeof out, v));
    CHECK(memcmp(out, host, sizeof host) == 0);
    dt_ndarray_free(v);
  }
  {
    const int64_t d[2] = {-1, 4}, e[2] = {6, 4};
    v = NULL;
    CHECK_OK(dt_ndarray_reshape(&v, a, d, 2));
    check_shape(v, e, 2, __LINE__);
    dt_ndarray_free(v);
  }
  {
    const int64_t d[3] = {2, -1, 2}, e[3] = {2, 6, 2};
    v = NULL;
    CHECK_OK(dt_ndarray_reshape(&v, a, d, 3));
    check_shape(v, e, 3, __LINE__);
    dt_ndarray_free(v);
  }
  {
    const int64_t d[1] = {-1}, e[1] = {24};
    v = NULL;
    CHECK_OK(dt_ndarray_reshape(&v, a, d, 1));
    check_shape(v, e, 1, __LINE__);
    dt_ndarray_free(v);
  }
  {
    const int64_t d[8] = {1, 2, 1, 3, 1, 4, 1, 1};
    v = NULL;
    CHECK_OK(dt_ndarray_reshape(&v, a, d, 8));
    check_shape(v, d, 8, __LINE__);
    dt_ndarray_free(v);
  }
  /* Bad reshapes: out untouched. */
  {
    const int64_t two_neg[3] = {-1, -1, 4};
    const int64_t count[2] = {5, 5};
    const int64_t count2[1] = {25};
    const int64_t neg2[2] = {-2, -12};
    const int64_t nine[9] = {1, 1, 1, 1, 1, 2, 3, 4, 1};
    const int64_t indiv[2] = {5, -1};
    const int64_t zero[2] = {0, 24};
    const int64_t ok[1] = {24};

    CHECK_STATUS(dt_ndarray_reshape(NULL, a, ok, 1), DT_ERR_INVALID_ARGUMENT);
    v = CAPI_SENTINEL(dt_ndarray);
    CHECK_STATUS(dt_ndarray_reshape(&v, NULL, ok, 1), DT_ERR_INVALID_ARGUMENT);
    expect_untouched_arr(v, __LINE__);
    v = CAPI_SENTINEL(dt_ndarray);
    CHECK_STATUS(dt_ndarray_reshape(&v, a, NULL, 1), DT_ERR_INVALID_ARGUMENT);
    expect_untouched_arr(v, __LINE__);
    v = CAPI_SENTINEL(dt_ndarray);
    CHECK_STATUS(dt_ndarray_reshape(&v, a, two_neg, 3),
                 DT_ERR_INVALID_ARGUMENT);
    expect_untouched_arr(v, __LINE__);
    v = CAPI_SENTINEL(dt_ndarray);
    CHECK_STATUS(dt_ndarray_reshape(&v, a, count, 2), DT_ERR_SHAPE_MISMATCH);
    expect_untouched_arr(v, __LINE__);
    v = CAPI_SENTINEL(dt_ndarray);
    CHECK_STATUS(dt_ndarray_reshape(&v, a, count2, 1), DT_ERR_SHAPE_MISMATCH);
    expect_untouched_arr(v, __LINE__);
    v = CAPI_SENTINEL(dt_ndarray);
    CHECK_STATUS(dt_ndarray_reshape(&v, a, zero, 2), DT_ERR_SHAPE_MISMATCH);
    expect_untouched_arr(v, __LINE__);
    v = CAPI_SENTINEL(dt_ndarray);
    CHECK_STATUS(dt_ndarray_reshape(&v, a, neg2, 2), DT_ERR_INVALID_ARGUMENT);
    expect_untouched_arr(v, __LINE__);
    v = CAPI_SENTINEL(dt_ndarray);
    CHECK_STATUS(dt_ndarray_reshape(&v, a, nine, 9), DT_ERR_INVALID_ARGUMENT);
    expect_untouched_arr(v, __LINE__);
    /* 24 is not a multiple of 5: no -1 fits. Header does not say which. */
    v = CAPI_SENTINEL(dt_ndarray);
    CHECK_STATUS2(dt_ndarray_reshape(&v, a, indiv, 2), DT_ERR_SHAPE_MISMATCH,
                  DT_ERR_INVALID_ARGUMENT);
    expect_untouched_arr(v, __LINE__);
    /* A scalar shape for 24 elements. */
    v = CAPI_SENTINEL(dt_ndarray);
    CHECK_STATUS(dt_ndarray_reshape(&v, a, NULL, 0), DT_ERR_SHAPE_MISMATCH);
    expect_untouched_arr(v, __LINE__);
  }

  /* View semantics both ways; the view outlives its parent. */
  {
    const int64_t d[2] = {4, 6};
    int32_t seven[24];
    v = NULL;
    CHECK_OK(dt_ndarray_reshape(&v, a, d, 2));
    CHECK_OK(dt_ndarray_fill(v, 9.0));
    CHECK_OK(dt_ndarray_copy_to_host(out, sizeof out, a));
    for (i = 0; i < 24; i++) CHECK_EQ_I64(out[i], 9);
    for (i = 0; i < 24; i++) seven[i] = (int32_t)(100 + i);
    CHECK_OK(dt_ndarray_copy_from_host(a, seven, sizeof seven));
    CHECK_OK(dt_ndarray_copy_to_host(out, sizeof out, v));
    CHECK(memcmp(out, seven, sizeof seven) == 0);
    dt_ndarray_free(a);
    a = NULL;
    memset(out, 0, sizeof out);
    CHECK_OK(dt_ndarray_copy_to_host(out, sizeof out, v));
    CHECK(memcmp(out, seven, sizeof seven) == 0);
    /* A reshape of a reshape still shares the storage. */
    {
      const int64_t d2[1] = {24};
      dt_ndarray *w = NULL;
      CHECK_OK(dt_ndarray_reshape(&w, v, d2, 1));
      dt_ndarray_free(v);
      v = NULL;
      CHECK_OK(dt_ndarray_fill(w, -4.0));
      CHECK_OK(dt_ndarray_copy_to_host(out, sizeof out, w));
      for (i = 0; i < 24; i++) CHECK_EQ_I64(out[i], -4);
      dt_ndarray_free(w);
    }
  }

  /* Scalar <-> one-element shapes; zero-size reshape. */
  {
    const int64_t one[3] = {1, 1, 1};
    const int64_t d03[2] = {0, 3}, d30[2] = {3, 0};
    dt_ndarray *s = make(DT_FLOAT64, NULL, 0);
    dt_ndarray *z = make(DT_FLOAT32, d03, 2);
    v = NULL;
    CHECK_OK(dt_ndarray_reshape(&v, s, one, 3));
    check_shape(v, one, 3, __LINE__);
    dt_ndarray_free(v);
    v = NULL;
    CHECK_OK(dt_ndarray_reshape(&v, s, NULL, 0));
    check_shape(v, one, 0, __LINE__);
    dt_ndarray_free(v);
    v = NULL;
    CHECK_OK(dt_ndarray_reshape(&v, z, d30, 2));
    check_shape(v, d30, 2, __LINE__);
    dt_ndarray_free(v);
    dt_ndarray_free(s);
    dt_ndarray_free(z);
  }
}

static void test_slice(void) {
  const int64_t d43[2] = {4, 3};
  int32_t host[12], out[12];
  dt_ndarray *a = make(DT_INT32, d43, 2);
  dt_ndarray *v;
  size_t i;

  for (i = 0; i < 12; i++) host[i] = (int32_t)i;
  CHECK_OK(dt_ndarray_copy_from_host(a, host, sizeof host));

  {
    const int64_t e[2] = {2, 3};
    v = NULL;
    CHECK_OK(dt_ndarray_slice(&v, a, 1, 3));
    check_shape(v, e, 2, __LINE__);
    memset(out, 0, sizeof out);
    CHECK_OK(dt_ndarray_copy_to_host(out, 6 * sizeof(int32_t), v));
    for (i = 0; i < 6; i++) CHECK_EQ_I64(out[i], 3 + i);
    /* Writes through the view land in rows 1..2 only. */
    CHECK_OK(dt_ndarray_fill(v, 77.0));
    CHECK_OK(dt_ndarray_copy_to_host(out, sizeof out, a));
    for (i = 0; i < 12; i++)
      CHECK_EQ_I64(out[i], (i >= 3 && i < 9) ? 77 : (int64_t)i);
    /* Slice of the slice: row 2 of a. */
    {
      dt_ndarray *w = NULL;
      const int64_t e1[2] = {1, 3};
      const int32_t row[3] = {-1, -2, -3};
      CHECK_OK(dt_ndarray_slice(&w, v, 1, 2));
      check_shape(w, e1, 2, __LINE__);
      CHECK_OK(dt_ndarray_copy_from_host(w, row, sizeof row));
      CHECK_OK(dt_ndarray_copy_to_host(out, sizeof out, a));
      CHECK_EQ_I64(out[5], 77);
      CHECK_EQ_I64(out[6], -1);
      CHECK_EQ_I64(out[8], -3);
      CHECK_EQ_I64(out[9], 9);
      dt_ndarray_free(w);
    }
    dt_ndarray_free(v);
  }
  /* Edge bounds. */
  {
    const int64_t e0[2] = {0, 3}, e4[2] = {4, 3};
    size_t n = 99;
    v = NULL;
    CHECK_OK(dt_ndarray_slice(&v, a, 0, 0));
    check_shape(v, e0, 2, __LINE__);
    CHECK_OK(dt_ndarray_size(&n, v));
    CHECK_EQ_U64(n, 0);
    dt_ndarray_free(v);
    v = NULL;
    CHECK_OK(dt_ndarray_slice(&v, a, 4, 4));
    check_shape(v, e0, 2, __LINE__);
    dt_ndarray_free(v);
    v = NULL;
    CHECK_OK(dt_ndarray_slice(&v, a, 0, 4));
    check_shape(v, e4, 2, __LINE__);
    dt_ndarray_free(v);
  }
  /* Bad bounds. */
  {
    static const int64_t bad[][2] = {{3, 1}, {0, 5}, {-1, 2}, {5, 5},
                                     {2, -1}, {INT64_MIN, 0}, {0, INT64_MAX}};
    dt_ndarray *s = make(DT_FLOAT32, NULL, 0);
    size_t k;
    CHECK_STATUS(dt_ndarray_slice(NULL, a, 0, 1), DT_ERR_INVALID_ARGUMENT);
    v = CAPI_SENTINEL(dt_ndarray);
    CHECK_STATUS(dt_ndarray_slice(&v, NULL, 0, 1), DT_ERR_INVALID_ARGUMENT);
    expect_untouched_arr(v, __LINE__);
    for (k = 0; k < sizeof bad / sizeof bad[0]; k++) {
      v = CAPI_SENTINEL(dt_ndarray);
      if (!CHECK_STATUS(dt_ndarray_slice(&v, a, bad[k][0], bad[k][1]),
                        DT_ERR_INVALID_ARGUMENT)) {
        fprintf(stderr, "  begin %lld end %lld\n", (long long)bad[k][0],
                (long long)bad[k][1]);
      }
      expect_untouched_arr(v, __LINE__);
    }
    v = CAPI_SENTINEL(dt_ndarray);
    CHECK_STATUS(dt_ndarray_slice(&v, s, 0, 0), DT_ERR_INVALID_ARGUMENT);
    expect_untouched_arr(v, __LINE__);
    v = CAPI_SENTINEL(dt_ndarray);
    CHECK_STATUS(dt_ndarray_slice(&v, s, 0, 1), DT_ERR_INVALID_ARGUMENT);
    expect_untouched_arr(v, __LINE__);
    dt_ndarray_free(s);
  }
  /* A view keeps the storage after its parent is freed; a reshape of a
   * slice works and shares it too. */
  {
    const int64_t flat[1] = {3};
    dt_ndarray *r = NULL;
    for (i = 0; i < 12; i++) host[i] = (int32_t)(i * 10);
    CHECK_OK(dt_ndarray_copy_from_host(a, host, sizeof host));
    v = NULL;
    CHECK_OK(dt_ndarray_slice(&v, a, 3, 4));
    dt_ndarray_free(a);
    a = NULL;
    CHECK_OK(dt_ndarray_reshape(&r, v, flat, 1));
    memset(out, 0, sizeof out);
    CHECK_OK(dt_ndarray_copy_to_host(out, 3 * sizeof(int32_t), r));
    CHECK_EQ_I64(out[0], 90);
    CHECK_EQ_I64(out[1], 100);
    CHECK_EQ_I64(out[2], 110);
    CHECK_OK(dt_ndarray_fill(r, 5.0));
    CHECK_OK(dt_ndarray_copy_to_host(out, 3 * sizeof(int32_t), v));
    CHECK_EQ_I64(out[0], 5);
    CHECK_EQ_I64(out[2], 5);
    dt_ndarray_free(v);
    dt_ndarray_free(r);
  }
  /* 1-D and zero-size parents. */
  {
    const int64_t d5[1] = {5}, d0[1] = {0}, e2[1] = {2};
    const double vals[5] = {0.5, 1.5, 2.5, 3.5, 4.5};
    double got[2] = {0, 0};
    dt_ndarray *b = make(DT_FLOAT64, d5, 1);
    dt_ndarray *z = make(DT_FLOAT64, d0, 1);
    CHECK_OK(dt_ndarray_copy_from_host(b, vals, sizeof vals));
    v = NULL;
    CHECK_OK(dt_ndarray_slice(&v, b, 3, 5));
    check_shape(v, e2, 1, __LINE__);
    CHECK_OK(dt_ndarray_copy_to_host(got, sizeof got, v));
    CHECK_EQ_DBL(got[0], 3.5);
    CHECK_EQ_DBL(got[1], 4.5);
    dt_ndarray_free(v);
    v = NULL;
    CHECK_OK(dt_ndarray_slice(&v, z, 0, 0));
    check_shape(v, d0, 1, __LINE__);
    dt_ndarray_free(v);
    dt_ndarray_free(b);
    dt_ndarray_free(z);
  }
}

static void test_free(void) {
  const int64_t d[1] = {4};
  dt_ndarray *a = make(DT_FLOAT32, d, 1);
  char before[512];
  size_t n = 31;
  dt_ndarray_free(NULL);
  CHECK_STATUS(dt_ndarray_size(NULL, a), DT_ERR_INVALID_ARGUMENT);
  strncpy(before, dt_last_error(), sizeof before - 1);
  before[sizeof before - 1] = '\0';
  dt_ndarray_free(a);
  dt_ndarray_free(a);
  CHECK_LAST_ERROR();
  CHECK(strcmp(dt_last_error(), before) != 0);
  CHECK_STATUS(dt_ndarray_size(&n, a), DT_ERR_INVALID_HANDLE);
  CHECK_EQ_U64(n, 31);
}

int main(void) {
  if (dt_context_create(&g_ctx, DT_DEVICE_CPU, 0) != DT_OK) {
    fprintf(stderr, "cannot create a CPU context: %s\n", dt_last_error());
    printf("0 passed, 1 failed\n");
    return 1;
  }
  test_create_ndims();
  test_create_bad();
  test_zero_size();
  test_queries_bad();
  test_host_copies();
  test_copy();
  test_fill();
  test_reshape();
  test_slice();
  test_free();
  dt_context_free(g_ctx);
  return capi_finish();
}
