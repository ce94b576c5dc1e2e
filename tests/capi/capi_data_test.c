/*
 * Data loaders: option defaults, Fashion-MNIST from its standard files
 * (train and t10k), batches and the end of an epoch, last_batch modes,
 * shuffling and parts. IDX files written here (good, malformed, missing),
 * every bad option, and NULL, freed and mistyped handles:
 * capi_data/own_files_and_bad_input.c.
 */
#include "capi_data/capi_data_test_util.h"

/* Shared with the tests in capi_data/. */
char g_dir[512];

static void test_options_init(void) {
  dt_data_loader_options o;
  memset(&o, 0xAB, sizeof o);
  dt_data_loader_options_init(&o, sizeof o);
  CHECK_EQ_U64(o.struct_size, sizeof(dt_data_loader_options));
  CHECK_EQ_I64(o.batch_size, 64);
  CHECK(o.last_batch == DT_LAST_BATCH_KEEP);
  CHECK_EQ_I64(o.shuffle, 1);
  CHECK_EQ_U64(o.seed, 0);
  CHECK_EQ_I64(o.num_parts, 1);
  CHECK_EQ_I64(o.part_index, 0);
  CHECK_EQ_I64(o.prefetch, 2);
  CHECK_EQ_DBL(o.mean, 0.2860f);
  CHECK_EQ_DBL(o.std, 0.3530f);
  CHECK_EQ_I64(o.num_workers, 0);
  CHECK_STATUS(dt_data_loader_options_init(NULL, sizeof o), DT_ERR_INVALID_ARGUMENT);
}

static void test_t10k(void) {
  static const int32_t first_labels[10] = {9, 2, 1, 1, 6, 1, 4, 6, 5, 7};
  dt_data_loader_options o = options_with(1000, 0);
  dt_data_loader *loader;
  dt_ndarray *data = CAPI_SENTINEL(dt_ndarray), *labels = CAPI_SENTINEL(dt_ndarray);
  int32_t has = -1;
  int32_t got[1000];
  size_t n = 0;
  int64_t b;
  o.mean = 0.0f;
  o.std = 1.0f;
  loader = t10k(&o);
  if (loader == NULL) return;
  CHECK_OK(dt_data_loader_num_samples(&n, loader));
  CHECK_EQ_U64(n, 10000);
  CHECK_OK(dt_data_loader_num_batches(&n, loader));
  CHECK_EQ_U64(n, 10);

  /* Batches come from an epoch that was started. */
  CHECK_STATUS(dt_data_loader_next(&data, &labels, &has, loader), DT_ERR_BAD_STATE);
  CHECK(data == CAPI_SENTINEL(dt_ndarray) && labels == CAPI_SENTINEL(dt_ndarray));
  CHECK_EQ_I64(has, -1);

  CHECK_OK(dt_data_loader_start_epoch(loader, 0));
  CHECK_OK(dt_data_loader_next(&data, &labels, &has, loader));
  CHECK_EQ_I64(has, 1);
  if (has == 1) {
    int64_t dims[4] = {0, 0, 0, 0};
    float *pixels = (float *)malloc(1000 * 784 * sizeof(float));
    double sum = 0.0;
    size_t i;
    int in_range = 1;
    CHECK_OK(dt_ndarray_shape(dims, 4, data));
    CHECK(dims[0] == 1000 && dims[1] == 1 && dims[2] == 28 && dims[3] == 28);
    CHECK_OK(dt_ndarray_shape(dims, 1, labels));
    CHECK_EQ_I64(dims[0], 1000);
    CHECK_OK(dt_ndarray_copy_to_host(got, sizeof got, labels));
    CHECK(memcmp(got, first_labels, sizeof first_labels) == 0);
    for (i = 0; i < 1000; i++) in_range &= got[i] >= 0 && got[i] <= 9;
    CHECK(in_range);
    if (pixels != NULL && CHECK_OK(dt_ndarray_copy_to_host(pixels, 1000 * 784 * sizeof(float), data))) {
      /* mean 0, std 1: pixels are x / 255. Image 0 of t10k: pixel (14, 14)
       * is 110 and its bytes sum to 33456. */
      CHECK(fabs(pixels[14 * 28 + 14] - 110.0 / 255.0) < 1e-6);
      for (i = 0; i < 784; i++) sum += pixels[i];
      CHECK(fabs(sum - 33456.0 / 255.0) < 1e-3);
      for (i = 0; i < 1000 * 784; i++) in_range &= pixels[i] >= 0.0f && pixels[i] <= 1.0f;
      CHECK(in_range);
    }
    free(pixels);
    /* The caller owns the batch: it outlives the next batches. */
    b = next_labels(loader, NULL, 0, 28, 28);
    CHECK_EQ_I64(b, 1000);
    /* Restarting abandons the rest of the epoch. */
    CHECK_OK(dt_data_loader_start_epoch(loader, 0));
    b = next_labels(loader, got, 1000, 28, 28);
    CHECK_EQ_I64(b, 1000);
    CHECK(memcmp(got, first_labels, sizeof first_labels) == 0);
    /* ... and it outlives the loader. */
    dt_data_loader_free(loader);
    loader = NULL;
    memset(got, 0, sizeof got);
    CHECK_OK(dt_ndarray_copy_to_host(got, sizeof got, labels));
    CHECK(memcmp(got, first_labels, sizeof first_labels) == 0);
    dt_ndarray_free(data);
    dt_ndarray_free(labels);
  }
  dt_data_loader_free(loader);

  /* Default options (and the default normalisation). */
  if (CHECK_OK(dt_data_loader_create_mnist(&loader, MNIST_DIR, "t10k", NULL))) {
    CHECK_OK(dt_data_loader_num_batches(&n, loader));
    CHECK_EQ_U64(n, 157); /* ceil(10000 / 64) */
    CHECK_OK(dt_data_loader_start_epoch(loader, 0));
    data = labels = NULL;
    if (CHECK_OK(dt_data_loader_next(&data, &labels, &has, loader)) && has == 1) {
      float pixels[784];
      int64_t dims[4] = {0, 0, 0, 0};
      CHECK_OK(dt_ndarray_shape(dims, 4, data));
      CHECK_EQ_I64(dims[0], 64);
      /* A 64-sample shuffled batch is 64 * 784 floats; only the first image
       * is read, checked against the normalisation range. */
      {
        dt_ndarray *first = NULL;
        if (CHECK_OK(dt_ndarray_slice(&first, data, 0, 1))) {
          size_t i;
          int ok = 1;
          CHECK_OK(dt_ndarray_copy_to_host(pixels, sizeof pixels, first));
          for (i = 0; i < 784; i++) {
            ok &= pixels[i] >= (0.0f - 0.2860f) / 0.3530f - 1e-5f &&
                  pixels[i] <= (1.0f - 0.2860f) / 0.3530f + 1e-5f;
          }
          CHECK(ok);
          dt_ndarray_free(first);
        }
      }
      dt_ndarray_free(data);
      dt_ndarray_free(labels);
    }
    dt_data_loader_free(loader);
  }
}

static void test_end_of_epoch(void) {
  dt_data_loader_options o = options_with(5000, 1);
  dt_data_loader *loader = t10k(&o);
  dt_ndarray *data = CAPI_SENTINEL(dt_ndarray), *labels = CAPI_SENTINEL(dt_ndarray);
  int32_t has = -1;
  size_t n = 0;
  if (loader == NULL) return;
  CHECK_OK(dt_data_loader_num_batches(&n, loader));
  CHECK_EQ_U64(n, 2);
  CHECK_OK(dt_data_loader_start_epoch(loader, 0));
  CHECK_EQ_I64(next_labels(loader, NULL, 0, 28, 28), 5000);
  CHECK_EQ_I64(next_labels(loader, NULL, 0, 28, 28), 5000);
  CHECK_OK(dt_data_loader_next(&data, &labels, &has, loader));
  CHECK_EQ_I64(has, 0);
  CHECK(data == CAPI_SENTINEL(dt_ndarray) && labels == CAPI_SENTINEL(dt_ndarray));
  has = -1;
  CHECK_OK(dt_data_loader_next(&data, &labels, &has, loader));
  CHECK_EQ_I64(has, 0);
  CHECK(data == CAPI_SENTINEL(dt_ndarray) && labels == CAPI_SENTINEL(dt_ndarray));
  /* A new epoch delivers again. */
  CHECK_OK(dt_data_loader_start_epoch(loader, 1));
  CHECK_EQ_I64(next_labels(loader, NULL, 0, 28, 28), 5000);
  dt_data_loader_free(loader);
}

static void test_last_batch(void) {
  static const int32_t tail_labels[10] = {6, 9, 0, 1, 6, 8, 1, 8, 2, 1}; /* t10k[9000:9010] */
  static int32_t got[3000];
  dt_data_loader_options o = options_with(3000, 0);
  dt_data_loader *loader;
  size_t n = 0;

  o.last_batch = DT_LAST_BATCH_KEEP;
  if ((loader = t10k(&o)) != NULL) {
    CHECK_OK(dt_data_loader_num_batches(&n, loader));
    CHECK_EQ_U64(n, 4);
    CHECK_OK(dt_data_loader_start_epoch(loader, 0));
    CHECK_EQ_I64(next_labels(loader, NULL, 0, 28, 28), 3000);
    CHECK_EQ_I64(next_labels(loader, NULL, 0, 28, 28), 3000);
    CHECK_EQ_I64(next_labels(loader, NULL, 0, 28, 28), 3000);
    CHECK_EQ_I64(next_labels(loader, got, 3000, 28, 28), 1000);
    CHECK(memcmp(got, tail_labels, sizeof tail_labels) == 0);
    CHECK_EQ_I64(next_labels(loader, NULL, 0, 28, 28), -1);
    dt_data_loader_free(loader);
  }

  o.last_batch = DT_LAST_BATCH_DISCARD;
  if ((loader = t10k(&o)) != NULL) {
    CHECK_OK(dt_data_loader_num_batches(&n, loader));
    CHECK_EQ_U64(n, 3);
    CHECK_OK(dt_data_loader_start_epoch(loader, 0));
    CHECK_EQ_I64(next_labels(loader, NULL, 0, 28, 28), 3000);
    CHECK_EQ_I64(next_labels(loader, NULL, 0, 28, 28), 3000);
    CHECK_EQ_I64(next_labels(loader, NULL, 0, 28, 28), 3000);
    CHECK_EQ_I64(next_labels(loader, NULL, 0, 28, 28), -1);
    dt_data_loader_free(loader);
  }

  /* Rollover: the 1000 left over lead the next epoch (11000 samples: 3
   * batches, 2000 carried on). */
  o.last_batch = DT_LAST_BATCH_ROLLOVER;
  if ((loader = t10k(&o)) != NULL) {
    CHECK_OK(dt_data_loader_num_batches(&n, loader));
    CHECK_EQ_U64(n, 3);
    CHECK_OK(dt_data_loader_start_epoch(loader, 0));
    CHECK_EQ_I64(next_labels(loader, NULL, 0, 28, 28), 3000);
    CHECK_EQ_I64(next_labels(loader, NULL, 0, 28, 28), 3000);
    CHECK_EQ_I64(next_labels(loader, NULL, 0, 28, 28), 3000);
    CHECK_EQ_I64(next_labels(loader, NULL, 0, 28, 28), -1);
    CHECK_OK(dt_data_loader_start_epoch(loader, 1));
    CHECK_OK(dt_data_loader_num_batches(&n, loader));
    CHECK_EQ_U64(n, 3);
    CHECK_EQ_I64(next_labels(loader, got, 3000, 28, 28), 3000);
    CHECK(memcmp(got, tail_labels, sizeof tail_labels) == 0);
    dt_data_loader_free(loader);
  }
}

/* Labels of one whole epoch of a t10k loader with batch 5000. */
static void epoch_labels(dt_data_loader *loader, int32_t epoch, int32_t *dst) {
  int64_t b;
  size_t at = 0;
  CHECK_OK(dt_data_loader_start_epoch(loader, epoch));
  while ((b = next_labels(loader, dst + at, 10000 - at, 28, 28)) > 0) at += (size_t)b;
  CHECK_EQ_U64(at, 10000);
}

static void test_shuffle(void) {
  static int32_t a0[10000], b0[10000], a1[10000], c0[10000];
  dt_data_loader_options o = options_with(5000, 1);
  dt_data_loader *a, *b, *c;
  long counts[10];
  size_t i;
  int in_order = 1;
  o.seed = 3;
  a = t10k(&o);
  b = t10k(&o);
  o.seed = 4;
  c = t10k(&o);
  if (a == NULL || b == NULL || c == NULL) {
    dt_data_loader_free(a);
    dt_data_loader_free(b);
    dt_data_loader_free(c);
    return;
  }
  epoch_labels(a, 0, a0);
  epoch_labels(a, 1, a1);
  epoch_labels(b, 0, b0);
  epoch_labels(c, 0, c0);
  /* The order depends on seed and epoch only. */
  CHECK(memcmp(a0, b0, sizeof a0) == 0);
  CHECK(memcmp(a0, a1, sizeof a0) != 0);
  CHECK(memcmp(a0, c0, sizeof a0) != 0);
  /* It is a permutation: every t10k class is there 1000 times. */
  memset(counts, 0, sizeof counts);
  for (i = 0; i < 10000; i++) {
    if (a1[i] >= 0 && a1[i] <= 9) counts[a1[i]]++;
  }
  for (i = 0; i < 10; i++) CHECK_EQ_I64(counts[i], 1000);
  /* ... and not the file order. */
  for (i = 0; i < 10; i++) in_order &= a0[i] == (int32_t[10]){9, 2, 1, 1, 6, 1, 4, 6, 5, 7}[i];
  CHECK(!in_order);
  dt_data_loader_free(a);
  dt_data_loader_free(b);
  dt_data_loader_free(c);
}

static void test_train_and_parts(void) {
  static const int32_t part1_labels[10] = {3, 3, 7, 8, 8, 2, 7, 8, 5, 7}; /* train[30000:30010] */
  static const int32_t train_labels[10] = {9, 0, 0, 3, 0, 2, 7, 2, 5, 5};
  static int32_t got[1000];
  dt_data_loader_options o = options_with(1000, 0);
  dt_data_loader *loader = NULL;
  size_t n = 0;
  if (CHECK_OK(dt_data_loader_create_mnist(&loader, MNIST_DIR, "train", &o))) {
    CHECK_OK(dt_data_loader_num_samples(&n, loader));
    CHECK_EQ_U64(n, 60000);
    CHECK_OK(dt_data_loader_num_batches(&n, loader));
    CHECK_EQ_U64(n, 60);
    CHECK_OK(dt_data_loader_start_epoch(loader, 0));
    CHECK_EQ_I64(next_labels(loader, got, 1000, 28, 28), 1000);
    CHECK(memcmp(got, train_labels, sizeof train_labels) == 0);
    dt_data_loader_free(loader);
  }
  o.num_parts = 2;
  o.part_index = 1;
  loader = NULL;
  if (CHECK_OK(dt_data_loader_create_mnist(&loader, NULL, "train", &o))) {
    CHECK_OK(dt_data_loader_num_samples(&n, loader));
    CHECK_EQ_U64(n, 30000);
    CHECK_OK(dt_data_loader_num_batches(&n, loader));
    CHECK_EQ_U64(n, 30);
    CHECK_OK(dt_data_loader_start_epoch(loader, 0));
    CHECK_EQ_I64(next_labels(loader, got, 1000, 28, 28), 1000);
    CHECK(memcmp(got, part1_labels, sizeof part1_labels) == 0);
    dt_data_loader_free(loader);
  }
  /* 10000 in 3 parts: 3333 each, the remainder dropped. */
  o.num_parts = 3;
  o.part_index = 2;
  if ((loader = t10k(&o)) != NULL) {
    CHECK_OK(dt_data_loader_num_samples(&n, loader));
    CHECK_EQ_U64(n, 3333);
    CHECK_OK(dt_data_loader_num_batches(&n, loader));
    CHECK_EQ_U64(n, 4);
    dt_data_loader_free(loader);
  }
}

int main(void) {
  const char *tmp = getenv("TMPDIR");
  int rc;
  if (tmp == NULL || tmp[0] == '\0') tmp = "/tmp";
  snprintf(g_dir, sizeof g_dir, "%s/capi_data_%ld", tmp, (long)getpid());
  if (mkdir(g_dir, 0700) != 0) {
    fprintf(stderr, "cannot create %s\n", g_dir);
    printf("0 passed, 1 failed\n");
    return 1;
  }
  test_options_init();
  test_t10k();
  test_end_of_epoch();
  test_last_batch();
  test_shuffle();
  test_train_and_parts();
  test_short_struct();
  test_bad_options();
  test_own_files();
  test_calls_and_handles();
  rc = capi_finish();
  if (rmdir(g_dir) != 0) fprintf(stderr, "cannot remove %s (files left?)\n", g_dir);
  return rc;
}
