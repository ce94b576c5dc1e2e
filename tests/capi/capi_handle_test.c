/*
 * Handle checking across the whole API: every function that takes a handle
 * is called with NULL (DT_ERR_INVALID_ARGUMENT), with a freed handle and
 * with a handle of the wrong kind (both DT_ERR_INVALID_HANDLE). Out-params
 * stay untouched and the good arguments stay unchanged. Also double frees.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "capi_check.h"

static dt_context *g_ctx;
static char g_good_path[600]; /* a safetensors file with entry "x" */
static char g_out_path[600];  /* must never be created */

static int file_exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}

static void note(const char *what) { fprintf(stderr, "-- %s\n", what); }

/* g is float32 {4} filled with 3.0; checks it still is. */
static void expect_good_unchanged(const dt_ndarray *g, int line) {
  float v[4] = {0, 0, 0, 0};
  int ok = dt_ndarray_copy_to_host(v, sizeof v, g) == DT_OK && v[0] == 3.0f &&
           v[1] == 3.0f && v[2] == 3.0f && v[3] == 3.0f;
  capi_check_impl(ok, __FILE__, line, "good argument unchanged");
}

static void expect_arr_sentinel(dt_ndarray *a, int line) {
  if (!capi_check_impl(a == CAPI_SENTINEL(dt_ndarray), __FILE__, line,
                       "out dt_ndarray* untouched")) {
    if (a != NULL) dt_ndarray_free(a);
  }
}

static void expect_ctx_sentinel(dt_context *c, int line) {
  if (!capi_check_impl(c == CAPI_SENTINEL(dt_context), __FILE__, line,
                       "out dt_context* untouched")) {
    if (c != NULL) dt_context_free(c);
  }
}

static void expect_list_sentinel(dt_named_arrays *l, int line) {
  if (!capi_check_impl(l == CAPI_SENTINEL(dt_named_arrays), __FILE__, line,
                       "out dt_named_arrays* untouched")) {
    if (l != NULL) dt_named_arrays_free(l);
  }
}

/* Every ndarray call with `bad` in each handle position. g and g2 are good
 * float32 {4} arrays. */
static void ndarray_batch(dt_ndarray *bad, dt_status e, dt_ndarray *g,
                          dt_ndarray *g2) {
  size_t sz = 4242;
  int64_t dims[DT_MAX_NDIM] = {-3, -3, -3, -3, -3, -3, -3, -3};
  dt_dtype dt = (dt_dtype)42;
  dt_context *c;
  dt_ndarray *o;
  float buf[4] = {9, 9, 9, 9};
  const int64_t shape4[1] = {4};
  const char *names[2] = {"g", "bad"};
  const dt_ndarray *arrays[2];

  CHECK_STATUS(dt_ndarray_ndim(&sz, bad), e);
  CHECK_EQ_U64(sz, 4242);
  CHECK_STATUS(dt_ndarray_shape(dims, DT_MAX_NDIM, bad), e);
  CHECK_EQ_I64(dims[0], -3);
  CHECK_STATUS(dt_ndarray_dtype(&dt, bad), e);
  CHECK_EQ_I64(dt, 42);
  CHECK_STATUS(dt_ndarray_size(&sz, bad), e);
  CHECK_EQ_U64(sz, 4242);
  CHECK_STATUS(dt_ndarray_nbytes(&sz, bad), e);
  CHECK_EQ_U64(sz, 4242);
  c = CAPI_SENTINEL(dt_context);
  CHECK_STATUS(dt_ndarray_context(&c, bad), e);
  expect_ctx_sentinel(c, __LINE__);
  CHECK_STATUS(dt_ndarray_copy_from_host(bad, buf, sizeof buf), e);
  CHECK_STATUS(dt_ndarray_copy_to_host(buf, sizeof buf, bad), e);
  CHECK(buf[0] == 9 && buf[3] == 9);
  CHECK_STATUS(dt_ndarray_copy(bad, g), e);
  CHECK_STATUS(dt_ndarray_copy(g, bad), e);
  CHECK_STATUS(dt_ndarray_fill(bad, 1.0), e);
  o = CAPI_SENTINEL(dt_ndarray);
  CHECK_STATUS(dt_ndarray_reshape(&o, bad, shape4, 1), e);
  expect_arr_sentinel(o, __LINE__);
  o = CAPI_SENTINEL(dt_ndarray);
  CHECK_STATUS(dt_ndarray_slice(&o, bad, 0, 1), e);
  expect_arr_sentinel(o, __LINE__);
  CHECK_STATUS(dt_ndarray_add(bad, g, g2), e);
  CHECK_STATUS(dt_ndarray_add(g, bad, g2), e);
  CHECK_STATUS(dt_ndarray_add(g, g2, bad), e);
  CHECK_STATUS(dt_ndarray_scale(bad, 2.0), e);
  CHECK_STATUS(dt_ndarray_axpy(bad, 1.0, g), e);
  CHECK_STATUS(dt_ndarray_axpy(g, 1.0, bad), e);
  CHECK_STATUS(dt_ndarray_cast(bad, g), e);
  CHECK_STATUS(dt_ndarray_cast(g, bad), e);
  arrays[0] = g;
  arrays[1] = bad;
  CHECK_STATUS(dt_ndarray_save(g_out_path, names, arrays, 2), e);
  CHECK(!file_exists(g_out_path));
  arrays[0] = bad;
  arrays[1] = g;
  CHECK_STATUS(dt_ndarray_save(g_out_path, names, arrays, 2), e);
  CHECK(!file_exists(g_out_path));
  unlink(g_out_path);
  expect_good_unchanged(g, __LINE__);
  expect_good_unchanged(g2, __LINE__);
}

static void context_batch(const dt_context *bad, dt_status e) {
  dt_device_type t = (dt_device_type)42;
  int32_t id = 42;
  dt_ndarray *a;
  dt_named_arrays *l;
  const int64_t d[1] = {4};

  CHECK_STATUS(dt_context_device_type(&t, bad), e);
  CHECK_EQ_I64(t, 42);
  CHECK_STATUS(dt_context_device_id(&id, bad), e);
  CHECK_EQ_I64(id, 42);
  a = CAPI_SENTINEL(dt_ndarray);
  CHECK_STATUS(dt_ndarray_create(&a, bad, DT_FLOAT32, d, 1), e);
  expect_arr_sentinel(a, __LINE__);
  a = CAPI_SENTINEL(dt_ndarray);
  CHECK_STATUS(dt_ndarray_create(&a, bad, DT_FLOAT32, NULL, 0), e);
  expect_arr_sentinel(a, __LINE__);
  l = CAPI_SENTINEL(dt_named_arrays);
  CHECK_STATUS(dt_named_arrays_load(&l, bad, g_good_path), e);
  expect_list_sentinel(l, __LINE__);
}

static void list_batch(const dt_named_arrays *bad, dt_status e) {
  size_t n = 42;
  const char *name = "untouched";
  dt_ndarray *a;

  CHECK_STATUS(dt_named_arrays_count(&n, bad), e);
  CHECK_EQ_U64(n, 42);
  CHECK_STATUS(dt_named_arrays_name(&name, bad, 0), e);
  CHECK_STREQ(name, "untouched");
  a = CAPI_SENTINEL(dt_ndarray);
  CHECK_STATUS(dt_named_arrays_get(&a, bad, 0), e);
  expect_arr_sentinel(a, __LINE__);
  a = CAPI_SENTINEL(dt_ndarray);
  CHECK_STATUS(dt_named_arrays_find(&a, bad, "x"), e);
  expect_arr_sentinel(a, __LINE__);
}

static dt_ndarray *make4(void) {
  const int64_t d[1] = {4};
  dt_ndarray *a = NULL;
  CHECK_OK(dt_ndarray_create(&a, g_ctx, DT_FLOAT32, d, 1));
  CHECK_OK(dt_ndarray_fill(a, 3.0));
  return a;
}

static dt_named_arrays *load_good(void) {
  dt_named_arrays *l = NULL;
  CHECK_OK(dt_named_arrays_load(&l, g_ctx, g_good_path));
  return l;
}

static void test_null_handles(void) {
  dt_ndarray *g = make4(), *g2 = make4();
  note("NULL ndarray");
  ndarray_batch(NULL, DT_ERR_INVALID_ARGUMENT, g, g2);
  note("NULL context");
  context_batch(NULL, DT_ERR_INVALID_ARGUMENT);
  note("NULL list");
  list_batch(NULL, DT_ERR_INVALID_ARGUMENT);
  dt_ndarray_free(g);
  dt_ndarray_free(g2);
}

static void test_freed_handles(void) {
  dt_ndarray *g = make4(), *g2 = make4();
  {
    dt_ndarray *f = make4();
    dt_ndarray_free(f);
    note("freed ndarray");
    ndarray_batch(f, DT_ERR_INVALID_HANDLE, g, g2);
  }
  {
    /* A freed view, while its storage lives on in the parent. */
    dt_ndarray *v = NULL;
    CHECK_OK(dt_ndarray_slice(&v, g2, 0, 4));
    dt_ndarray_free(v);
    note("freed view");
    ndarray_batch(v, DT_ERR_INVALID_HANDLE, g, g2);
  }
  {
    /* A freed parent, while its storage lives on in a view. */
    dt_ndarray *p = make4(), *v = NULL;
    CHECK_OK(dt_ndarray_slice(&v, p, 1, 3));
    dt_ndarray_free(p);
    note("freed parent of a live view");
    ndarray_batch(p, DT_ERR_INVALID_HANDLE, g, g2);
    dt_ndarray_free(v);
  }
  {
    dt_context *c = NULL;
    CHECK_OK(dt_context_create(&c, DT_DEVICE_CPU, 0));
    dt_context_free(c);
    note("freed context");
    context_batch(c, DT_ERR_INVALID_HANDLE);
  }
  {
    /* A freed context handle whose device an array keeps alive. */
    dt_context *c = NULL;
    dt_ndarray *a = NULL;
    const int64_t d[1] = {2};
    CHECK_OK(dt_context_create(&c, DT_DEVICE_CPU, 0));
    CHECK_OK(dt_ndarray_create(&a, c, DT_FLOAT32, d, 1));
    dt_context_free(c);
    note("freed context kept alive by an array");
    context_batch(c, DT_ERR_INVALID_HANDLE);
    dt_ndarray_free(a);
  }
  {
    dt_named_arrays *l = load_good();
    dt_named_arrays_free(l);
    note("freed list");
    list_batch(l, DT_ERR_INVALID_HANDLE);
  }
  {
    /* A freed list whose array lives on. */
    dt_named_arrays *l = load_good();
    dt_ndarray *x = NULL;
    CHECK_OK(dt_named_arrays_get(&x, l, 0));
    dt_named_arrays_free(l);
    note("freed list with a live entry");
    list_batch(l, DT_ERR_INVALID_HANDLE);
    CHECK_OK(dt_ndarray_fill(x, 1.0));
    dt_ndarray_free(x);
  }
  dt_ndarray_free(g);
  dt_ndarray_free(g2);
}

static void test_wrong_kind(void) {
  dt_ndarray *g = make4(), *g2 = make4(), *arr = make4();
  dt_named_arrays *list = load_good();
  dt_context *ctx = NULL;
  CHECK_OK(dt_context_create(&ctx, DT_DEVICE_CPU, 0));

  note("context as ndarray");
  ndarray_batch((dt_ndarray *)ctx, DT_ERR_INVALID_HANDLE, g, g2);
  note("list as ndarray");
  ndarray_batch((dt_ndarray *)list, DT_ERR_INVALID_HANDLE, g, g2);
  note("ndarray as context");
  context_batch((const dt_context *)arr, DT_ERR_INVALID_HANDLE);
  note("list as context");
  context_batch((const dt_context *)list, DT_ERR_INVALID_HANDLE);
  note("ndarray as list");
  list_batch((const dt_named_arrays *)arr, DT_ERR_INVALID_HANDLE);
  note("context as list");
  list_batch((const dt_named_arrays *)ctx, DT_ERR_INVALID_HANDLE);

  /* Freeing through the wrong free function is detected and ignored. */
  note("wrong-kind frees");
  dt_ndarray_free((dt_ndarray *)ctx);
  CHECK_LAST_ERROR();
  dt_ndarray_free((dt_ndarray *)list);
  CHECK_LAST_ERROR();
  dt_context_free((dt_context *)arr);
  CHECK_LAST_ERROR();
  dt_context_free((dt_context *)list);
  CHECK_LAST_ERROR();
  dt_named_arrays_free((dt_named_arrays *)arr);
  CHECK_LAST_ERROR();
  dt_named_arrays_free((dt_named_arrays *)ctx);
  CHECK_LAST_ERROR();
  /* ... and all three are still alive. */
  {
    dt_device_type t = (dt_device_type)0;
    size_t n = 0;
    CHECK_OK(dt_context_device_type(&t, ctx));
    CHECK_OK(dt_named_arrays_count(&n, list));
    CHECK_EQ_U64(n, 1);
    expect_good_unchanged(arr, __LINE__);
  }
  dt_ndarray_free(g);
  dt_ndarray_free(g2);
  dt_ndarray_free(arr);
  dt_named_arrays_free(list);
  dt_context_free(ctx);
}

/* Each double free leaves a new, non-empty message. */
static void test_double_frees(void) {
  char before[512];
  {
    dt_ndarray *a = make4();
    CHECK_STATUS(dt_ndarray_ndim(NULL, a), DT_ERR_INVALID_ARGUMENT);
    strncpy(before, dt_last_error(), sizeof before - 1);
    before[sizeof before - 1] = '\0';
    dt_ndarray_free(a);
    dt_ndarray_free(a);
    CHECK_LAST_ERROR();
    CHECK(strcmp(dt_last_error(), before) != 0);
    dt_ndarray_free(a); /* a third time */
    CHECK_LAST_ERROR();
  }
  {
    dt_context *c = NULL;
    CHECK_OK(dt_context_create(&c, DT_DEVICE_CPU, 0));
    CHECK_STATUS(dt_context_device_id(NULL, c), DT_ERR_INVALID_ARGUMENT);
    strncpy(before, dt_last_error(), sizeof before - 1);
    before[sizeof before - 1] = '\0';
    dt_context_free(c);
    dt_context_free(c);
    CHECK_LAST_ERROR();
    CHECK(strcmp(dt_last_error(), before) != 0);
  }
  {
    dt_named_arrays *l = load_good();
    CHECK_STATUS(dt_named_arrays_count(NULL, l), DT_ERR_INVALID_ARGUMENT);
    strncpy(before, dt_last_error(), sizeof before - 1);
    before[sizeof before - 1] = '\0';
    dt_named_arrays_free(l);
    dt_named_arrays_free(l);
    CHECK_LAST_ERROR();
    CHECK(strcmp(dt_last_error(), before) != 0);
  }
  /* Free of NULL for every kind. */
  dt_ndarray_free(NULL);
  dt_context_free(NULL);
  dt_named_arrays_free(NULL);
  CHECK(1);
}

int main(void) {
  const char *tmp = getenv("TMPDIR");
  int rc;
  if (tmp == NULL || tmp[0] == '\0') tmp = "/tmp";
  snprintf(g_good_path, sizeof g_good_path,
           "%s/capi_handle_%ld_good.safetensors", tmp, (long)getpid());
  snprintf(g_out_path, sizeof g_out_path,
           "%s/capi_handle_%ld_out.safetensors", tmp, (long)getpid());
  if (dt_context_create(&g_ctx, DT_DEVICE_CPU, 0) != DT_OK) {
    fprintf(stderr, "cannot create a CPU context: %s\n", dt_last_error());
    printf("0 passed, 1 failed\n");
    return 1;
  }
  {
    dt_ndarray *x = make4();
    const char *names[1] = {"x"};
    const dt_ndarray *arrays[1];
    arrays[0] = x;
    CHECK_OK(dt_ndarray_save(g_good_path, names, arrays, 1));
    dt_ndarray_free(x);
  }
  test_null_handles();
  test_freed_handles();
  test_wrong_kind();
  test_double_frees();
  dt_context_free(g_ctx);
  unlink(g_good_path);
  unlink(g_out_path);
  rc = capi_finish();
  return rc;
}
