/*
 * Casts between every pair of dtypes: exact values, rounding, and errors.
 */
#include "capi_ops_test_util.h"

void test_cast_all_pairs(void) {
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

void test_cast_values(void) {
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

void test_cast_errors(void) {
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
