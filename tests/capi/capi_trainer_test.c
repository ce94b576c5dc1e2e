/*
 * Trainers: options, creation with and without a kvstore, train_batch and
 * step, the learning rate and the kvstore paths. Checkpoints:
 * capi_trainer/checkpoint.c; fit on IDX files: capi_trainer/fit.c; extra
 * contexts, the sync modes' options and bad handles:
 * capi_trainer/contexts_modes_handles.c. The net is a tiny MLP on 1x4x4
 * inputs.
 */
#include "capi_trainer/capi_trainer_test_util.h"

/* Shared with the tests in capi_trainer/. */
dt_context *g_ctx;
char g_dir[512];
dt_ndarray *g_x, *g_y;

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
