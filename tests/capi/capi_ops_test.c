/*
 * Element-wise arithmetic (add, scale, axpy). Casts: capi_ops/cast.c.
 */
#include "capi_ops/capi_ops_test_util.h"

/* Shared with the tests in capi_ops/. */
dt_context *g_ctx;

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
