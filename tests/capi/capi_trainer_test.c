/*
 * Trainers: options, creation with and without a kvstore, train_batch and
 * step, the learning rate, checkpoints (exact resume), fit on IDX files
 * written here, extra contexts, the sync modes' options, every bad argument,
 * and NULL, freed and mistyped handles. The net is a tiny MLP on 1x4x4
 * inputs.
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "capi_check.h"

#define BATCH 6
#define FEATURES 16
#define MAX_PARAMS 512

static dt_context *g_ctx;
static char g_dir[512];

static const char *k_net_json =
    "{\"format\": \"disttrain.net\", \"version\": 1,"
    " \"inputs\": [{\"name\": \"data\", \"shape\": [1, 4, 4]}],"
    " \"layers\": ["
    "  {\"name\": \"flatten\", \"type\": \"Flatten\"},"
    "  {\"name\": \"fc1\", \"type\": \"Dense\", \"units\": 8},"
    "  {\"name\": \"act\", \"type\": \"ReLU\"},"
    "  {\"name\": \"fc2\", \"type\": \"Dense\", \"units\": 3}],"
    " \"output\": \"fc2\"}";

/* Same layer names, another hidden width: a checkpoint that does not fit. */
static const char *k_wide_net_json =
    "{\"format\": \"disttrain.net\", \"version\": 1,"
    " \"inputs\": [{\"name\": \"data\", \"shape\": [1, 4, 4]}],"
    " \"layers\": ["
    "  {\"name\": \"flatten\", \"type\": \"Flatten\"},"
    "  {\"name\": \"fc1\", \"type\": \"Dense\", \"units\": 5},"
    "  {\"name\": \"act\", \"type\": \"ReLU\"},"
    "  {\"name\": \"fc2\", \"type\": \"Dense\", \"units\": 3}],"
    " \"output\": \"fc2\"}";

static int last_error_has(const char *text) {
  return strstr(dt_last_error(), text) != NULL;
}

static void path_in(char *out, size_t cap, const char *name) {
  snprintf(out, cap, "%s/%s", g_dir, name);
}

static dt_net *make_net_from(const char *json, uint64_t seed) {
  dt_net *net = NULL;
  if (!CHECK_OK(dt_net_create_from_json(&net, g_ctx, json))) return NULL;
  if (!CHECK_OK(dt_net_initialize(net, seed))) {
    dt_net_free(net);
    return NULL;
  }
  return net;
}

static dt_net *make_net(uint64_t seed) { return make_net_from(k_net_json, seed); }

static dt_optimizer *make_sgd(double lr, double momentum) {
  dt_optimizer *opt = NULL;
  if (!CHECK_OK(dt_optimizer_create(&opt, "sgd"))) return NULL;
  CHECK_OK(dt_optimizer_set_double(opt, "learning_rate", lr));
  CHECK_OK(dt_optimizer_set_double(opt, "momentum", momentum));
  return opt;
}

static dt_trainer *make_trainer(dt_net *net, const dt_optimizer *opt, dt_kvstore *kv,
                                const dt_trainer_options *options) {
  dt_trainer *t = NULL;
  if (net == NULL || opt == NULL) return NULL;
  if (!CHECK_OK(dt_trainer_create(&t, net, opt, kv, options))) return NULL;
  return t;
}

/* Every parameter of the net, concatenated, into dst; returns the count. */
static size_t snapshot(float *dst, size_t cap, const dt_net *net) {
  size_t n = 0, i, total = 0;
  if (!CHECK_OK(dt_net_num_params(&n, net))) return 0;
  for (i = 0; i < n; i++) {
    dt_ndarray *p = NULL;
    size_t size = 0;
    if (!CHECK_OK(dt_net_param(&p, net, i))) return 0;
    CHECK_OK(dt_ndarray_size(&size, p));
    if (CHECK(total + size <= cap)) {
      CHECK_OK(dt_ndarray_copy_to_host(dst + total, size * sizeof(float), p));
      total += size;
    }
    dt_ndarray_free(p);
  }
  return total;
}

/* Checks that two nets hold bit-identical parameters. */
static int same_params(const dt_net *a, const dt_net *b) {
  static float pa[MAX_PARAMS], pb[MAX_PARAMS];
  size_t na = snapshot(pa, MAX_PARAMS, a), nb = snapshot(pb, MAX_PARAMS, b);
  return na > 0 && na == nb && memcmp(pa, pb, na * sizeof(float)) == 0;
}

/* The largest absolute difference between two nets' parameters. */
static double max_param_diff(const dt_net *a, const dt_net *b) {
  static float pa[MAX_PARAMS], pb[MAX_PARAMS];
  size_t na = snapshot(pa, MAX_PARAMS, a), nb = snapshot(pb, MAX_PARAMS, b), i;
  double worst = 0.0;
  if (na == 0 || na != nb) return INFINITY;
  for (i = 0; i < na; i++) {
    const double d = fabs((double)pa[i] - (double)pb[i]);
    if (!(d <= worst)) worst = d;
  }
  return worst;
}

/* A fixed batch of 6 samples of 1x4x4 (labels 0, 1, 2, 0, 1, 2). */
static dt_ndarray *g_x, *g_y;

static void make_batch(void) {
  float x[BATCH * FEATURES];
  int32_t y[BATCH];
  const int64_t xdims[4] = {BATCH, 1, 4, 4}, ydims[1] = {BATCH};
  int i, j;
  for (i = 0; i < BATCH; i++) {
    y[i] = i % 3;
    for (j = 0; j < FEATURES; j++) {
      x[i * FEATURES + j] = (float)(((i * 7 + j * 5) % 11) - 5) / 5.0f + (j % 3 == y[i] ? 1.0f : 0.0f);
    }
  }
  CHECK_OK(dt_ndarray_create(&g_x, g_ctx, DT_FLOAT32, xdims, 4));
  CHECK_OK(dt_ndarray_copy_from_host(g_x, x, sizeof x));
  CHECK_OK(dt_ndarray_create(&g_y, g_ctx, DT_INT32, ydims, 1));
  CHECK_OK(dt_ndarray_copy_from_host(g_y, y, sizeof y));
}

static void test_options_init(void) {
  dt_trainer_options o;
  dt_fit_options f;
  memset(&o, 0xAB, sizeof o);
  memset(&f, 0xAB, sizeof f);
  dt_trainer_options_init(&o, sizeof o);
  CHECK_EQ_U64(o.struct_size, sizeof(dt_trainer_options));
  CHECK_EQ_I64(o.update_on_kvstore, -1);
  CHECK(o.extra_contexts == NULL);
  CHECK_EQ_U64(o.num_extra_contexts, 0);
  CHECK_EQ_I64(o.sync_mode, DT_SYNC_FULL);
  CHECK_EQ_U64(o.partial_chunk_elements, 0);
  CHECK_EQ_I64(o.sparse_topk, 0);
  CHECK(o.sparse_value == 0.0);
  CHECK_EQ_I64(o.sparse_no_accumulation, 0);
  dt_fit_options_init(&f, sizeof f);
  CHECK_EQ_U64(f.struct_size, sizeof(dt_fit_options));
  CHECK_EQ_I64(f.epochs, 5);
  CHECK(f.metrics_path == NULL);
  CHECK(f.checkpoint_path == NULL);
  CHECK_EQ_I64(f.progress, -1);
  CHECK_STATUS(dt_trainer_options_init(NULL, sizeof o), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_fit_options_init(NULL, sizeof f), DT_ERR_INVALID_ARGUMENT);
}

static void test_create(void) {
  dt_net *net = make_net(1);
  dt_optimizer *opt = make_sgd(0.1, 0.0);
  dt_kvstore *kv = NULL, *freed_kv = NULL;
  dt_context *freed_ctx = NULL;
  dt_trainer *t = CAPI_SENTINEL(dt_trainer);
  dt_trainer_options o;
  const dt_context *null_ctx[1] = {NULL};
  const dt_context *dead_ctx[1];
  if (net == NULL || opt == NULL) return;
  CHECK_OK(dt_kvstore_create(&kv, "local"));
  CHECK_OK(dt_kvstore_create(&freed_kv, "local"));
  dt_kvstore_free(freed_kv);
  CHECK_OK(dt_context_create(&freed_ctx, DT_DEVICE_CPU, 0));
  dt_context_free(freed_ctx);
  dead_ctx[0] = freed_ctx;

  if (CHECK_OK(dt_trainer_create(&t, net, opt, NULL, NULL))) dt_trainer_free(t);
  t = CAPI_SENTINEL(dt_trainer);
  if (CHECK_OK(dt_trainer_create(&t, net, opt, kv, NULL))) dt_trainer_free(t);
  t = CAPI_SENTINEL(dt_trainer);
  dt_trainer_options_init(&o, sizeof o);
  o.update_on_kvstore = 0;
  if (CHECK_OK(dt_trainer_create(&t, net, opt, kv, &o))) dt_trainer_free(t);
  t = CAPI_SENTINEL(dt_trainer);
  o.update_on_kvstore = 1;
  if (CHECK_OK(dt_trainer_create(&t, net, opt, kv, &o))) dt_trainer_free(t);
  t = CAPI_SENTINEL(dt_trainer);

  /* Bad options. */
  CHECK_STATUS(dt_trainer_create(&t, net, opt, NULL, &o), DT_ERR_INVALID_ARGUMENT); /* 1 needs a kv */
  o.update_on_kvstore = 5;
  CHECK_STATUS(dt_trainer_create(&t, net, opt, kv, &o), DT_ERR_INVALID_ARGUMENT);
  o.update_on_kvstore = -2;
  CHECK_STATUS(dt_trainer_create(&t, net, opt, kv, &o), DT_ERR_INVALID_ARGUMENT);
  dt_trainer_options_init(&o, sizeof o);
  o.struct_size = 0;
  CHECK_STATUS(dt_trainer_create(&t, net, opt, NULL, &o), DT_ERR_INVALID_ARGUMENT);
  dt_trainer_options_init(&o, sizeof o);
  o.num_extra_contexts = 1;
  CHECK_STATUS(dt_trainer_create(&t, net, opt, NULL, &o), DT_ERR_INVALID_ARGUMENT);
  o.extra_contexts = null_ctx;
  CHECK_STATUS(dt_trainer_create(&t, net, opt, NULL, &o), DT_ERR_INVALID_ARGUMENT);
  o.extra_contexts = dead_ctx;
  CHECK_STATUS(dt_trainer_create(&t, net, opt, NULL, &o), DT_ERR_INVALID_HANDLE);

  /* NULL, freed and mistyped arguments. */
  CHECK_STATUS(dt_trainer_create(NULL, net, opt, NULL, NULL), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_trainer_create(&t, NULL, opt, NULL, NULL), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_trainer_create(&t, net, NULL, NULL, NULL), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_trainer_create(&t, net, opt, freed_kv, NULL), DT_ERR_INVALID_HANDLE);
  CHECK_STATUS(dt_trainer_create(&t, net, (const dt_optimizer *)net, NULL, NULL), DT_ERR_INVALID_HANDLE);
  CHECK_STATUS(dt_trainer_create(&t, (dt_net *)opt, opt, NULL, NULL), DT_ERR_INVALID_HANDLE);
  CHECK_STATUS(dt_trainer_create(&t, net, opt, (dt_kvstore *)opt, NULL), DT_ERR_INVALID_HANDLE);
  CHECK(t == CAPI_SENTINEL(dt_trainer));

  dt_kvstore_free(kv);
  dt_optimizer_free(opt);
  dt_net_free(net);
}

static void test_train_batch(void) {
  const int64_t short_dims[1] = {BATCH - 1}, odd_dims[4] = {BATCH, 1, 4, 5};
  dt_net *net = make_net(3);
  dt_optimizer *opt = make_sgd(0.1, 0.9);
  dt_trainer *t = make_trainer(net, opt, NULL, NULL);
  dt_ndarray *short_y = NULL, *odd_x = NULL, *float_y = NULL;
  const dt_ndarray *inputs[1];
  double first = -1.0, loss = -1.0, lr = -1.0;
  int64_t correct = -1;
  int i, in_range = 1;
  if (t == NULL) return;
  CHECK_OK(dt_ndarray_create(&short_y, g_ctx, DT_INT32, short_dims, 1));
  CHECK_OK(dt_ndarray_create(&odd_x, g_ctx, DT_FLOAT32, odd_dims, 4));
  {
    const int64_t ydims[1] = {BATCH};
    CHECK_OK(dt_ndarray_create(&float_y, g_ctx, DT_FLOAT32, ydims, 1));
  }

  /* 50 steps on one batch: the loss falls well below where it started. */
  CHECK_OK(dt_trainer_train_batch(&first, &correct, t, g_x, g_y));
  CHECK(isfinite(first) && first > 0.0);
  CHECK(correct >= 0 && correct <= BATCH);
  for (i = 1; i < 50; i++) {
    correct = -1;
    CHECK_OK(dt_trainer_train_batch(&loss, &correct, t, g_x, g_y));
    in_range &= correct >= 0 && correct <= BATCH;
  }
  CHECK(in_range);
  CHECK(isfinite(loss) && loss < 0.5 * first);
  if (!(loss < 0.5 * first)) fprintf(stderr, "  loss %g after 50 steps, %g at first\n", loss, first);
  CHECK_EQ_I64(correct, BATCH); /* six samples, memorised */
  /* The outputs may be NULL. */
  CHECK_OK(dt_trainer_train_batch(NULL, NULL, t, g_x, g_y));

  /* Bad batches: outputs untouched. */
  loss = -1.0;
  correct = -1;
  CHECK_STATUS(dt_trainer_train_batch(&loss, &correct, t, g_x, short_y), DT_ERR_SHAPE_MISMATCH);
  CHECK_STATUS(dt_trainer_train_batch(&loss, &correct, t, odd_x, g_y), DT_ERR_SHAPE_MISMATCH);
  CHECK_STATUS(dt_trainer_train_batch(&loss, &correct, t, g_x, float_y), DT_ERR_DTYPE_MISMATCH);
  CHECK_STATUS(dt_trainer_train_batch(&loss, &correct, t, NULL, g_y), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_trainer_train_batch(&loss, &correct, t, g_x, NULL), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_trainer_train_batch(&loss, &correct, NULL, g_x, g_y), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_trainer_train_batch(&loss, &correct, t, (const dt_ndarray *)net, g_y),
               DT_ERR_INVALID_HANDLE);
  CHECK_EQ_DBL(loss, -1.0);
  CHECK_EQ_I64(correct, -1);

  /* Gluon's step after the caller's own forward and backward. */
  inputs[0] = g_x;
  CHECK_OK(dt_net_forward(net, inputs, 1, 1));
  CHECK_OK(dt_net_backward(NULL, net, g_y));
  CHECK_OK(dt_trainer_step(t, BATCH));
  CHECK_STATUS(dt_trainer_step(t, 0), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_trainer_step(t, -6), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_trainer_step(NULL, BATCH), DT_ERR_INVALID_ARGUMENT);

  /* Every step counts: 51 batches and the step above; the refused ones do not. */
  {
    int64_t steps = -1;
    int32_t admitted = -1;
    CHECK_OK(dt_trainer_steps(&steps, t));
    CHECK_EQ_I64(steps, 52);
    CHECK_STATUS(dt_trainer_steps(NULL, t), DT_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(dt_trainer_steps(&steps, NULL), DT_ERR_INVALID_ARGUMENT);
    /* Without a store spanning workers nobody joins. */
    CHECK_OK(dt_trainer_admit_joining_workers(&admitted, t));
    CHECK_EQ_I64(admitted, 0);
    CHECK_STATUS(dt_trainer_admit_joining_workers(NULL, t), DT_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(dt_trainer_admit_joining_workers(&admitted, NULL), DT_ERR_INVALID_ARGUMENT);
    CHECK_OK(dt_trainer_steps(&steps, t));
    CHECK_EQ_I64(steps, 52);
  }

  /* The learning rate. */
  CHECK_OK(dt_trainer_learning_rate(&lr, t));
  CHECK_EQ_DBL(lr, 0.1);
  CHECK_OK(dt_trainer_set_learning_rate(t, 0.025));
  CHECK_OK(dt_trainer_learning_rate(&lr, t));
  CHECK_EQ_DBL(lr, 0.025);
  CHECK_STATUS(dt_trainer_set_learning_rate(t, -0.5), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_trainer_set_learning_rate(t, NAN), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_trainer_set_learning_rate(NULL, 0.1), DT_ERR_INVALID_ARGUMENT);
  lr = -1.0;
  CHECK_STATUS(dt_trainer_learning_rate(NULL, t), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_trainer_learning_rate(&lr, NULL), DT_ERR_INVALID_ARGUMENT);
  CHECK_EQ_DBL(lr, -1.0);
  CHECK_OK(dt_trainer_learning_rate(&lr, t));
  CHECK_EQ_DBL(lr, 0.025);
  dt_ndarray_free(short_y);
  dt_ndarray_free(odd_x);
  dt_ndarray_free(float_y);
  dt_trainer_free(t);
  dt_optimizer_free(opt);
  dt_net_free(net);
}

/* The same steps through a local kvstore (optimizer on the store, or on the
 * worker) give the same weights as without one. */
static void test_kvstore_paths(void) {
  dt_net *plain_net = make_net(4), *store_net = make_net(4), *worker_net = make_net(4);
  dt_optimizer *opt = make_sgd(0.1, 0.9);
  dt_kvstore *kv1 = NULL, *kv2 = NULL;
  dt_trainer *plain, *store, *worker;
  dt_trainer_options o;
  double lr = 0.0;
  int i;
  CHECK_OK(dt_kvstore_create(&kv1, "local"));
  CHECK_OK(dt_kvstore_create(&kv2, "local"));
  dt_trainer_options_init(&o, sizeof o);
  o.update_on_kvstore = 0;
  plain = make_trainer(plain_net, opt, NULL, NULL);
  store = make_trainer(store_net, opt, kv1, NULL);
  worker = make_trainer(worker_net, opt, kv2, &o);
  /* The trainers keep their stores alive. */
  dt_kvstore_free(kv1);
  dt_kvstore_free(kv2);
  if (plain != NULL && store != NULL && worker != NULL) {
    for (i = 0; i < 5; i++) {
      int32_t admitted = -1;
      /* A local store lets nobody in: the loop of one's own goes on as is. */
      CHECK_OK(dt_trainer_admit_joining_workers(&admitted, worker));
      CHECK_EQ_I64(admitted, 0);
      CHECK_OK(dt_trainer_train_batch(NULL, NULL, plain, g_x, g_y));
      CHECK_OK(dt_trainer_train_batch(NULL, NULL, store, g_x, g_y));
      CHECK_OK(dt_trainer_train_batch(NULL, NULL, worker, g_x, g_y));
    }
    CHECK(same_params(plain_net, store_net));
    CHECK(same_params(plain_net, worker_net));
    CHECK_OK(dt_trainer_set_learning_rate(store, 0.05));
    CHECK_OK(dt_trainer_learning_rate(&lr, store));
    CHECK_EQ_DBL(lr, 0.05);
    CHECK_OK(dt_trainer_set_learning_rate(plain, 0.05));
    CHECK_OK(dt_trainer_train_batch(NULL, NULL, plain, g_x, g_y));
    CHECK_OK(dt_trainer_train_batch(NULL, NULL, store, g_x, g_y));
    CHECK(same_params(plain_net, store_net));
  }
  dt_trainer_free(plain);
  dt_trainer_free(store);
  dt_trainer_free(worker);
  dt_optimizer_free(opt);
  dt_net_free(plain_net);
  dt_net_free(store_net);
  dt_net_free(worker_net);
}

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

static void test_checkpoint(void) {
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

/* --- fit on IDX files written here ------------------------------------- */

static int write_file(const char *path, const void *bytes, size_t n) {
  FILE *f = fopen(path, "wb");
  size_t written;
  if (f == NULL) return 0;
  written = fwrite(bytes, 1, n, f);
  return fclose(f) == 0 && written == n;
}

static void put_be32(unsigned char *p, uint32_t v) {
  p[0] = (unsigned char)(v >> 24);
  p[1] = (unsigned char)(v >> 16);
  p[2] = (unsigned char)(v >> 8);
  p[3] = (unsigned char)v;
}

/* n samples of side x side, label i % 3, pixels that depend on the label. */
static int write_dataset(const char *images, const char *labels, uint32_t n, uint32_t side) {
  unsigned char img[16 + 64 * 25], lab[8 + 64];
  uint32_t i, j;
  if (n > 64 || side > 5) return 0;
  put_be32(img, 0x00000803u);
  put_be32(img + 4, n);
  put_be32(img + 8, side);
  put_be32(img + 12, side);
  put_be32(lab, 0x00000801u);
  put_be32(lab + 4, n);
  for (i = 0; i < n; i++) {
    lab[8 + i] = (unsigned char)(i % 3);
    for (j = 0; j < side * side; j++) {
      img[16 + i * side * side + j] =
          (unsigned char)((j % 3 == i % 3 ? 160u : 20u) + (i * 7u + j * 13u) % 40u);
    }
  }
  return write_file(images, img, 16 + (size_t)n * side * side) && write_file(labels, lab, 8 + (size_t)n);
}

/* Lines in a file that look like JSON objects with an "epoch"; -1 if absent. */
static int metrics_lines(const char *path, int *last_epoch) {
  char line[2048];
  FILE *f = fopen(path, "r");
  int lines = 0;
  if (f == NULL) return -1;
  while (fgets(line, sizeof line, f) != NULL) {
    const char *p = strstr(line, "\"epoch\"");
    if (line[0] != '{' || p == NULL) {
      lines = -100;
      break;
    }
    p += strlen("\"epoch\"");
    while (*p == ' ' || *p == ':') p++;
    *last_epoch = atoi(p);
    if (strstr(line, "\"loss\"") == NULL || strstr(line, "\"train_accuracy\"") == NULL) lines = -100;
    lines++;
  }
  fclose(f);
  return lines;
}

static void test_fit(void) {
  char images[600], labels[600], small_images[600], small_labels[600], metrics[600], ckpt[600];
  dt_net *net = make_net(10), *resumed_net = make_net(11);
  dt_optimizer *opt = make_sgd(0.05, 0.9);
  dt_trainer *t = make_trainer(net, opt, NULL, NULL);
  dt_trainer *resumed = make_trainer(resumed_net, opt, NULL, NULL);
  dt_data_loader *train = NULL, *test = NULL, *wrong = NULL, *freed = NULL;
  dt_data_loader_options lo;
  dt_fit_options f;
  int32_t epoch = -1;
  int last = 0;
  double accuracy = -1.0, loss = -1.0;
  path_in(images, sizeof images, "fit-images-idx3-ubyte");
  path_in(labels, sizeof labels, "fit-labels-idx1-ubyte");
  path_in(small_images, sizeof small_images, "fit5-images-idx3-ubyte");
  path_in(small_labels, sizeof small_labels, "fit5-labels-idx1-ubyte");
  path_in(metrics, sizeof metrics, "metrics.jsonl");
  path_in(ckpt, sizeof ckpt, "fit.ckpt.safetensors");
  CHECK(write_dataset(images, labels, 40, 4));
  CHECK(write_dataset(small_images, small_labels, 10, 5));
  dt_data_loader_options_init(&lo, sizeof lo);
  lo.batch_size = 8;
  lo.seed = 1;
  CHECK_OK(dt_data_loader_create(&train, images, labels, &lo));
  lo.shuffle = 0;
  CHECK_OK(dt_data_loader_create(&test, images, labels, &lo));
  CHECK_OK(dt_data_loader_create(&wrong, small_images, small_labels, &lo));
  CHECK_OK(dt_data_loader_create(&freed, images, labels, &lo));
  dt_data_loader_free(freed);
  if (t == NULL || resumed == NULL || train == NULL || test == NULL || wrong == NULL) goto done;

  CHECK_OK(dt_trainer_epoch(&epoch, t));
  CHECK_EQ_I64(epoch, 0);
  dt_fit_options_init(&f, sizeof f);
  f.epochs = 2;
  f.progress = 2;
  f.metrics_path = metrics;
  CHECK_OK(dt_trainer_fit(t, train, NULL, &f));
  CHECK_OK(dt_trainer_epoch(&epoch, t));
  CHECK_EQ_I64(epoch, 2);
  CHECK_EQ_I64(metrics_lines(metrics, &last), 2);
  CHECK_EQ_I64(last, 2);
  /* Already there: nothing to do, nothing written. */
  CHECK_OK(dt_trainer_fit(t, train, NULL, &f));
  CHECK_EQ_I64(metrics_lines(metrics, &last), 2);
  /* One more epoch, evaluated on test, with a checkpoint: the log grows. */
  f.epochs = 3;
  f.checkpoint_path = ckpt;
  CHECK_OK(dt_trainer_fit(t, train, test, &f));
  CHECK_OK(dt_trainer_epoch(&epoch, t));
  CHECK_EQ_I64(epoch, 3);
  CHECK_EQ_I64(metrics_lines(metrics, &last), 3);
  CHECK_EQ_I64(last, 3);
  /* The checkpoint carries the progress. */
  CHECK_OK(dt_trainer_load_checkpoint(resumed, ckpt));
  CHECK_OK(dt_trainer_epoch(&epoch, resumed));
  CHECK_EQ_I64(epoch, 3);
  CHECK(same_params(net, resumed_net));

  CHECK_OK(dt_trainer_evaluate(&accuracy, &loss, t, test));
  CHECK(accuracy >= 0.0 && accuracy <= 1.0);
  CHECK(isfinite(loss) && loss > 0.0);
  /* Three epochs on an easy, separable set: most of it is learned. */
  CHECK(accuracy >= 0.6);

  /* Bad arguments. */
  f.epochs = 4;
  f.checkpoint_path = NULL;
  f.metrics_path = NULL;
  CHECK_STATUS(dt_trainer_fit(t, wrong, NULL, &f), DT_ERR_SHAPE_MISMATCH);
  {
    char bad_metrics[600];
    path_in(bad_metrics, sizeof bad_metrics, "no-such-dir/metrics.jsonl");
    f.metrics_path = bad_metrics;
    CHECK_STATUS(dt_trainer_fit(t, train, NULL, &f), DT_ERR_IO);
    f.metrics_path = NULL;
  }
  f.progress = 3;
  CHECK_STATUS(dt_trainer_fit(t, train, NULL, &f), DT_ERR_INVALID_ARGUMENT);
  f.progress = -2;
  CHECK_STATUS(dt_trainer_fit(t, train, NULL, &f), DT_ERR_INVALID_ARGUMENT);
  f.progress = 2;
  f.epochs = -1;
  CHECK_STATUS(dt_trainer_fit(t, train, NULL, &f), DT_ERR_INVALID_ARGUMENT);
  f.epochs = 4;
  f.struct_size = 0;
  CHECK_STATUS(dt_trainer_fit(t, train, NULL, &f), DT_ERR_INVALID_ARGUMENT);
  dt_fit_options_init(&f, sizeof f);
  f.progress = 2;
  f.epochs = 4;
  CHECK_STATUS(dt_trainer_fit(t, NULL, NULL, &f), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_trainer_fit(NULL, train, NULL, &f), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_trainer_fit(t, freed, NULL, &f), DT_ERR_INVALID_HANDLE);
  CHECK_STATUS(dt_trainer_fit(t, train, freed, &f), DT_ERR_INVALID_HANDLE);
  CHECK_STATUS(dt_trainer_fit(t, (dt_data_loader *)opt, NULL, &f), DT_ERR_INVALID_HANDLE);
  accuracy = loss = -1.0;
  CHECK_STATUS(dt_trainer_evaluate(&accuracy, &loss, t, NULL), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_trainer_evaluate(&accuracy, &loss, NULL, test), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_trainer_evaluate(&accuracy, &loss, t, freed), DT_ERR_INVALID_HANDLE);
  CHECK_STATUS(dt_trainer_evaluate(&accuracy, &loss, t, wrong), DT_ERR_SHAPE_MISMATCH);
  CHECK_EQ_DBL(accuracy, -1.0);
  CHECK_EQ_DBL(loss, -1.0);
  epoch = -1;
  CHECK_STATUS(dt_trainer_epoch(NULL, t), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_trainer_epoch(&epoch, NULL), DT_ERR_INVALID_ARGUMENT);
  CHECK_EQ_I64(epoch, -1);

done:
  unlink(images);
  unlink(labels);
  unlink(small_images);
  unlink(small_labels);
  unlink(metrics);
  unlink(ckpt);
  dt_data_loader_free(train);
  dt_data_loader_free(test);
  dt_data_loader_free(wrong);
  dt_trainer_free(t);
  dt_trainer_free(resumed);
  dt_optimizer_free(opt);
  dt_net_free(net);
  dt_net_free(resumed_net);
}

/* A second CPU context as an extra device: each batch is split in two, and
 * the summed gradients match those of the whole batch on one device. */
static void test_extra_contexts(void) {
  dt_context *second = NULL;
  dt_net *net = make_net(12), *single_net = make_net(12);
  dt_optimizer *opt = make_sgd(0.1, 0.0);
  dt_trainer *t = NULL, *single = make_trainer(single_net, opt, NULL, NULL);
  dt_trainer_options o;
  const dt_context *extra[1];
  double first = -1.0, loss = -1.0, diff;
  int64_t correct = -1;
  int i, in_range = 1;
  if (!CHECK_OK(dt_context_create(&second, DT_DEVICE_CPU, 0))) return;
  CHECK_OK(dt_context_set_num_threads(second, 1));
  extra[0] = second;
  dt_trainer_options_init(&o, sizeof o);
  o.extra_contexts = extra;
  o.num_extra_contexts = 1;
  t = make_trainer(net, opt, NULL, &o);
  /* The trainer keeps the context alive. */
  dt_context_free(second);
  if (t != NULL && single != NULL) {
    for (i = 0; i < 5; i++) {
      CHECK_OK(dt_trainer_train_batch(i == 0 ? &first : &loss, &correct, t, g_x, g_y));
      in_range &= correct >= 0 && correct <= BATCH;
      CHECK_OK(dt_trainer_train_batch(NULL, NULL, single, g_x, g_y));
    }
    diff = max_param_diff(net, single_net);
    if (!CHECK(diff < 1e-4)) fprintf(stderr, "  two replicas drift from one by %g\n", diff);
    for (i = 5; i < 50; i++) {
      CHECK_OK(dt_trainer_train_batch(&loss, &correct, t, g_x, g_y));
      in_range &= correct >= 0 && correct <= BATCH;
    }
    CHECK(in_range);
    CHECK(isfinite(first) && isfinite(loss) && loss < 0.5 * first);
  }
  dt_trainer_free(t);
  dt_trainer_free(single);
  dt_optimizer_free(opt);
  dt_net_free(net);
  dt_net_free(single_net);
}

/* The sync modes' options and every combination they refuse; the modes
 * themselves train in the 2-worker jobs of the unit tests (TrainerSyncModes)
 * and in the example (--sync-mode). */
static void test_sync_modes(void) {
  dt_net *net = make_net(14);
  dt_optimizer *opt = make_sgd(0.1, 0.0);
  dt_kvstore *local = NULL;
  dt_trainer *t = CAPI_SENTINEL(dt_trainer);
  dt_trainer_options o;
  if (net == NULL || opt == NULL || !CHECK_OK(dt_kvstore_create(&local, "local"))) return;

  /* Full is today's step, with or without a store. */
  dt_trainer_options_init(&o, sizeof o);
  o.sync_mode = DT_SYNC_FULL;
  if (CHECK_OK(dt_trainer_create(&t, net, opt, local, &o))) dt_trainer_free(t);
  t = CAPI_SENTINEL(dt_trainer);

  /* Half and sparse compress through a store: none, or one that sends
   * nothing between processes, cannot. */
  o.sync_mode = DT_SYNC_HALF;
  CHECK_STATUS(dt_trainer_create(&t, net, opt, NULL, &o), DT_ERR_INVALID_ARGUMENT);
  CHECK(last_error_has("sync mode half"));
  CHECK_STATUS(dt_trainer_create(&t, net, opt, local, &o), DT_ERR_NOT_SUPPORTED);
  o.sync_mode = DT_SYNC_SPARSE;
  CHECK_STATUS(dt_trainer_create(&t, net, opt, local, &o), DT_ERR_NOT_SUPPORTED);
  o.sparse_topk = 1;
  o.sparse_value = 1.5; /* a fraction above 1 */
  CHECK_STATUS(dt_trainer_create(&t, net, opt, local, &o), DT_ERR_INVALID_ARGUMENT);
  CHECK(last_error_has("(0, 1]"));
  o.sparse_topk = 2;
  CHECK_STATUS(dt_trainer_create(&t, net, opt, local, &o), DT_ERR_INVALID_ARGUMENT);
  o.sparse_topk = 0;
  o.sparse_value = -0.5;
  CHECK_STATUS(dt_trainer_create(&t, net, opt, local, &o), DT_ERR_INVALID_ARGUMENT);
  o.sparse_value = 0.0;
  o.sparse_no_accumulation = 3;
  CHECK_STATUS(dt_trainer_create(&t, net, opt, local, &o), DT_ERR_INVALID_ARGUMENT);

  /* Partial averages across the workers of a distributed store. */
  dt_trainer_options_init(&o, sizeof o);
  o.sync_mode = DT_SYNC_PARTIAL;
  CHECK_STATUS(dt_trainer_create(&t, net, opt, NULL, &o), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_trainer_create(&t, net, opt, local, &o), DT_ERR_NOT_SUPPORTED);
  CHECK(last_error_has("allreduce"));
  o.partial_chunk_elements = 1000;
  CHECK_STATUS(dt_trainer_create(&t, net, opt, local, &o), DT_ERR_NOT_SUPPORTED);

  /* A field of another mode, or a mode that does not exist. */
  dt_trainer_options_init(&o, sizeof o);
  o.partial_chunk_elements = 1000;
  CHECK_STATUS(dt_trainer_create(&t, net, opt, local, &o), DT_ERR_INVALID_ARGUMENT);
  CHECK(last_error_has("partial_chunk_elements"));
  o.partial_chunk_elements = 0;
  o.sync_mode = DT_SYNC_HALF;
  o.sparse_value = 0.1;
  CHECK_STATUS(dt_trainer_create(&t, net, opt, local, &o), DT_ERR_INVALID_ARGUMENT);
  CHECK(last_error_has("sparse_value"));
  dt_trainer_options_init(&o, sizeof o);
  o.sync_mode = (dt_sync_mode)7;
  CHECK_STATUS(dt_trainer_create(&t, net, opt, local, &o), DT_ERR_INVALID_ARGUMENT);
  CHECK(t == CAPI_SENTINEL(dt_trainer));

  dt_kvstore_free(local);
  dt_optimizer_free(opt);
  dt_net_free(net);
}

static void test_handles(void) {
  dt_net *net = make_net(13);
  dt_optimizer *opt = make_sgd(0.1, 0.0);
  dt_trainer *t = make_trainer(net, opt, NULL, NULL);
  double lr = -1.0, loss = -1.0;
  int32_t epoch = -1;
  char path[600];
  if (t == NULL) return;
  path_in(path, sizeof path, "freed.safetensors");
  /* Without momentum, learning rate 0 leaves the weights as they are. */
  {
    static float before[MAX_PARAMS], after[MAX_PARAMS];
    size_t n;
    CHECK_OK(dt_trainer_set_learning_rate(t, 0.0));
    n = snapshot(before, MAX_PARAMS, net);
    CHECK_OK(dt_trainer_train_batch(NULL, NULL, t, g_x, g_y));
    CHECK(n > 0 && snapshot(after, MAX_PARAMS, net) == n && memcmp(before, after, n * sizeof(float)) == 0);
    CHECK_OK(dt_trainer_set_learning_rate(t, 0.1));
  }
  /* The trainer copied the optimizer and keeps the net. */
  dt_optimizer_free(opt);
  dt_net_free(net);
  CHECK_OK(dt_trainer_train_batch(&loss, NULL, t, g_x, g_y));
  CHECK(isfinite(loss));

  /* Another kind of handle is not a trainer. */
  CHECK_STATUS(dt_trainer_epoch(&epoch, (const dt_trainer *)g_x), DT_ERR_INVALID_HANDLE);
  CHECK_STATUS(dt_trainer_step((dt_trainer *)g_ctx, 1), DT_ERR_INVALID_HANDLE);
  dt_trainer_free((dt_trainer *)g_x); /* ignored, reported */
  CHECK(last_error_has("dt_trainer_free"));

  dt_trainer_free(t);
  loss = -1.0;
  CHECK_STATUS(dt_trainer_train_batch(&loss, NULL, t, g_x, g_y), DT_ERR_INVALID_HANDLE);
  CHECK_STATUS(dt_trainer_step(t, 1), DT_ERR_INVALID_HANDLE);
  CHECK_STATUS(dt_trainer_set_learning_rate(t, 0.1), DT_ERR_INVALID_HANDLE);
  CHECK_STATUS(dt_trainer_learning_rate(&lr, t), DT_ERR_INVALID_HANDLE);
  CHECK_STATUS(dt_trainer_epoch(&epoch, t), DT_ERR_INVALID_HANDLE);
  CHECK_STATUS(dt_trainer_save_checkpoint(t, path), DT_ERR_INVALID_HANDLE);
  CHECK_STATUS(dt_trainer_load_checkpoint(t, path), DT_ERR_INVALID_HANDLE);
  CHECK_EQ_DBL(lr, -1.0);
  CHECK_EQ_DBL(loss, -1.0);
  CHECK_EQ_I64(epoch, -1);
  dt_trainer_free(t); /* double free: ignored, reported */
  CHECK(last_error_has("dt_trainer_free"));
  dt_trainer_free(NULL);
  /* The ndarray survived being passed to dt_trainer_free. */
  {
    size_t n = 0;
    CHECK_OK(dt_ndarray_size(&n, g_x));
    CHECK_EQ_U64(n, BATCH * FEATURES);
  }
}

int main(void) {
  const char *tmp = getenv("TMPDIR");
  int rc;
  if (tmp == NULL || tmp[0] == '\0') tmp = "/tmp";
  snprintf(g_dir, sizeof g_dir, "%s/capi_trainer_%ld", tmp, (long)getpid());
  if (mkdir(g_dir, 0700) != 0) {
    fprintf(stderr, "cannot create %s\n", g_dir);
    printf("0 passed, 1 failed\n");
    return 1;
  }
  if (dt_context_create(&g_ctx, DT_DEVICE_CPU, 0) != DT_OK) {
    fprintf(stderr, "cannot create a CPU context: %s\n", dt_last_error());
    rmdir(g_dir);
    printf("0 passed, 1 failed\n");
    return 1;
  }
  /* The test shares two cores with the rest of the suite. */
  dt_context_set_num_threads(g_ctx, 1);
  make_batch();
  test_options_init();
  test_create();
  test_train_batch();
  test_kvstore_paths();
  test_checkpoint();
  test_fit();
  test_extra_contexts();
  test_sync_modes();
  test_handles();
  dt_ndarray_free(g_x);
  dt_ndarray_free(g_y);
  dt_context_free(g_ctx);
  rc = capi_finish();
  if (rmdir(g_dir) != 0) fprintf(stderr, "cannot remove %s (files left?)\n", g_dir);
  return rc;
}
