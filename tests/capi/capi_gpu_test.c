/*
 * GPU arrays: host <-> GPU copies, copies across devices, element-wise ops
 * and casts compared with the CPU, views, and safetensors save/load.
 * Exits 77 (CTest SKIP_RETURN_CODE) when no GPU is visible.
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capi_check.h"

#define N_BIG 3001 /* not a multiple of any block size */

static dt_context *g_cpu;
static dt_context *g_gpu;

static const dt_dtype k_dtypes[7] = {DT_FLOAT32, DT_FLOAT16, DT_BFLOAT16,
                                     DT_FLOAT64, DT_INT32,   DT_INT64,
                                     DT_UINT8};
static const dt_dtype k_float_dtypes[4] = {DT_FLOAT32, DT_FLOAT64, DT_FLOAT16,
                                           DT_BFLOAT16};

static dt_ndarray *make_on(const dt_context *ctx, dt_dtype dt,
                           const int64_t *dims, size_t ndim) {
  dt_ndarray *a = NULL;
  if (!CHECK_OK(dt_ndarray_create(&a, ctx, dt, dims, ndim))) return NULL;
  return a;
}

/* The array's bytes in a malloc'ed buffer (the caller frees). */
static unsigned char *bytes_of(const dt_ndarray *a, size_t *nb) {
  unsigned char *buf;
  *nb = 0;
  if (dt_ndarray_nbytes(nb, a) != DT_OK) return NULL;
  buf = (unsigned char *)malloc(*nb + 1);
  if (buf == NULL) return NULL;
  if (!CHECK_OK(dt_ndarray_copy_to_host(buf, *nb, a))) {
    free(buf);
    return NULL;
  }
  return buf;
}

/* Checks two arrays (any devices) hold the same bytes. */
static void expect_same_bytes(const dt_ndarray *a, const dt_ndarray *b,
                              const char *what, int line) {
  size_t na = 0, nb = 0;
  unsigned char *x = bytes_of(a, &na), *y = bytes_of(b, &nb);
  int ok = x != NULL && y != NULL && na == nb && memcmp(x, y, na) == 0;
  if (!capi_check_impl(ok, __FILE__, line, "GPU result equals CPU result"))
    fprintf(stderr, "  %s\n", what);
  free(x);
  free(y);
}

/* Small integers and halves: exact in every float dtype, and their sums,
 * scaled values and axpy results too. */
static void put_pattern(dt_ndarray *a, dt_dtype dt, size_t n, int salt) {
  dt_ndarray *f = NULL;
  dt_ndarray *on_dev = NULL;
  float *v = (float *)malloc(n * sizeof(float) + 1);
  const int64_t d[1] = {(int64_t)n};
  size_t i;
  for (i = 0; i < n; i++)
    v[i] = (float)((int)((i * 7 + (size_t)salt) % 17) - 8) * 0.5f;
  /* Build the values in float32 on the CPU, cast there, then copy into a
   * (on any device) through a flat view. */
  CHECK_OK(dt_ndarray_create(&f, g_cpu, DT_FLOAT32, d, 1));
  CHECK_OK(dt_ndarray_copy_from_host(f, v, n * sizeof(float)));
  CHECK_OK(dt_ndarray_create(&on_dev, g_cpu, dt, d, 1));
  CHECK_OK(dt_ndarray_cast(on_dev, f));
  {
    dt_ndarray *flat = NULL;
    CHECK_OK(dt_ndarray_reshape(&flat, a, d, 1));
    CHECK_OK(dt_ndarray_copy(flat, on_dev));
    dt_ndarray_free(flat);
  }
  dt_ndarray_free(f);
  dt_ndarray_free(on_dev);
  free(v);
}

static void test_context(void) {
  dt_device_type t = DT_DEVICE_CPU;
  int32_t id = -1;
  CHECK_OK(dt_context_device_type(&t, g_gpu));
  CHECK_EQ_I64(t, DT_DEVICE_GPU);
  CHECK_OK(dt_context_device_id(&id, g_gpu));
  CHECK_EQ_I64(id, 0);
}

static void test_create_and_copies(void) {
  const int64_t d[2] = {7, 5};
  size_t k, i;
  for (k = 0; k < 7; k++) {
    dt_ndarray *g = make_on(g_gpu, k_dtypes[k], d, 2);
    dt_ndarray *g2 = make_on(g_gpu, k_dtypes[k], d, 2);
    dt_ndarray *c = make_on(g_cpu, k_dtypes[k], d, 2);
    dt_ndarray *c2 = make_on(g_cpu, k_dtypes[k], d, 2);
    dt_context *ctx = NULL;
    dt_device_type t = DT_DEVICE_CPU;
    size_t nb = 0;
    unsigned char src[35 * 8], dst[35 * 8];
    CHECK_OK(dt_ndarray_nbytes(&nb, g));
    /* Zero-filled. */
    memset(dst, 0xAA, sizeof dst);
    CHECK_OK(dt_ndarray_copy_to_host(dst, nb, g));
    for (i = 0; i < nb && dst[i] == 0; i++) {
    }
    CHECK(i == nb);
    /* The array's context is the GPU. */
    CHECK_OK(dt_ndarray_context(&ctx, g));
    CHECK_OK(dt_context_device_type(&t, ctx));
    CHECK_EQ_I64(t, DT_DEVICE_GPU);
    dt_context_free(ctx);
    /* host -> gpu -> gpu -> host, exact bytes. */
    for (i = 0; i < nb; i++) src[i] = (unsigned char)(i * 29u + k * 3u + 1u);
    CHECK_STATUS(dt_ndarray_copy_from_host(g, src, nb - 1),
                 DT_ERR_SHAPE_MISMATCH);
    CHECK_STATUS(dt_ndarray_copy_to_host(dst, nb + 1, g),
                 DT_ERR_SHAPE_MISMATCH);
    CHECK_OK(dt_ndarray_copy_from_host(g, src, nb));
    CHECK_OK(dt_ndarray_copy(g2, g));
    memset(dst, 0, sizeof dst);
    CHECK_OK(dt_ndarray_copy_to_host(dst, nb, g2));
    CHECK(memcmp(src, dst, nb) == 0);
    /* gpu -> cpu -> cpu -> gpu with dt_ndarray_copy. */
    CHECK_OK(dt_ndarray_copy(c, g2));
    memset(dst, 0, sizeof dst);
    CHECK_OK(dt_ndarray_copy_to_host(dst, nb, c));
    CHECK(memcmp(src, dst, nb) == 0);
    CHECK_OK(dt_ndarray_fill(g, 0.0));
    CHECK_OK(dt_ndarray_copy(c2, c));
    CHECK_OK(dt_ndarray_copy(g, c2));
    memset(dst, 0, sizeof dst);
    CHECK_OK(dt_ndarray_copy_to_host(dst, nb, g));
    CHECK(memcmp(src, dst, nb) == 0);
    dt_ndarray_free(g);
    dt_ndarray_free(g2);
    dt_ndarray_free(c);
    dt_ndarray_free(c2);
  }
  /* Mismatches across devices. */
  {
    const int64_t d23[2] = {2, 3}, d32[2] = {3, 2};
    dt_ndarray *g = make_on(g_gpu, DT_FLOAT32, d23, 2);
    dt_ndarray *c = make_on(g_cpu, DT_FLOAT32, d32, 2);
    dt_ndarray *c64 = make_on(g_cpu, DT_FLOAT64, d23, 2);
    CHECK_STATUS(dt_ndarray_copy(c, g), DT_ERR_SHAPE_MISMATCH);
    CHECK_STATUS(dt_ndarray_copy(g, c), DT_ERR_SHAPE_MISMATCH);
    CHECK_STATUS(dt_ndarray_copy(c64, g), DT_ERR_DTYPE_MISMATCH);
    CHECK_STATUS(dt_ndarray_copy(g, c64), DT_ERR_DTYPE_MISMATCH);
    dt_ndarray_free(g);
    dt_ndarray_free(c);
    dt_ndarray_free(c64);
  }
  /* Zero-size and scalar GPU arrays. */
  {
    const int64_t d0[2] = {0, 4};
    dt_ndarray *z = make_on(g_gpu, DT_FLOAT32, d0, 2);
    dt_ndarray *s = make_on(g_gpu, DT_FLOAT64, NULL, 0);
    unsigned char b = 1;
    double v = 2.75, w = 0;
    CHECK_OK(dt_ndarray_copy_from_host(z, &b, 0));
    CHECK_OK(dt_ndarray_copy_to_host(&b, 0, z));
    CHECK_OK(dt_ndarray_fill(z, 1.0));
    CHECK_OK(dt_ndarray_scale(z, 1.0));
    CHECK_OK(dt_ndarray_copy_from_host(s, &v, 8));
    CHECK_OK(dt_ndarray_copy_to_host(&w, 8, s));
    CHECK_EQ_DBL(w, 2.75);
    dt_ndarray_free(z);
    dt_ndarray_free(s);
  }
}

static void test_fill(void) {
  static const double float_vals[5] = {1.5, 0.1, -2.7, 65504.0, INFINITY};
  static const double int_vals[3] = {7.0, 200.0, 2.7};
  const int64_t d[1] = {N_BIG};
  size_t k, j;
  for (k = 0; k < 7; k++) {
    dt_ndarray *g = make_on(g_gpu, k_dtypes[k], d, 1);
    dt_ndarray *c = make_on(g_cpu, k_dtypes[k], d, 1);
    int is_float = k < 4;
    size_t nv = is_float ? 5 : 3;
    for (j = 0; j < nv; j++) {
      double v = is_float ? float_vals[j] : int_vals[j];
      char what[64];
      CHECK_OK(dt_ndarray_fill(g, v));
      CHECK_OK(dt_ndarray_fill(c, v));
      snprintf(what, sizeof what, "fill %s with %g", dt_dtype_name(k_dtypes[k]),
               v);
      expect_same_bytes(g, c, what, __LINE__);
    }
    if (!is_float) {
      CHECK_STATUS(dt_ndarray_fill(g, 1e30), DT_ERR_INVALID_ARGUMENT);
      CHECK_STATUS(dt_ndarray_fill(g, NAN),
                   DT_ERR_INVALID_ARGUMENT);
      expect_same_bytes(g, c, "unchanged after a failed fill", __LINE__);
    }
    dt_ndarray_free(g);
    dt_ndarray_free(c);
  }
  {
    const int64_t d1[1] = {4};
    dt_ndarray *g = make_on(g_gpu, DT_UINT8, d1, 1);
    CHECK_STATUS(dt_ndarray_fill(g, 300.0), DT_ERR_INVALID_ARGUMENT);
    dt_ndarray_free(g);
  }
}

static void test_arith(void) {
  const int64_t d[2] = {N_BIG, 1};
  size_t k;
  for (k = 0; k < 4; k++) {
    dt_dtype dt = k_float_dtypes[k];
    dt_ndarray *ga = make_on(g_gpu, dt, d, 2), *gb = make_on(g_gpu, dt, d, 2);
    dt_ndarray *go = make_on(g_gpu, dt, d, 2);
    dt_ndarray *ca = make_on(g_cpu, dt, d, 2), *cb = make_on(g_cpu, dt, d, 2);
    dt_ndarray *co = make_on(g_cpu, dt, d, 2);
    char what[64];
    snprintf(what, sizeof what, "arithmetic on %s", dt_dtype_name(dt));
    put_pattern(ga, dt, N_BIG, 1);
    put_pattern(gb, dt, N_BIG, 5);
    put_pattern(ca, dt, N_BIG, 1);
    put_pattern(cb, dt, N_BIG, 5);
    expect_same_bytes(ga, ca, what, __LINE__);

    CHECK_OK(dt_ndarray_add(go, ga, gb));
    CHECK_OK(dt_ndarray_add(co, ca, cb));
    expect_same_bytes(go, co, what, __LINE__);
    CHECK_OK(dt_ndarray_scale(go, 2.5));
    CHECK_OK(dt_ndarray_scale(co, 2.5));
    expect_same_bytes(go, co, what, __LINE__);
    CHECK_OK(dt_ndarray_axpy(go, -0.5, ga));
    CHECK_OK(dt_ndarray_axpy(co, -0.5, ca));
    expect_same_bytes(go, co, what, __LINE__);
    /* Aliasing. */
    CHECK_OK(dt_ndarray_add(ga, ga, ga));
    CHECK_OK(dt_ndarray_add(ca, ca, ca));
    expect_same_bytes(ga, ca, what, __LINE__);
    CHECK_OK(dt_ndarray_axpy(gb, 2.0, gb));
    CHECK_OK(dt_ndarray_axpy(cb, 2.0, cb));
    expect_same_bytes(gb, cb, what, __LINE__);

    /* Mixing devices in one op is an error (the header requires one
     * context; it does not name the status). */
    {
      dt_status s = dt_ndarray_add(go, ga, cb);
      CHECK(s != DT_OK);
      CHECK_LAST_ERROR();
      s = dt_ndarray_axpy(co, 1.0, ga);
      CHECK(s != DT_OK);
      CHECK_LAST_ERROR();
      expect_same_bytes(go, co, "unchanged after a mixed-device op", __LINE__);
    }
    dt_ndarray_free(ga);
    dt_ndarray_free(gb);
    dt_ndarray_free(go);
    dt_ndarray_free(ca);
    dt_ndarray_free(cb);
    dt_ndarray_free(co);
  }
  /* Integers are not supported on the GPU either. */
  for (k = 4; k < 7; k++) {
    const int64_t d3[1] = {3};
    dt_ndarray *a = make_on(g_gpu, k_dtypes[k], d3, 1);
    dt_ndarray *b = make_on(g_gpu, k_dtypes[k], d3, 1);
    CHECK_STATUS(dt_ndarray_add(a, a, b), DT_ERR_NOT_SUPPORTED);
    CHECK_STATUS(dt_ndarray_scale(a, 2.0), DT_ERR_NOT_SUPPORTED);
    CHECK_STATUS(dt_ndarray_axpy(a, 2.0, b), DT_ERR_NOT_SUPPORTED);
    dt_ndarray_free(a);
    dt_ndarray_free(b);
  }
  /* Shape and dtype mismatches. */
  {
    const int64_t d23[2] = {2, 3}, d32[2] = {3, 2};
    dt_ndarray *a = make_on(g_gpu, DT_FLOAT32, d23, 2);
    dt_ndarray *t = make_on(g_gpu, DT_FLOAT32, d32, 2);
    dt_ndarray *h = make_on(g_gpu, DT_FLOAT16, d23, 2);
    CHECK_STATUS(dt_ndarray_add(a, a, t), DT_ERR_SHAPE_MISMATCH);
    CHECK_STATUS(dt_ndarray_add(a, a, h), DT_ERR_DTYPE_MISMATCH);
    CHECK_STATUS(dt_ndarray_cast(t, a), DT_ERR_SHAPE_MISMATCH);
    dt_ndarray_free(a);
    dt_ndarray_free(t);
    dt_ndarray_free(h);
  }
}

static void test_cast(void) {
  const int64_t d[1] = {N_BIG};
  size_t i, j;
  for (i = 0; i < 7; i++) {
    for (j = 0; j < 7; j++) {
      dt_ndarray *gs = make_on(g_gpu, k_dtypes[i], d, 1);
      dt_ndarray *gd = make_on(g_gpu, k_dtypes[j], d, 1);
      dt_ndarray *cs = make_on(g_cpu, k_dtypes[i], d, 1);
      dt_ndarray *cd = make_on(g_cpu, k_dtypes[j], d, 1);
      char what[64];
      snprintf(what, sizeof what, "cast %s -> %s", dt_dtype_name(k_dtypes[i]),
               dt_dtype_name(k_dtypes[j]));
      /* Values every dtype holds: 4..12 step 0.5 for float sources (the
       * halves truncate for integer targets); integer sources get 9. */
      if (i < 4) {
        put_pattern(cs, k_dtypes[i], N_BIG, 3);
        {
          dt_ndarray *tmp = make_on(g_cpu, k_dtypes[i], d, 1);
          CHECK_OK(dt_ndarray_fill(tmp, 8.0));
          CHECK_OK(dt_ndarray_axpy(cs, 1.0, tmp)); /* now 4..12 */
          dt_ndarray_free(tmp);
        }
        CHECK_OK(dt_ndarray_copy(gs, cs));
      } else {
        CHECK_OK(dt_ndarray_fill(cs, 9.0));
        CHECK_OK(dt_ndarray_fill(gs, 9.0));
      }
      if (!CHECK_OK(dt_ndarray_cast(gd, gs))) fprintf(stderr, "  %s\n", what);
      CHECK_OK(dt_ndarray_cast(cd, cs));
      expect_same_bytes(gd, cd, what, __LINE__);
      dt_ndarray_free(gs);
      dt_ndarray_free(gd);
      dt_ndarray_free(cs);
      dt_ndarray_free(cd);
    }
  }
  /* Rounding and truncation match the CPU. */
  {
    const float x[6] = {-2.7f, 2.7f, 0.1f, 1.0f + 1.0f / 2048 + 1.0f / 8192,
                        65504.0f, -0.0f};
    const int64_t d6[1] = {6};
    size_t k;
    dt_ndarray *gf = make_on(g_gpu, DT_FLOAT32, d6, 1);
    dt_ndarray *cf = make_on(g_cpu, DT_FLOAT32, d6, 1);
    CHECK_OK(dt_ndarray_copy_from_host(gf, x, sizeof x));
    CHECK_OK(dt_ndarray_copy_from_host(cf, x, sizeof x));
    for (k = 1; k < 5; k++) { /* F16, BF16, F64, I32 */
      dt_ndarray *g = make_on(g_gpu, k_dtypes[k], d6, 1);
      dt_ndarray *c = make_on(g_cpu, k_dtypes[k], d6, 1);
      CHECK_OK(dt_ndarray_cast(g, gf));
      CHECK_OK(dt_ndarray_cast(c, cf));
      expect_same_bytes(g, c, dt_dtype_name(k_dtypes[k]), __LINE__);
      dt_ndarray_free(g);
      dt_ndarray_free(c);
    }
    dt_ndarray_free(gf);
    dt_ndarray_free(cf);
  }
}

static void test_views(void) {
  const int64_t d[2] = {4, 3}, flat[1] = {12};
  const int32_t v[12] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
  int32_t out[12];
  dt_ndarray *a = make_on(g_gpu, DT_INT32, d, 2), *s = NULL, *r = NULL;
  size_t i;
  CHECK_OK(dt_ndarray_copy_from_host(a, v, sizeof v));
  CHECK_OK(dt_ndarray_slice(&s, a, 1, 3));
  CHECK_OK(dt_ndarray_fill(s, -1.0));
  CHECK_OK(dt_ndarray_reshape(&r, a, flat, 1));
  dt_ndarray_free(a);
  memset(out, 0, sizeof out);
  CHECK_OK(dt_ndarray_copy_to_host(out, sizeof out, r));
  for (i = 0; i < 12; i++)
    CHECK_EQ_I64(out[i], (i >= 3 && i < 9) ? -1 : (int64_t)i);
  dt_ndarray_free(r);
  memset(out, 0, sizeof out);
  CHECK_OK(dt_ndarray_copy_to_host(out, 6 * sizeof(int32_t), s));
  CHECK_EQ_I64(out[0], -1);
  dt_ndarray_free(s);
}

static void test_safetensors(void) {
  const char *tmp = getenv("TMPDIR");
  char path[600];
  const int64_t d[2] = {3, 4};
  dt_ndarray *g = make_on(g_gpu, DT_BFLOAT16, d, 2);
  dt_ndarray *h = make_on(g_gpu, DT_INT64, NULL, 0);
  dt_ndarray *c = make_on(g_cpu, DT_FLOAT32, d, 2);
  const char *names[3] = {"gpu_bf16", "gpu_scalar", "cpu_f32"};
  const dt_ndarray *arrays[3];
  dt_named_arrays *list = NULL;
  size_t count = 0;

  if (tmp == NULL || tmp[0] == '\0') tmp = "/tmp";
  snprintf(path, sizeof path, "%s/capi_gpu_%ld.safetensors", tmp,
           (long)getpid());
  put_pattern(g, DT_BFLOAT16, 12, 2);
  CHECK_OK(dt_ndarray_fill(h, -123456789.0));
  put_pattern(c, DT_FLOAT32, 12, 4);
  arrays[0] = g;
  arrays[1] = h;
  arrays[2] = c;
  CHECK_OK(dt_ndarray_save(path, names, arrays, 3));
  CHECK_OK(dt_named_arrays_load(&list, g_gpu, path));
  CHECK_OK(dt_named_arrays_count(&count, list));
  CHECK_EQ_U64(count, 3);
  {
    size_t k;
    for (k = 0; k < 3; k++) {
      dt_ndarray *got = NULL;
      dt_context *ctx = NULL;
      dt_device_type t = DT_DEVICE_CPU;
      CHECK_OK(dt_named_arrays_find(&got, list, names[k]));
      CHECK_OK(dt_ndarray_context(&ctx, got));
      CHECK_OK(dt_context_device_type(&t, ctx));
      CHECK_EQ_I64(t, DT_DEVICE_GPU);
      dt_context_free(ctx);
      expect_same_bytes(got, arrays[k], names[k], __LINE__);
      dt_ndarray_free(got);
    }
  }
  dt_named_arrays_free(list);
  unlink(path);
  dt_ndarray_free(g);
  dt_ndarray_free(h);
  dt_ndarray_free(c);
}

static void test_context_freed_first(void) {
  dt_context *ctx = NULL;
  dt_ndarray *a = NULL;
  const int64_t d[1] = {16};
  float v[16];
  size_t i;
  CHECK_OK(dt_context_create(&ctx, DT_DEVICE_GPU, 0));
  CHECK_OK(dt_ndarray_create(&a, ctx, DT_FLOAT32, d, 1));
  dt_context_free(ctx);
  CHECK_OK(dt_ndarray_fill(a, 0.25));
  CHECK_OK(dt_ndarray_scale(a, 4.0));
  CHECK_OK(dt_ndarray_copy_to_host(v, sizeof v, a));
  for (i = 0; i < 16; i++) CHECK_EQ_DBL(v[i], 1.0);
  dt_ndarray_free(a);
}

int main(void) {
  const int skip = capi_gpu_skip_code();
  if (skip != 0) return skip;
  if (!CHECK_OK(dt_context_create(&g_cpu, DT_DEVICE_CPU, 0)) ||
      !CHECK_OK(dt_context_create(&g_gpu, DT_DEVICE_GPU, 0))) {
    dt_context_free(g_cpu);
    return capi_finish();
  }
  test_context();
  test_create_and_copies();
  test_fill();
  test_arith();
  test_cast();
  test_views();
  test_safetensors();
  test_context_freed_first();
  dt_context_free(g_gpu);
  dt_context_free(g_cpu);
  return capi_finish();
}
