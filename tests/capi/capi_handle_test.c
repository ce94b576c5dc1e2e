/*
 * Handle checking across the whole API: every function that takes a handle
 * is called with NULL (DT_ERR_INVALID_ARGUMENT), with a freed handle and
 * with a handle of the wrong kind (both DT_ERR_INVALID_HANDLE). Out-params
 * stay untouched and the good arguments stay unchanged. Also double frees.
 * Freed handles whose memory a new handle of the same kind has very likely
 * taken over: capi_handle/reused_memory.c.
 */
#include "capi_handle/capi_handle_test_util.h"

/* Shared with the tests in capi_handle/. */
dt_context *g_ctx;
char g_good_path[600]; /* a safetensors file with entry "x" */
char g_out_path[600];  /* must never be created */
char g_images_path[600]; /* a 4-sample 2x2 IDX image file */
char g_labels_path[600];

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
  snprintf(g_images_path, sizeof g_images_path,
           "%s/capi_handle_%ld_images.idx", tmp, (long)getpid());
  snprintf(g_labels_path, sizeof g_labels_path,
           "%s/capi_handle_%ld_labels.idx", tmp, (long)getpid());
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
  test_reused_memory();
  dt_context_free(g_ctx);
  unlink(g_good_path);
  unlink(g_out_path);
  rc = capi_finish();
  return rc;
}
