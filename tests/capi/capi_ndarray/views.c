/*
 * NDArrays: reshape and slice.
 */
#include "capi_ndarray_test_util.h"

void test_reshape(void) {
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

void test_slice(void) {
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
