/*
 * KVStores: types, init/push/pull/pushpull/broadcast with exact values, key
 * ranges, the optimizer on the store and joining workers. String keys:
 * capi_kvstore/string_keys.c; every error status and NULL, freed and mistyped
 * handles: capi_kvstore/errors.c.
 */
#include "capi_kvstore/capi_kvstore_test_util.h"

/* Shared with the tests in capi_kvstore/. */
dt_context *g_ctx;

static void test_create(void) {
  dt_kvstore *kv = CAPI_SENTINEL(dt_kvstore);
  dt_kvstore *local = make_local();
  const char *type = NULL;
  int32_t rank = -1, workers = -1, gpus = 0;
  dt_status status;

  if (local != NULL) {
    CHECK_OK(dt_kvstore_type(&type, local));
    CHECK_STREQ(type, "local");
    CHECK_OK(dt_kvstore_rank(&rank, local));
    CHECK_EQ_I64(rank, 0);
    CHECK_OK(dt_kvstore_num_workers(&workers, local));
    CHECK_EQ_I64(workers, 1);
    CHECK_OK(dt_kvstore_barrier(local));
    {
      int64_t sent = -1, received = -1;
      CHECK_OK(dt_kvstore_traffic(&sent, &received, local));
      CHECK_EQ_I64(sent, 0);
      CHECK_EQ_I64(received, 0);
      CHECK_STATUS(dt_kvstore_traffic(NULL, &received, local), DT_ERR_INVALID_ARGUMENT);
      CHECK_STATUS(dt_kvstore_traffic(&sent, NULL, local), DT_ERR_INVALID_ARGUMENT);
      CHECK_STATUS(dt_kvstore_traffic(&sent, &received, NULL), DT_ERR_INVALID_ARGUMENT);
    }
    {
      int32_t joined = -1;
      int64_t before = -1;
      CHECK_OK(dt_kvstore_joined_running_job(&joined, &before, local));
      CHECK_EQ_I64(joined, 0);
      CHECK_EQ_I64(before, 0);
      CHECK_STATUS(dt_kvstore_joined_running_job(NULL, &before, local), DT_ERR_INVALID_ARGUMENT);
      CHECK_STATUS(dt_kvstore_joined_running_job(&joined, NULL, local), DT_ERR_INVALID_ARGUMENT);
      CHECK_STATUS(dt_kvstore_joined_running_job(&joined, &before, NULL), DT_ERR_INVALID_ARGUMENT);
    }
    rank = -1;
    workers = -1;
    type = "untouched";
    CHECK_STATUS(dt_kvstore_type(NULL, local), DT_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(dt_kvstore_type(&type, NULL), DT_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(dt_kvstore_rank(NULL, local), DT_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(dt_kvstore_rank(&rank, NULL), DT_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(dt_kvstore_num_workers(NULL, local), DT_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(dt_kvstore_num_workers(&workers, NULL), DT_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(dt_kvstore_barrier(NULL), DT_ERR_INVALID_ARGUMENT);
    CHECK_STREQ(type, "untouched");
    CHECK_EQ_I64(rank, -1);
    CHECK_EQ_I64(workers, -1);
    dt_kvstore_free(local);
  }

  /* "device" reduces on a GPU: absent here, or not built in. */
  CHECK_OK(dt_gpu_count(&gpus));
  status = dt_kvstore_create(&kv, "device");
  if (gpus > 0) {
    if (CHECK_OK(status)) {
      CHECK_OK(dt_kvstore_type(&type, kv));
      CHECK_STREQ(type, "device");
      dt_kvstore_free(kv);
      kv = CAPI_SENTINEL(dt_kvstore);
    }
  } else {
    CHECK_STATUS2(status, DT_ERR_NO_DEVICE, DT_ERR_NOT_SUPPORTED);
    CHECK(kv == CAPI_SENTINEL(dt_kvstore));
  }

  /* A dist type outside a job (no DMLC_* environment) names what is missing. */
  CHECK_STATUS(dt_kvstore_create(&kv, "dist_sync"), DT_ERR_INVALID_ARGUMENT);
  CHECK(last_error_has("DMLC_"));
  /* The settings dtrun passes in the environment count, as for
   * dt_kvstore_create_ex: a malformed one is refused before anything else. */
  setenv("DT_WORKER_LOSS", "sometimes", 1);
  CHECK_STATUS(dt_kvstore_create(&kv, "allreduce"), DT_ERR_INVALID_ARGUMENT);
  CHECK(last_error_has("DT_WORKER_LOSS") && last_error_has("dt_kvstore_create"));
  unsetenv("DT_WORKER_LOSS");
  CHECK_STATUS(dt_kvstore_create(&kv, "bogus"), DT_ERR_INVALID_ARGUMENT);
  CHECK(last_error_has("bogus") && last_error_has("local"));
  CHECK_STATUS(dt_kvstore_create(&kv, ""), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_kvstore_create(&kv, NULL), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_kvstore_create(NULL, "local"), DT_ERR_INVALID_ARGUMENT);
  CHECK(kv == CAPI_SENTINEL(dt_kvstore));
  dt_kvstore_free(NULL);

  /* MXNet's names, case-insensitive; the type reported is the canonical one. */
  {
    dt_kvstore *local = NULL;
    const char *type = NULL;
    CHECK_OK(dt_kvstore_create(&local, "Local_Update_CPU"));
    CHECK_OK(dt_kvstore_type(&type, local));
    CHECK(type != NULL && strcmp(type, "local") == 0);
    /* Nothing leaves a local store: no compression. */
    CHECK_STATUS(dt_kvstore_set_gradient_compression(local, "2bit"), DT_ERR_NOT_SUPPORTED);
    CHECK_STATUS(dt_kvstore_set_gradient_compression(local, NULL), DT_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(dt_kvstore_set_gradient_compression(NULL, "2bit"), DT_ERR_INVALID_ARGUMENT);
    dt_kvstore_free(local);
  }
}

static void test_push_pull(void) {
  static const float init[4] = {1.0f, 2.0f, 3.0f, 4.0f};
  static const float one[4] = {1.0f, 1.0f, 1.0f, 1.0f};
  static const float two[4] = {2.5f, 2.0f, -1.0f, 0.25f};
  static const float sum[4] = {3.5f, 3.0f, 0.0f, 1.25f};
  dt_kvstore *kv = make_local();
  dt_ndarray *v0 = vec(init, 4), *v1 = vec(one, 4), *v2 = vec(two, 4);
  dt_ndarray *o1 = vec(NULL, 4), *o2 = vec(NULL, 4);
  const uint64_t key3[1] = {3}, key33[2] = {3, 3}, key4[1] = {4};
  const dt_ndarray *values[2];
  dt_ndarray *outs[2];
  if (kv == NULL || v0 == NULL || v1 == NULL || v2 == NULL || o1 == NULL || o2 == NULL) return;

  values[0] = v0;
  CHECK_OK(dt_kvstore_init(kv, key3, values, 1));
  /* init copies: changing the source later does not change the store. */
  CHECK_OK(dt_ndarray_fill(v0, 9.0));
  outs[0] = o1;
  CHECK_OK(dt_kvstore_pull(kv, key3, outs, 1, 0));
  CHECK_VALUES(o1, init, 4);

  /* Two values under one key in one call are summed; without an optimizer
   * the sum replaces the stored value. */
  values[0] = v1;
  values[1] = v2;
  CHECK_OK(dt_kvstore_push(kv, key33, values, 2, 0));
  outs[0] = o1;
  outs[1] = o2;
  CHECK_OK(dt_kvstore_pull(kv, key33, outs, 2, 0));
  CHECK_VALUES(o1, sum, 4);
  CHECK_VALUES(o2, sum, 4);

  /* A single push replaces (no accumulation across calls). */
  values[0] = v1;
  CHECK_OK(dt_kvstore_push(kv, key3, values, 1, 7)); /* priority ignored */
  CHECK_OK(dt_kvstore_pull(kv, key3, outs, 1, -7));
  CHECK_VALUES(o1, one, 4);

  /* pushpull with values and outs the same arrays. */
  CHECK_OK(dt_ndarray_copy_from_host(o1, one, sizeof one));
  CHECK_OK(dt_ndarray_copy_from_host(o2, two, sizeof two));
  values[0] = o1;
  values[1] = o2;
  CHECK_OK(dt_kvstore_pushpull(kv, key33, values, outs, 2, 0));
  CHECK_VALUES(o1, sum, 4);
  CHECK_VALUES(o2, sum, 4);
  CHECK_OK(dt_kvstore_pull(kv, key3, &o2, 1, 0));
  CHECK_VALUES(o2, sum, 4);

  /* An uninitialised key, in a call with a good one: nothing happens. */
  values[0] = v1;
  values[1] = v2;
  {
    const uint64_t mixed[2] = {3, 4};
    CHECK_STATUS(dt_kvstore_push(kv, mixed, values, 2, 0), DT_ERR_NOT_FOUND);
    CHECK(last_error_has("4"));
    CHECK_OK(dt_kvstore_pull(kv, key3, outs, 1, 0));
    CHECK_VALUES(o1, sum, 4);
  }
  CHECK_STATUS(dt_kvstore_pull(kv, key4, outs, 1, 0), DT_ERR_NOT_FOUND);
  CHECK_STATUS(dt_kvstore_pushpull(kv, key4, values, outs, 1, 0), DT_ERR_NOT_FOUND);

  /* Initialised twice; a failed init stores nothing. */
  values[0] = v1;
  CHECK_STATUS(dt_kvstore_init(kv, key3, values, 1), DT_ERR_BAD_STATE);
  {
    const uint64_t keys[2] = {4, 3};
    values[0] = v2;
    values[1] = v2;
    CHECK_STATUS(dt_kvstore_init(kv, keys, values, 2), DT_ERR_BAD_STATE);
    CHECK_STATUS(dt_kvstore_pull(kv, key4, outs, 1, 0), DT_ERR_NOT_FOUND);
  }
  CHECK_OK(dt_kvstore_pull(kv, key3, outs, 1, 0));
  CHECK_VALUES(o1, sum, 4);

  dt_ndarray_free(v0);
  dt_ndarray_free(v1);
  dt_ndarray_free(v2);
  dt_ndarray_free(o1);
  dt_ndarray_free(o2);
  dt_kvstore_free(kv);
}

static void test_broadcast(void) {
  static const float first[3] = {1.5f, -2.0f, 8.0f};
  static const float second[3] = {7.0f, 7.0f, 7.0f};
  static const float other[2] = {0.5f, 0.25f};
  dt_kvstore *kv = make_local();
  dt_ndarray *a = vec(first, 3), *b = vec(second, 3), *c = vec(other, 2);
  dt_ndarray *o1 = vec(NULL, 3), *o2 = vec(NULL, 3), *o3 = vec(NULL, 2);
  const uint64_t keys[3] = {7, 7, 8};
  const dt_ndarray *values[3];
  dt_ndarray *outs[3];
  if (kv == NULL || a == NULL || b == NULL || c == NULL || o1 == NULL || o2 == NULL || o3 == NULL) return;
  values[0] = a;
  values[1] = b;
  values[2] = c;
  outs[0] = o1;
  outs[1] = o2;
  outs[2] = o3;
  /* Each key starts from its first value, and every out receives it. */
  CHECK_OK(dt_kvstore_broadcast(kv, keys, values, outs, 3));
  CHECK_VALUES(o1, first, 3);
  CHECK_VALUES(o2, first, 3);
  CHECK_VALUES(o3, other, 2);
  CHECK_STATUS(dt_kvstore_broadcast(kv, keys, values, outs, 1), DT_ERR_BAD_STATE);
  CHECK_STATUS(dt_kvstore_broadcast(NULL, keys, values, outs, 3), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_kvstore_broadcast(kv, NULL, values, outs, 3), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_kvstore_broadcast(kv, keys, NULL, outs, 3), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_kvstore_broadcast(kv, keys, values, NULL, 3), DT_ERR_INVALID_ARGUMENT);
  dt_ndarray_free(a);
  dt_ndarray_free(b);
  dt_ndarray_free(c);
  dt_ndarray_free(o1);
  dt_ndarray_free(o2);
  dt_ndarray_free(o3);
  dt_kvstore_free(kv);
}

static void test_key_range(void) {
  static const float x[2] = {1.0f, 2.0f};
  dt_kvstore *kv = make_local();
  dt_ndarray *a = vec(x, 2), *o = vec(NULL, 2);
  const uint64_t top[1] = {UINT64_C(1) << 63}, max[1] = {UINT64_MAX};
  const uint64_t below[1] = {(UINT64_C(1) << 63) - 1};
  const dt_ndarray *values[1];
  dt_ndarray *outs[1];
  if (kv == NULL || a == NULL || o == NULL) return;
  values[0] = a;
  outs[0] = o;
  CHECK_STATUS(dt_kvstore_init(kv, top, values, 1), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_kvstore_init(kv, max, values, 1), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_kvstore_push(kv, top, values, 1, 0), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_kvstore_pull(kv, top, outs, 1, 0), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_kvstore_pushpull(kv, top, values, outs, 1, 0), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_kvstore_broadcast(kv, top, values, outs, 1), DT_ERR_INVALID_ARGUMENT);
  /* 2^63 - 1 is the largest integer key. */
  CHECK_OK(dt_kvstore_init(kv, below, values, 1));
  CHECK_OK(dt_kvstore_pull(kv, below, outs, 1, 0));
  CHECK_VALUES(o, x, 2);
  /* The rejected 2^63 was not stored under some other key either. */
  CHECK_STATUS(dt_kvstore_pull(kv, top, outs, 1, 0), DT_ERR_INVALID_ARGUMENT);
  dt_ndarray_free(a);
  dt_ndarray_free(o);
  dt_kvstore_free(kv);
}

static void test_optimizer(void) {
  static const float w0[4] = {1.0f, 2.0f, 3.0f, 4.0f};
  static const float g1[4] = {0.5f, 0.5f, 1.0f, 2.0f};
  static const float g2[4] = {0.5f, 1.5f, 1.0f, 2.0f};
  /* w - 0.5 * (g1 + g2) */
  static const float w1[4] = {0.5f, 1.0f, 2.0f, 2.0f};
  /* then w1 - 0.5 * g1: the store keeps its copy of lr 0.5. */
  static const float w2[4] = {0.25f, 0.75f, 1.5f, 1.0f};
  dt_kvstore *kv = make_local();
  dt_optimizer *opt = NULL;
  dt_ndarray *w = vec(w0, 4), *a = vec(g1, 4), *b = vec(g2, 4), *o = vec(NULL, 4);
  const uint64_t key[1] = {11}, key2[2] = {11, 11};
  const dt_ndarray *values[2];
  dt_ndarray *outs[1];
  if (kv == NULL || w == NULL || a == NULL || b == NULL || o == NULL) return;
  if (!CHECK_OK(dt_optimizer_create(&opt, "sgd"))) return;
  CHECK_OK(dt_optimizer_set_double(opt, "learning_rate", 0.5));
  CHECK_OK(dt_kvstore_set_optimizer(kv, opt));
  /* The store copied the description. */
  CHECK_OK(dt_optimizer_set_double(opt, "learning_rate", 100.0));

  values[0] = w;
  CHECK_OK(dt_kvstore_init(kv, key, values, 1));
  values[0] = a;
  values[1] = b;
  outs[0] = o;
  CHECK_OK(dt_kvstore_push(kv, key2, values, 2, 0));
  CHECK_OK(dt_kvstore_pull(kv, key, outs, 1, 0));
  CHECK_VALUES(o, w1, 4);
  CHECK_OK(dt_kvstore_pushpull(kv, key, values, outs, 1, 0));
  CHECK_VALUES(o, w2, 4);

  CHECK_STATUS(dt_kvstore_set_optimizer(kv, NULL), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_kvstore_set_optimizer(NULL, opt), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_kvstore_set_optimizer(kv, (const dt_optimizer *)w), DT_ERR_INVALID_HANDLE);
  dt_optimizer_free(opt);
  CHECK_STATUS(dt_kvstore_set_optimizer(kv, opt), DT_ERR_INVALID_HANDLE);
  /* The store's optimizer outlives the freed description. */
  CHECK_OK(dt_kvstore_push(kv, key, values, 1, 0));
  CHECK_OK(dt_kvstore_pull(kv, key, outs, 1, 0));
  {
    static const float w3[4] = {0.0f, 0.5f, 1.0f, 0.0f};
    CHECK_VALUES(o, w3, 4);
  }
  dt_ndarray_free(w);
  dt_ndarray_free(a);
  dt_ndarray_free(b);
  dt_ndarray_free(o);
  dt_kvstore_free(kv);
}

/* Letting a worker into a running job is for the "allreduce" store under
 * DT_WORKER_LOSS=continue (tests/integration/worker_loss_test.cc runs it);
 * the other stores let nobody in, and say so. */
static void test_joining_workers(void) {
  dt_kvstore *kv = NULL;
  int32_t admitted = -1;
  size_t length = 99;
  char buf[4] = {0};
  const char state[3] = {1, 2, 3};
  if (!CHECK_OK(dt_kvstore_create(&kv, "local"))) return;
  CHECK_OK(dt_kvstore_admit_joining_workers(&admitted, kv));
  CHECK_EQ_I64(admitted, 0);
  CHECK_STATUS(dt_kvstore_hand_over_state(&length, kv, state, sizeof state), DT_ERR_NOT_SUPPORTED);
  CHECK(last_error_has("dt_kvstore_hand_over_state") && last_error_has("local"));
  CHECK_EQ_U64(length, 99);
  /* Nothing handed over yet: no bytes. */
  CHECK_OK(dt_kvstore_handed_state(NULL, 0, &length, kv));
  CHECK_EQ_U64(length, 0);
  CHECK_OK(dt_kvstore_handed_state(buf, sizeof buf, &length, kv));
  CHECK_EQ_U64(length, 0);

  CHECK_STATUS(dt_kvstore_admit_joining_workers(NULL, kv), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_kvstore_admit_joining_workers(&admitted, NULL), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_kvstore_hand_over_state(NULL, kv, state, sizeof state), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_kvstore_hand_over_state(&length, kv, NULL, 3), DT_ERR_INVALID_ARGUMENT);
  CHECK(last_error_has("src"));
  CHECK_STATUS(dt_kvstore_hand_over_state(&length, NULL, state, sizeof state), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_kvstore_handed_state(NULL, 4, &length, kv), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_kvstore_handed_state(buf, sizeof buf, NULL, kv), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_kvstore_handed_state(buf, sizeof buf, &length, NULL), DT_ERR_INVALID_ARGUMENT);
  dt_kvstore_free(kv);
}

int main(void) {
  int rc;
  if (dt_context_create(&g_ctx, DT_DEVICE_CPU, 0) != DT_OK) {
    fprintf(stderr, "cannot create a CPU context: %s\n", dt_last_error());
    printf("0 passed, 1 failed\n");
    return 1;
  }
  test_create();
  test_push_pull();
  test_broadcast();
  test_key_range();
  test_string_keys();
  test_mismatches();
  test_optimizer();
  test_empty_and_null();
  test_joining_workers();
  test_handles();
  dt_context_free(g_ctx);
  rc = capi_finish();
  return rc;
}
