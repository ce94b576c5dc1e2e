/*
 * Handle checking across the whole API: every function that takes a handle
 * is called with NULL (DT_ERR_INVALID_ARGUMENT), with a freed handle and
 * with a handle of the wrong kind (both DT_ERR_INVALID_HANDLE). Out-params
 * stay untouched and the good arguments stay unchanged. Also double frees,
 * and freed handles whose memory a new handle of the same kind has very
 * likely taken over: a handle value is never handed out twice, so the freed
 * one stays invalid and the new one is never hit by calls on the old.
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

/* ---- freed handles whose memory is reused -------------------------------
 * A new handle of the same kind and size right after a free is where the
 * allocator most likely puts the new object at the freed one's address. With
 * handles that were addresses, calls on the freed handle then silently
 * reached the new object. */

static char g_images_path[600]; /* a 4-sample 2x2 IDX image file */
static char g_labels_path[600];

static int write_bytes(const char *path, const unsigned char *bytes, size_t n) {
  FILE *f = fopen(path, "wb");
  int ok;
  if (f == NULL) return 0;
  ok = fwrite(bytes, 1, n, f) == n;
  return fclose(f) == 0 && ok;
}

static int write_idx_files(void) {
  /* Big-endian magic, count, rows and columns, then the pixels. */
  static const unsigned char images[16 + 16] = {
      0, 0, 8, 3, 0, 0, 0, 4, 0, 0, 0,  2,  0,  0,  0,  2, /* header */
      0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
  /* Magic and count, then the four labels. */
  static const unsigned char labels[8 + 4] = {0, 0, 8, 1, 0, 0,
                                              0, 4, 0, 1, 0, 1};
  return write_bytes(g_images_path, images, sizeof images) &&
         write_bytes(g_labels_path, labels, sizeof labels);
}

static const char k_mlp[] =
    "{\"input_shape\": [1, 2, 2], \"hidden\": [4], \"classes\": 2}";

/* One handle kind, type-erased so that one loop checks all eight. */
typedef struct kind_ops {
  const char *name;
  int rounds;
  void *(*create)(void); /* a new live handle, or NULL (already reported) */
  void (*destroy)(void *h);
  dt_status (*probe)(void *h); /* a call that needs a live handle */
} kind_ops;

static void *create_ndarray(void) { return make4(); }
static void destroy_ndarray(void *h) { dt_ndarray_free((dt_ndarray *)h); }
static dt_status probe_ndarray(void *h) {
  size_t n = 0;
  return dt_ndarray_size(&n, (dt_ndarray *)h);
}

static void *create_context(void) {
  dt_context *c = NULL;
  return CHECK_OK(dt_context_create(&c, DT_DEVICE_CPU, 0)) ? c : NULL;
}
static void destroy_context(void *h) { dt_context_free((dt_context *)h); }
static dt_status probe_context(void *h) {
  int32_t id = 0;
  return dt_context_device_id(&id, (dt_context *)h);
}

static void *create_list(void) {
  dt_named_arrays *l = NULL;
  return CHECK_OK(dt_named_arrays_load(&l, g_ctx, g_good_path)) ? l : NULL;
}
static void destroy_list(void *h) {
  dt_named_arrays_free((dt_named_arrays *)h);
}
static dt_status probe_list(void *h) {
  size_t n = 0;
  return dt_named_arrays_count(&n, (dt_named_arrays *)h);
}

static void *create_net(void) {
  dt_net *n = NULL;
  return CHECK_OK(dt_net_create(&n, g_ctx, "mlp", k_mlp)) ? n : NULL;
}
static void destroy_net(void *h) { dt_net_free((dt_net *)h); }
static dt_status probe_net(void *h) {
  size_t n = 0;
  return dt_net_num_params(&n, (dt_net *)h);
}

static void *create_optimizer(void) {
  dt_optimizer *o = NULL;
  return CHECK_OK(dt_optimizer_create(&o, "sgd")) ? o : NULL;
}
static void destroy_optimizer(void *h) { dt_optimizer_free((dt_optimizer *)h); }
static dt_status probe_optimizer(void *h) {
  return dt_optimizer_set_double((dt_optimizer *)h, "learning_rate", 0.5);
}

static void *create_kvstore(void) {
  dt_kvstore *kv = NULL;
  return CHECK_OK(dt_kvstore_create(&kv, "local")) ? kv : NULL;
}
static void destroy_kvstore(void *h) { dt_kvstore_free((dt_kvstore *)h); }
static dt_status probe_kvstore(void *h) {
  int32_t rank = -1;
  return dt_kvstore_rank(&rank, (dt_kvstore *)h);
}

static void *create_loader(void) {
  dt_data_loader *l = NULL;
  return CHECK_OK(dt_data_loader_create(&l, g_images_path, g_labels_path, NULL))
             ? l
             : NULL;
}
static void destroy_loader(void *h) {
  dt_data_loader_free((dt_data_loader *)h);
}
static dt_status probe_loader(void *h) {
  size_t n = 0;
  return dt_data_loader_num_samples(&n, (dt_data_loader *)h);
}

/* The trainer keeps its net alive; the optimizer is copied. */
static void *create_trainer(void) {
  dt_net *n = (dt_net *)create_net();
  dt_optimizer *o = (dt_optimizer *)create_optimizer();
  dt_trainer *t = NULL;
  if (n != NULL && o != NULL &&
      !CHECK_OK(dt_trainer_create(&t, n, o, NULL, NULL))) {
    t = NULL;
  }
  dt_net_free(n);
  dt_optimizer_free(o);
  return t;
}
static void destroy_trainer(void *h) { dt_trainer_free((dt_trainer *)h); }
static dt_status probe_trainer(void *h) {
  double lr = 0;
  return dt_trainer_learning_rate(&lr, (dt_trainer *)h);
}

#define REUSE_MAX_ROUNDS 1000

static const kind_ops k_kinds[] = {
    {"dt_ndarray", REUSE_MAX_ROUNDS, create_ndarray, destroy_ndarray,
     probe_ndarray},
    {"dt_context", REUSE_MAX_ROUNDS, create_context, destroy_context,
     probe_context},
    {"dt_named_arrays", 200, create_list, destroy_list, probe_list},
    {"dt_net", 100, create_net, destroy_net, probe_net},
    {"dt_optimizer", REUSE_MAX_ROUNDS, create_optimizer, destroy_optimizer,
     probe_optimizer},
    {"dt_kvstore", 200, create_kvstore, destroy_kvstore, probe_kvstore},
    {"dt_data_loader", 100, create_loader, destroy_loader, probe_loader},
    {"dt_trainer", 100, create_trainer, destroy_trainer, probe_trainer},
};

/* Creates and frees handles of one kind round after round: each new handle
 * differs from every handle freed before it, the freed ones stay invalid
 * for calls and for free, and a second free of a freed handle leaves the
 * new live one alone. Only failures are counted, so that a thousand rounds
 * do not swamp the totals. */
static void reuse_rounds(const kind_ops *k) {
  static void *freed[REUSE_MAX_ROUNDS + 1];
  int n = 0, r, i, failures = 0;
  char what[160];
  void *first = k->create();
  if (first == NULL) return;
  k->destroy(first);
  freed[n++] = first;
  for (r = 0; r < k->rounds && failures == 0; r++) {
    void *b = k->create();
    if (b == NULL) return;
    for (i = 0; i < n; i++) {
      if (b == freed[i]) {
        snprintf(what, sizeof what,
                 "%s: round %d hands out the value of freed handle %d", k->name,
                 r, i);
        capi_check_impl(0, __FILE__, __LINE__, what);
        failures++;
        break;
      }
    }
    if (k->probe(freed[n - 1]) != DT_ERR_INVALID_HANDLE) {
      snprintf(what, sizeof what,
               "%s: round %d: a call on the freed handle is not "
               "DT_ERR_INVALID_HANDLE",
               k->name, r);
      capi_check_impl(0, __FILE__, __LINE__, what);
      failures++;
    }
    k->destroy(freed[n - 1]); /* a double free */
    if (k->probe(b) != DT_OK) {
      snprintf(what, sizeof what,
               "%s: round %d: the new handle died (a double free of the old "
               "one freed it?)",
               k->name, r);
      capi_check_impl(0, __FILE__, __LINE__, what);
      failures++;
      /* It is gone (or broken): freeing it again would only muddle. */
      freed[n++] = b;
      continue;
    }
    k->destroy(b);
    freed[n++] = b;
  }
  snprintf(what, sizeof what, "%s: %d rounds of free and re-create", k->name,
           r);
  capi_check_impl(failures == 0, __FILE__, __LINE__, what);
}

static void test_reused_memory(void) {
  size_t i;
  dt_ndarray *g = make4(), *g2 = make4();
  {
    dt_ndarray *a = make4(), *b;
    dt_ndarray_free(a);
    b = make4();
    note("freed ndarray, memory likely reused by a new one");
    CHECK(b != a);
    ndarray_batch(a, DT_ERR_INVALID_HANDLE, g, g2);
    ndarray_batch(a, DT_ERR_INVALID_HANDLE, b, g2);
    expect_good_unchanged(b, __LINE__);
    dt_ndarray_free(a);
    CHECK_LAST_ERROR();
    expect_good_unchanged(b, __LINE__);
    note("freed ndarray used as another kind");
    context_batch((const dt_context *)a, DT_ERR_INVALID_HANDLE);
    list_batch((const dt_named_arrays *)a, DT_ERR_INVALID_HANDLE);
    dt_context_free((dt_context *)a);
    CHECK_LAST_ERROR();
    expect_good_unchanged(b, __LINE__);
    dt_ndarray_free(b);
  }
  {
    /* A view is the same struct as an array: its freed handle must not
     * reach the next view either. */
    dt_ndarray *a = NULL, *b = NULL;
    CHECK_OK(dt_ndarray_slice(&a, g2, 0, 4));
    dt_ndarray_free(a);
    CHECK_OK(dt_ndarray_slice(&b, g2, 0, 4));
    note("freed view, memory likely reused by a new view");
    CHECK(b != a);
    ndarray_batch(a, DT_ERR_INVALID_HANDLE, g, g2);
    expect_good_unchanged(b, __LINE__);
    dt_ndarray_free(b);
  }
  {
    dt_context *a = NULL, *b = NULL;
    dt_device_type t = (dt_device_type)42;
    CHECK_OK(dt_context_create(&a, DT_DEVICE_CPU, 0));
    dt_context_free(a);
    CHECK_OK(dt_context_create(&b, DT_DEVICE_CPU, 0));
    note("freed context, memory likely reused by a new one");
    CHECK(b != a);
    context_batch(a, DT_ERR_INVALID_HANDLE);
    dt_context_free(a);
    CHECK_LAST_ERROR();
    CHECK_OK(dt_context_device_type(&t, b));
    CHECK_EQ_I64(t, DT_DEVICE_CPU);
    note("freed context used as an ndarray");
    ndarray_batch((dt_ndarray *)a, DT_ERR_INVALID_HANDLE, g, g2);
    dt_context_free(b);
  }
  {
    dt_named_arrays *a = load_good(), *b;
    size_t n = 0;
    dt_named_arrays_free(a);
    b = load_good();
    note("freed list, memory likely reused by a new one");
    CHECK(b != a);
    list_batch(a, DT_ERR_INVALID_HANDLE);
    dt_named_arrays_free(a);
    CHECK_LAST_ERROR();
    CHECK_OK(dt_named_arrays_count(&n, b));
    CHECK_EQ_U64(n, 1);
    dt_named_arrays_free(b);
  }
  if (!CHECK(write_idx_files())) return;
  for (i = 0; i < sizeof k_kinds / sizeof k_kinds[0]; i++) {
    note(k_kinds[i].name);
    reuse_rounds(&k_kinds[i]);
  }
  unlink(g_images_path);
  unlink(g_labels_path);
  dt_ndarray_free(g);
  dt_ndarray_free(g2);
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
