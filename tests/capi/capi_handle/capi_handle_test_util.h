/*
 * What the handle-checking C API tests share: the CPU context, the paths
 * of the files written for them, sentinel checks and good handles.
 */
#ifndef CAPI_HANDLE_TEST_UTIL_H
#define CAPI_HANDLE_TEST_UTIL_H

#define _POSIX_C_SOURCE 200809L

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../capi_check.h"

extern dt_context *g_ctx;
extern char g_good_path[600];
extern char g_out_path[600];
extern char g_images_path[600];
extern char g_labels_path[600];

static inline int file_exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}

static inline void note(const char *what) { fprintf(stderr, "-- %s\n", what); }

/* g is float32 {4} filled with 3.0; checks it still is. */
static inline void expect_good_unchanged(const dt_ndarray *g, int line) {
  float v[4] = {0, 0, 0, 0};
  int ok = dt_ndarray_copy_to_host(v, sizeof v, g) == DT_OK && v[0] == 3.0f &&
           v[1] == 3.0f && v[2] == 3.0f && v[3] == 3.0f;
  capi_check_impl(ok, __FILE__, line, "good argument unchanged");
}

static inline void expect_arr_sentinel(dt_ndarray *a, int line) {
  if (!capi_check_impl(a == CAPI_SENTINEL(dt_ndarray), __FILE__, line,
                       "out dt_ndarray* untouched")) {
    if (a != NULL) dt_ndarray_free(a);
  }
}

static inline void expect_ctx_sentinel(dt_context *c, int line) {
  if (!capi_check_impl(c == CAPI_SENTINEL(dt_context), __FILE__, line,
                       "out dt_context* untouched")) {
    if (c != NULL) dt_context_free(c);
  }
}

static inline void expect_list_sentinel(dt_named_arrays *l, int line) {
  if (!capi_check_impl(l == CAPI_SENTINEL(dt_named_arrays), __FILE__, line,
                       "out dt_named_arrays* untouched")) {
    if (l != NULL) dt_named_arrays_free(l);
  }
}

/* Every ndarray call with `bad` in each handle position. g and g2 are good
 * float32 {4} arrays. */
static inline void ndarray_batch(dt_ndarray *bad, dt_status e, dt_ndarray *g,
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

static inline void context_batch(const dt_context *bad, dt_status e) {
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

static inline void list_batch(const dt_named_arrays *bad, dt_status e) {
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

static inline dt_ndarray *make4(void) {
  const int64_t d[1] = {4};
  dt_ndarray *a = NULL;
  CHECK_OK(dt_ndarray_create(&a, g_ctx, DT_FLOAT32, d, 1));
  CHECK_OK(dt_ndarray_fill(a, 3.0));
  return a;
}

static inline dt_named_arrays *load_good(void) {
  dt_named_arrays *l = NULL;
  CHECK_OK(dt_named_arrays_load(&l, g_ctx, g_good_path));
  return l;
}

/* The groups of tests in capi_handle/, called by main in capi_handle_test.c. */
void test_reused_memory(void);

#endif
