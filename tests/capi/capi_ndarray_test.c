/*
 * NDArrays: creation, queries, host copies and free. Copy and fill:
 * capi_ndarray/copy_fill.c; reshape and slice: capi_ndarray/views.c.
 */
#include "capi_ndarray/capi_ndarray_test_util.h"

/* Shared with the tests in capi_ndarray/. */
dt_context *g_ctx;

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
