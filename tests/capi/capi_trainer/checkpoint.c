/*
 * Trainer checkpoints: exact resume with and without a kvstore, and
 * corrupt files refused.
 */
#include "capi_trainer_test_util.h"

/* Trains a for 4 steps, saves; a fresh net+trainer b loads: identical
 * weights, and one more step on each stays identical (optimizer state). */
static void check_resume(dt_kvstore *kv_a, dt_kvstore *kv_b, const char *name) {
  char path[600];
  dt_net *net_a = make_net(5), *net_b = make_net(6);
  dt_optimizer *opt = make_sgd(0.1, 0.9);
  dt_trainer *a = make_trainer(net_a, opt, kv_a, NULL);
  dt_trainer *b = make_trainer(net_b, opt, kv_b, NULL);
  int32_t epoch = -1;
  int i;
  path_in(path, sizeof path, name);
  if (a != NULL && b != NULL) {
    for (i = 0; i < 4; i++) CHECK_OK(dt_trainer_train_batch(NULL, NULL, a, g_x, g_y));
    CHECK_OK(dt_trainer_save_checkpoint(a, path));
    CHECK(!same_params(net_a, net_b));
    CHECK_OK(dt_trainer_load_checkpoint(b, path));
    CHECK(same_params(net_a, net_b));
    CHECK_OK(dt_trainer_epoch(&epoch, b));
    CHECK_EQ_I64(epoch, 0);
    CHECK_OK(dt_trainer_train_batch(NULL, NULL, a, g_x, g_y));
    CHECK_OK(dt_trainer_train_batch(NULL, NULL, b, g_x, g_y));
    if (!CHECK(same_params(net_a, net_b))) {
      fprintf(stderr, "  %s: resumed run differs by %g\n", name, max_param_diff(net_a, net_b));
    }
    /* Loading is for before the first step. */
    CHECK_STATUS(dt_trainer_load_checkpoint(a, path), DT_ERR_BAD_STATE);
    CHECK_STATUS(dt_trainer_load_checkpoint(b, path), DT_ERR_BAD_STATE);
  }
  unlink(path);
  dt_trainer_free(a);
  dt_trainer_free(b);
  dt_optimizer_free(opt);
  dt_net_free(net_a);
  dt_net_free(net_b);
}

/* Copies the checkpoint at src to dst with its "epoch" metadata value
 * replaced by a same-length non-number; 0 on failure. */
static int corrupt_epoch(const char *src, const char *dst) {
  static char bytes[1 << 16];
  FILE *f = fopen(src, "rb");
  size_t n;
  char *p;
  int ok;
  if (f == NULL) return 0;
  n = fread(bytes, 1, sizeof bytes - 1, f);
  fclose(f);
  if (n < 16 || n == sizeof bytes - 1) return 0;
  bytes[n] = '\0';
  /* The JSON header follows its 8-byte length; the metadata is near its start. */
  p = strstr(bytes + 8, "\"epoch\":\"");
  if (p == NULL) return 0;
  p += strlen("\"epoch\":\"");
  if (*p < '0' || *p > '9' || p[1] != '"') return 0;
  *p = 'x';
  f = fopen(dst, "wb");
  if (f == NULL) return 0;
  ok = fwrite(bytes, 1, n, f) == n;
  return fclose(f) == 0 && ok;
}

void test_checkpoint(void) {
  char path[600], params_path[600], missing[600], dir_path[600], bad_path[600];
  dt_kvstore *kv_a = NULL, *kv_b = NULL;
  dt_net *net = make_net(7), *fresh_net = make_net(8), *wide = make_net_from(k_wide_net_json, 9);
  dt_optimizer *opt = make_sgd(0.1, 0.0);
  dt_trainer *t = make_trainer(net, opt, NULL, NULL);
  dt_trainer *fresh = make_trainer(fresh_net, opt, NULL, NULL);
  dt_trainer *wide_t = make_trainer(wide, opt, NULL, NULL);
  path_in(path, sizeof path, "t.ckpt.safetensors");
  path_in(params_path, sizeof params_path, "params.safetensors");
  path_in(missing, sizeof missing, "none.safetensors");
  path_in(dir_path, sizeof dir_path, "no-such-dir/t.safetensors");
  path_in(bad_path, sizeof bad_path, "bad-epoch.safetensors");

  check_resume(NULL, NULL, "resume.safetensors");
  CHECK_OK(dt_kvstore_create(&kv_a, "local"));
  CHECK_OK(dt_kvstore_create(&kv_b, "local"));
  if (kv_a != NULL && kv_b != NULL) check_resume(kv_a, kv_b, "resume_kv.safetensors");
  dt_kvstore_free(kv_a);
  dt_kvstore_free(kv_b);

  if (t != NULL && fresh != NULL && wide_t != NULL) {
    CHECK_OK(dt_trainer_save_checkpoint(t, path)); /* before any step */
    CHECK_OK(dt_net_save_params(net, params_path));
    /* A parameters file is not a checkpoint. */
    CHECK_STATUS(dt_trainer_load_checkpoint(fresh, params_path), DT_ERR_IO);
    CHECK_STATUS(dt_trainer_load_checkpoint(fresh, missing), DT_ERR_NOT_FOUND);
    /* Another net's checkpoint: refused, nothing changed. */
    CHECK_STATUS(dt_trainer_load_checkpoint(wide_t, path), DT_ERR_SHAPE_MISMATCH);
    CHECK(last_error_has("fc1"));
    CHECK(!same_params(net, fresh_net));
    /* A checkpoint whose progress metadata is not a number is a malformed
     * file (I/O error), and loading it changes nothing. */
    if (CHECK(corrupt_epoch(path, bad_path))) {
      CHECK_STATUS(dt_trainer_load_checkpoint(fresh, bad_path), DT_ERR_IO);
      CHECK(!same_params(net, fresh_net));
      unlink(bad_path);
    }
    CHECK_OK(dt_trainer_load_checkpoint(fresh, path));
    CHECK(same_params(net, fresh_net));
    CHECK_STATUS(dt_trainer_save_checkpoint(t, dir_path), DT_ERR_IO);
    CHECK_STATUS(dt_trainer_save_checkpoint(t, NULL), DT_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(dt_trainer_save_checkpoint(NULL, path), DT_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(dt_trainer_load_checkpoint(fresh, NULL), DT_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(dt_trainer_load_checkpoint(NULL, path), DT_ERR_INVALID_ARGUMENT);
  }
  unlink(path);
  unlink(params_path);
  dt_trainer_free(t);
  dt_trainer_free(fresh);
  dt_trainer_free(wide_t);
  dt_optimizer_free(opt);
  dt_net_free(net);
  dt_net_free(fresh_net);
  dt_net_free(wide);
}
