/*
 * KVStores: every error status (mismatched shapes and dtypes, empty and NULL
 * arguments), and NULL, freed and mistyped handles.
 */
#include "capi_kvstore_test_util.h"

void test_mismatches(void) {
  static const float x[4] = {1.0f, 2.0f, 3.0f, 4.0f};
  const int64_t dims22[2] = {2, 2}, four = 4;
  dt_kvstore *kv = make_local();
  dt_ndarray *a = vec(x, 4), *short3 = vec(NULL, 3), *square = NULL, *f64 = NULL, *i32 = NULL;
  const uint64_t key1[1] = {1};
  const dt_ndarray *values[1];
  dt_ndarray *outs[1];
  if (kv == NULL || a == NULL || short3 == NULL) return;
  CHECK_OK(dt_ndarray_create(&square, g_ctx, DT_FLOAT32, dims22, 2));
  CHECK_OK(dt_ndarray_create(&f64, g_ctx, DT_FLOAT64, &four, 1));
  CHECK_OK(dt_ndarray_create(&i32, g_ctx, DT_INT32, &four, 1));
  values[0] = a;
  CHECK_OK(dt_kvstore_init(kv, key1, values, 1));

  values[0] = short3;
  outs[0] = short3;
  CHECK_STATUS(dt_kvstore_push(kv, key1, values, 1, 0), DT_ERR_SHAPE_MISMATCH);
  CHECK_STATUS(dt_kvstore_pull(kv, key1, outs, 1, 0), DT_ERR_SHAPE_MISMATCH);
  /* Same element count, other shape. */
  values[0] = square;
  outs[0] = square;
  CHECK_STATUS(dt_kvstore_push(kv, key1, values, 1, 0), DT_ERR_SHAPE_MISMATCH);
  CHECK_STATUS(dt_kvstore_pull(kv, key1, outs, 1, 0), DT_ERR_SHAPE_MISMATCH);
  CHECK_STATUS(dt_kvstore_pushpull(kv, key1, values, outs, 1, 0), DT_ERR_SHAPE_MISMATCH);
  values[0] = f64;
  outs[0] = f64;
  CHECK_STATUS(dt_kvstore_push(kv, key1, values, 1, 0), DT_ERR_DTYPE_MISMATCH);
  CHECK_STATUS(dt_kvstore_pull(kv, key1, outs, 1, 0), DT_ERR_DTYPE_MISMATCH);
  values[0] = i32;
  outs[0] = i32;
  CHECK_STATUS(dt_kvstore_push(kv, key1, values, 1, 0), DT_ERR_DTYPE_MISMATCH);
  CHECK_STATUS(dt_kvstore_pull(kv, key1, outs, 1, 0), DT_ERR_DTYPE_MISMATCH);
  /* Nothing of that reached the stored value. */
  outs[0] = a;
  CHECK_OK(dt_ndarray_fill(a, 0.0));
  CHECK_OK(dt_kvstore_pull(kv, key1, outs, 1, 0));
  CHECK_VALUES(a, x, 4);

  /* pushpull and broadcast are one call each: when the outs do not fit, the
   * call fails and changes nothing (a retry must not push twice, or find
   * its key already initialised). */
  {
    static const float y[4] = {-1.0f, -1.0f, -1.0f, -1.0f};
    const uint64_t key20[1] = {20};
    dt_ndarray *b = vec(y, 4);
    if (b != NULL) {
      values[0] = b;
      outs[0] = short3;
      CHECK_STATUS(dt_kvstore_pushpull(kv, key1, values, outs, 1, 0), DT_ERR_SHAPE_MISMATCH);
      outs[0] = a;
      CHECK_OK(dt_kvstore_pull(kv, key1, outs, 1, 0));
      CHECK_VALUES(a, x, 4);
      outs[0] = f64;
      CHECK_STATUS(dt_kvstore_broadcast(kv, key20, values, outs, 1), DT_ERR_DTYPE_MISMATCH);
      outs[0] = a;
      CHECK_STATUS(dt_kvstore_pull(kv, key20, outs, 1, 0), DT_ERR_NOT_FOUND);
      CHECK_OK(dt_kvstore_init(kv, key20, values, 1));
      dt_ndarray_free(b);
    }
  }

  dt_ndarray_free(a);
  dt_ndarray_free(short3);
  dt_ndarray_free(square);
  dt_ndarray_free(f64);
  dt_ndarray_free(i32);
  dt_kvstore_free(kv);
}

void test_empty_and_null(void) {
  static const float x[2] = {1.0f, 2.0f};
  dt_kvstore *kv = make_local();
  dt_ndarray *a = vec(x, 2), *freed = vec(x, 2);
  const uint64_t key[1] = {1};
  const dt_ndarray *values[1];
  const dt_ndarray *null_values[1] = {NULL};
  dt_ndarray *null_outs[1] = {NULL};
  dt_ndarray *outs[1];
  if (kv == NULL || a == NULL || freed == NULL) return;
  /* count 0 with NULL arrays is a no-op. */
  CHECK_OK(dt_kvstore_init(kv, NULL, NULL, 0));
  CHECK_OK(dt_kvstore_push(kv, NULL, NULL, 0, 0));
  CHECK_OK(dt_kvstore_pull(kv, NULL, NULL, 0, 0));
  CHECK_OK(dt_kvstore_pushpull(kv, NULL, NULL, NULL, 0, 0));
  CHECK_OK(dt_kvstore_broadcast(kv, NULL, NULL, NULL, 0));
  CHECK_OK(dt_kvstore_init_str(kv, NULL, NULL, 0));
  CHECK_OK(dt_kvstore_push_str(kv, NULL, NULL, 0, 0));
  CHECK_OK(dt_kvstore_pull_str(kv, NULL, NULL, 0, 0));
  CHECK_OK(dt_kvstore_pushpull_str(kv, NULL, NULL, NULL, 0, 0));

  values[0] = a;
  outs[0] = a;
  CHECK_STATUS(dt_kvstore_init(NULL, key, values, 1), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_kvstore_init(kv, NULL, values, 1), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_kvstore_init(kv, key, NULL, 1), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_kvstore_init(kv, key, null_values, 1), DT_ERR_INVALID_ARGUMENT);
  CHECK(last_error_has("values[0]"));
  /* None of those stored key 1. */
  CHECK_STATUS(dt_kvstore_pull(kv, key, outs, 1, 0), DT_ERR_NOT_FOUND);
  CHECK_OK(dt_kvstore_init(kv, key, values, 1));
  CHECK_STATUS(dt_kvstore_push(NULL, key, values, 1, 0), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_kvstore_push(kv, NULL, values, 1, 0), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_kvstore_push(kv, key, NULL, 1, 0), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_kvstore_push(kv, key, null_values, 1, 0), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_kvstore_pull(NULL, key, outs, 1, 0), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_kvstore_pull(kv, NULL, outs, 1, 0), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_kvstore_pull(kv, key, NULL, 1, 0), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_kvstore_pull(kv, key, null_outs, 1, 0), DT_ERR_INVALID_ARGUMENT);
  CHECK(last_error_has("outs[0]"));
  CHECK_STATUS(dt_kvstore_pushpull(NULL, key, values, outs, 1, 0), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_kvstore_pushpull(kv, NULL, values, outs, 1, 0), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_kvstore_pushpull(kv, key, NULL, outs, 1, 0), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_kvstore_pushpull(kv, key, values, NULL, 1, 0), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_kvstore_pushpull(kv, key, values, null_outs, 1, 0), DT_ERR_INVALID_ARGUMENT);

  /* A freed array, and a handle of another kind, in the arrays. */
  dt_ndarray_free(freed);
  values[0] = freed;
  outs[0] = freed;
  CHECK_STATUS(dt_kvstore_push(kv, key, values, 1, 0), DT_ERR_INVALID_HANDLE);
  CHECK_STATUS(dt_kvstore_pull(kv, key, outs, 1, 0), DT_ERR_INVALID_HANDLE);
  values[0] = (const dt_ndarray *)kv;
  CHECK_STATUS(dt_kvstore_push(kv, key, values, 1, 0), DT_ERR_INVALID_HANDLE);
  {
    const uint64_t key2[1] = {2};
    CHECK_STATUS(dt_kvstore_init(kv, key2, values, 1), DT_ERR_INVALID_HANDLE);
  }
  dt_ndarray_free(a);
  dt_kvstore_free(kv);
}

void test_handles(void) {
  static const float x[2] = {1.0f, 2.0f};
  dt_kvstore *kv = make_local();
  dt_ndarray *a = vec(x, 2), *o = vec(NULL, 2);
  dt_optimizer *opt = NULL;
  const uint64_t key[1] = {1};
  const char *names[1] = {"w"};
  const char *type = "untouched";
  int32_t rank = -1;
  const dt_ndarray *values[1];
  dt_ndarray *outs[1];
  if (kv == NULL || a == NULL || o == NULL) return;
  values[0] = a;
  outs[0] = o;
  CHECK_OK(dt_kvstore_init(kv, key, values, 1));
  /* The store copied the value: freeing the source is fine. */
  dt_ndarray_free(a);
  CHECK_OK(dt_kvstore_pull(kv, key, outs, 1, 0));
  CHECK_VALUES(o, x, 2);
  CHECK_OK(dt_optimizer_create(&opt, "sgd"));

  /* Another kind of handle is not a store. */
  CHECK_STATUS(dt_kvstore_rank(&rank, (const dt_kvstore *)o), DT_ERR_INVALID_HANDLE);
  CHECK_STATUS(dt_kvstore_barrier((dt_kvstore *)opt), DT_ERR_INVALID_HANDLE);
  CHECK_STATUS(dt_kvstore_pull((dt_kvstore *)o, key, outs, 1, 0), DT_ERR_INVALID_HANDLE);
  dt_kvstore_free((dt_kvstore *)opt); /* not a store: ignored, reported */
  CHECK(last_error_has("dt_kvstore_free"));
  CHECK_OK(dt_optimizer_set_double(opt, "learning_rate", 0.1)); /* still alive */

  dt_kvstore_free(kv);
  values[0] = o;
  CHECK_STATUS(dt_kvstore_type(&type, kv), DT_ERR_INVALID_HANDLE);
  CHECK_STATUS(dt_kvstore_rank(&rank, kv), DT_ERR_INVALID_HANDLE);
  CHECK_STATUS(dt_kvstore_num_workers(&rank, kv), DT_ERR_INVALID_HANDLE);
  CHECK_STATUS(dt_kvstore_init(kv, key, values, 1), DT_ERR_INVALID_HANDLE);
  CHECK_STATUS(dt_kvstore_push(kv, key, values, 1, 0), DT_ERR_INVALID_HANDLE);
  CHECK_STATUS(dt_kvstore_pull(kv, key, outs, 1, 0), DT_ERR_INVALID_HANDLE);
  CHECK_STATUS(dt_kvstore_pushpull(kv, key, values, outs, 1, 0), DT_ERR_INVALID_HANDLE);
  CHECK_STATUS(dt_kvstore_broadcast(kv, key, values, outs, 1), DT_ERR_INVALID_HANDLE);
  CHECK_STATUS(dt_kvstore_init_str(kv, names, values, 1), DT_ERR_INVALID_HANDLE);
  CHECK_STATUS(dt_kvstore_push_str(kv, names, values, 1, 0), DT_ERR_INVALID_HANDLE);
  CHECK_STATUS(dt_kvstore_pull_str(kv, names, outs, 1, 0), DT_ERR_INVALID_HANDLE);
  CHECK_STATUS(dt_kvstore_pushpull_str(kv, names, values, outs, 1, 0), DT_ERR_INVALID_HANDLE);
  CHECK_STATUS(dt_kvstore_set_optimizer(kv, opt), DT_ERR_INVALID_HANDLE);
  CHECK_STATUS(dt_kvstore_barrier(kv), DT_ERR_INVALID_HANDLE);
  CHECK_STREQ(type, "untouched");
  CHECK_EQ_I64(rank, -1);
  dt_kvstore_free(kv); /* double free: ignored, reported */
  CHECK(last_error_has("dt_kvstore_free"));
  dt_optimizer_free(opt);
  dt_ndarray_free(o);
}
