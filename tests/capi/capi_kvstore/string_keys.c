/*
 * KVStores addressed by string keys.
 */
#include "capi_kvstore_test_util.h"

void test_string_keys(void) {
  static const float wv[3] = {1.0f, 2.0f, 3.0f};
  static const float iv[3] = {-1.0f, -2.0f, -3.0f};
  static const float g1[3] = {0.5f, 0.5f, 0.5f};
  static const float g2[3] = {0.25f, 1.0f, 4.0f};
  static const float gsum[3] = {0.75f, 1.5f, 4.5f};
  dt_kvstore *kv = make_local();
  dt_ndarray *w = vec(wv, 3), *i5 = vec(iv, 3), *a = vec(g1, 3), *b = vec(g2, 3);
  dt_ndarray *o1 = vec(NULL, 3), *o2 = vec(NULL, 3);
  const char *names[2] = {"fc1.weight", "fc1.weight"};
  const char *five[1] = {"5"};
  const char *missing[1] = {"fc2.weight"};
  const char *null_name[1] = {NULL};
  const uint64_t key5[1] = {5};
  const dt_ndarray *values[2];
  dt_ndarray *outs[2];
  if (kv == NULL || w == NULL || i5 == NULL || a == NULL || b == NULL || o1 == NULL || o2 == NULL) return;

  values[0] = w;
  CHECK_OK(dt_kvstore_init_str(kv, names, values, 1));
  values[0] = i5;
  CHECK_OK(dt_kvstore_init(kv, key5, values, 1));
  values[0] = w;
  CHECK_OK(dt_kvstore_init_str(kv, five, values, 1)); /* "5" is not key 5 */
  CHECK_STATUS(dt_kvstore_init_str(kv, names, values, 1), DT_ERR_BAD_STATE);

  outs[0] = o1;
  CHECK_OK(dt_kvstore_pull(kv, key5, outs, 1, 0));
  CHECK_VALUES(o1, iv, 3);
  CHECK_OK(dt_kvstore_pull_str(kv, five, outs, 1, 0));
  CHECK_VALUES(o1, wv, 3);
  CHECK_OK(dt_kvstore_pull_str(kv, names, outs, 1, 0));
  CHECK_VALUES(o1, wv, 3);

  values[0] = a;
  values[1] = b;
  outs[0] = o1;
  outs[1] = o2;
  CHECK_OK(dt_kvstore_push_str(kv, names, values, 2, 0));
  CHECK_OK(dt_kvstore_pull_str(kv, names, outs, 2, 0));
  CHECK_VALUES(o1, gsum, 3);
  CHECK_VALUES(o2, gsum, 3);
  /* The integer key 5 and the name "5" are untouched by that push. */
  CHECK_OK(dt_kvstore_pull(kv, key5, outs, 1, 0));
  CHECK_VALUES(o1, iv, 3);
  CHECK_OK(dt_kvstore_pull_str(kv, five, outs, 1, 0));
  CHECK_VALUES(o1, wv, 3);

  /* pushpull_str, values aliasing outs. */
  CHECK_OK(dt_ndarray_copy_from_host(o1, g1, sizeof g1));
  CHECK_OK(dt_ndarray_copy_from_host(o2, g2, sizeof g2));
  values[0] = o1;
  values[1] = o2;
  CHECK_OK(dt_kvstore_pushpull_str(kv, names, values, outs, 2, 0));
  CHECK_VALUES(o1, gsum, 3);
  CHECK_VALUES(o2, gsum, 3);

  CHECK_STATUS(dt_kvstore_pull_str(kv, missing, outs, 1, 0), DT_ERR_NOT_FOUND);
  CHECK_STATUS(dt_kvstore_push_str(kv, missing, values, 1, 0), DT_ERR_NOT_FOUND);
  CHECK_STATUS(dt_kvstore_pushpull_str(kv, missing, values, outs, 1, 0), DT_ERR_NOT_FOUND);
  CHECK_STATUS(dt_kvstore_init_str(kv, null_name, values, 1), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_kvstore_push_str(kv, null_name, values, 1, 0), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_kvstore_pull_str(kv, null_name, outs, 1, 0), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_kvstore_pushpull_str(kv, null_name, values, outs, 1, 0), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_kvstore_init_str(kv, NULL, values, 1), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_kvstore_push_str(kv, NULL, values, 1, 0), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_kvstore_pull_str(kv, NULL, outs, 1, 0), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_kvstore_pushpull_str(kv, NULL, values, outs, 1, 0), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_kvstore_init_str(kv, missing, NULL, 1), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_kvstore_push_str(kv, names, NULL, 1, 0), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_kvstore_pull_str(kv, names, NULL, 1, 0), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_kvstore_pushpull_str(kv, names, NULL, outs, 1, 0), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_kvstore_pushpull_str(kv, names, values, NULL, 1, 0), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_kvstore_init_str(NULL, names, values, 1), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_kvstore_push_str(NULL, names, values, 1, 0), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_kvstore_pull_str(NULL, names, outs, 1, 0), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_kvstore_pushpull_str(NULL, names, values, outs, 1, 0), DT_ERR_INVALID_ARGUMENT);
  /* The failed init of "fc2.weight" with NULL values stored nothing. */
  CHECK_STATUS(dt_kvstore_pull_str(kv, missing, outs, 1, 0), DT_ERR_NOT_FOUND);

  dt_ndarray_free(w);
  dt_ndarray_free(i5);
  dt_ndarray_free(a);
  dt_ndarray_free(b);
  dt_ndarray_free(o1);
  dt_ndarray_free(o2);
  dt_kvstore_free(kv);
}
