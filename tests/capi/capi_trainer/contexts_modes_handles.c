/*
 * Trainers: extra contexts, the sync modes' options, and NULL, freed and
 * mistyped handles.
 */
#include "capi_trainer_test_util.h"

/* A second CPU context as an extra device: each batch is split in two, and
 * the summed gradients match those of the whole batch on one device. */
void test_extra_contexts(void) {
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
void test_sync_modes(void) {
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

void test_handles(void) {
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
