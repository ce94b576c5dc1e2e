/*
 * NDArrays: copy between arrays and fill with a value of every dtype.
 */
#include "capi_ndarray_test_util.h"

void test_copy(void) {
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

void test_fill(void) {
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
