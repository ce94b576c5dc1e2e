/*
 * Freed handles whose memory a new handle of the same kind has very likely
 * taken over: a handle value is never handed out twice, so the freed one
 * stays invalid and the new one is never hit by calls on the old.
 */
#include "capi_handle_test_util.h"

/* ---- freed handles whose memory is reused -------------------------------
 * A new handle of the same kind and size right after a free is where the
 * allocator most likely puts the new object at the freed one's address. With
 * handles that were addresses, calls on the freed handle then silently
 * reached the new object. */

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

void test_reused_memory(void) {
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
