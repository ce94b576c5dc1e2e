/*
 * Trainer fit on IDX files written here.
 */
#include "capi_trainer_test_util.h"

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

void test_fit(void) {
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
