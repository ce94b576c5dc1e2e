/*
 * Data loaders: option defaults, Fashion-MNIST from its standard files
 * (train and t10k), batches and the end of an epoch, last_batch modes,
 * shuffling, parts, IDX files written here (good, malformed, missing), every
 * bad option, and NULL, freed and mistyped handles.
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

#define MNIST_DIR "/usr/share/datasets/fashion-mnist"

static char g_dir[512];

static int last_error_has(const char *text) {
  return strstr(dt_last_error(), text) != NULL;
}

static void path_in(char *out, size_t cap, const char *name) {
  snprintf(out, cap, "%s/%s", g_dir, name);
}

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

/* The pixel the test writes at (sample, offset). */
static unsigned char pixel_of(uint32_t sample, uint32_t offset) {
  return (unsigned char)((sample * 37u + offset * 11u) & 0xFFu);
}

/* An IDX uint8 image file of n (rows x cols) images; `claimed` is the count
 * in the header (n for a well-formed file). */
static int write_images(const char *path, uint32_t n, uint32_t claimed, uint32_t rows, uint32_t cols) {
  size_t size = 16 + (size_t)n * rows * cols, i;
  unsigned char *bytes = (unsigned char *)malloc(size);
  int ok;
  if (bytes == NULL) return 0;
  put_be32(bytes, 0x00000803u);
  put_be32(bytes + 4, claimed);
  put_be32(bytes + 8, rows);
  put_be32(bytes + 12, cols);
  for (i = 0; i < (size_t)n * rows * cols; i++) {
    bytes[16 + i] = pixel_of((uint32_t)(i / (rows * cols)), (uint32_t)(i % (rows * cols)));
  }
  ok = write_file(path, bytes, size);
  free(bytes);
  return ok;
}

static int write_labels(const char *path, const unsigned char *labels, uint32_t n) {
  unsigned char *bytes = (unsigned char *)malloc(8 + (size_t)n);
  int ok;
  if (bytes == NULL) return 0;
  put_be32(bytes, 0x00000801u);
  put_be32(bytes + 4, n);
  if (n > 0) memcpy(bytes + 8, labels, n);
  ok = write_file(path, bytes, 8 + (size_t)n);
  free(bytes);
  return ok;
}

static dt_data_loader_options options_with(int64_t batch, int32_t shuffle) {
  dt_data_loader_options o;
  dt_data_loader_options_init(&o, sizeof o);
  o.batch_size = batch;
  o.shuffle = shuffle;
  return o;
}

static dt_data_loader *t10k(const dt_data_loader_options *o) {
  dt_data_loader *loader = NULL;
  if (!CHECK_OK(dt_data_loader_create_mnist(&loader, NULL, "t10k", o))) return NULL;
  return loader;
}

/* The next batch's labels into dst (capacity cap); returns B, or -1 at the
 * end of the epoch / on failure. Checks the shapes and dtypes on the way. */
static int64_t next_labels(dt_data_loader *loader, int32_t *dst, size_t cap, int64_t rows, int64_t cols) {
  dt_ndarray *data = NULL, *labels = NULL;
  int32_t has = -1;
  int64_t dims[4] = {0, 0, 0, 0}, b = -1;
  size_t ndim = 0;
  dt_dtype dtype = DT_UINT8;
  if (!CHECK_OK(dt_data_loader_next(&data, &labels, &has, loader))) return -1;
  if (has == 0) return -1;
  CHECK_EQ_I64(has, 1);
  CHECK_OK(dt_ndarray_ndim(&ndim, data));
  CHECK_EQ_U64(ndim, 4);
  CHECK_OK(dt_ndarray_shape(dims, 4, data));
  CHECK(dims[1] == 1 && dims[2] == rows && dims[3] == cols);
  CHECK_OK(dt_ndarray_dtype(&dtype, data));
  CHECK(dtype == DT_FLOAT32);
  b = dims[0];
  CHECK_OK(dt_ndarray_ndim(&ndim, labels));
  CHECK_EQ_U64(ndim, 1);
  CHECK_OK(dt_ndarray_shape(dims, 1, labels));
  CHECK_EQ_I64(dims[0], b);
  CHECK_OK(dt_ndarray_dtype(&dtype, labels));
  CHECK(dtype == DT_INT32);
  if (dst != NULL && b > 0 && (size_t)b <= cap) {
    CHECK_OK(dt_ndarray_copy_to_host(dst, (size_t)b * sizeof(int32_t), labels));
  }
  dt_ndarray_free(data);
  dt_ndarray_free(labels);
  return b;
}

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

/* An older caller's struct that ends after batch_size: the rest default. */
static void test_short_struct(void) {
  dt_data_loader_options o = options_with(1000, 0);
  dt_data_loader *loader = NULL;
  size_t n = 0;
  o.struct_size = offsetof(dt_data_loader_options, batch_size) + sizeof(int64_t);
  o.last_batch = DT_LAST_BATCH_DISCARD; /* past the struct: ignored */
  o.num_parts = 5;
  if (CHECK_OK(dt_data_loader_create_mnist(&loader, NULL, "t10k", &o))) {
    CHECK_OK(dt_data_loader_num_samples(&n, loader));
    CHECK_EQ_U64(n, 10000);
    CHECK_OK(dt_data_loader_num_batches(&n, loader));
    CHECK_EQ_U64(n, 10);
    dt_data_loader_free(loader);
  }
}

static void test_bad_options(void) {
  dt_data_loader *loader = CAPI_SENTINEL(dt_data_loader);
  dt_data_loader_options o;
  int i;
  for (i = 0; i < 16; i++) {
    o = options_with(100, 0);
    switch (i) {
      case 0: o.batch_size = 0; break;
      case 1: o.batch_size = -5; break;
      case 2: o.num_parts = 2; o.part_index = 2; break;
      case 3: o.part_index = -1; break;
      case 4: o.num_parts = 0; o.part_index = 0; break;
      case 5: o.num_parts = 10001; break;
      case 6: o.last_batch = (dt_last_batch)7; break;
      case 7: o.last_batch = (dt_last_batch)-1; break;
      case 8: o.prefetch = 0; break;
      case 9: o.prefetch = -3; break;
      case 10: o.struct_size = 0; break;
      case 11: o.std = 0.0f; break;
      case 12: o.std = NAN; break;
      case 13: o.num_workers = -1; break;
      case 14: o.num_workers = 257; break;
      default: o.mean = NAN; break;
    }
    if (!CHECK_STATUS(dt_data_loader_create_mnist(&loader, NULL, "t10k", &o), DT_ERR_INVALID_ARGUMENT)) {
      fprintf(stderr, "  bad option case %d\n", i);
    }
  }
  o = options_with(100, 0);
  CHECK_STATUS(dt_data_loader_create_mnist(&loader, NULL, "valid", &o), DT_ERR_INVALID_ARGUMENT);
  CHECK(last_error_has("valid"));
  CHECK_STATUS(dt_data_loader_create_mnist(&loader, NULL, "", &o), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_data_loader_create_mnist(&loader, NULL, NULL, &o), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_data_loader_create_mnist(NULL, NULL, "t10k", &o), DT_ERR_INVALID_ARGUMENT);
  CHECK(loader == CAPI_SENTINEL(dt_data_loader));
}

static void test_own_files(void) {
  static const unsigned char labels10[10] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  char images[600], labels[600], short_labels[600], bad_label[600], garbage[600], truncated[600];
  char sub[600], sub_images[700], sub_labels[700], missing_dir[600];
  static const unsigned char junk[40] = "this is not an IDX file at all, really";
  static const unsigned char label_big[3] = {1, 10, 2};
  dt_data_loader_options o = options_with(4, 0);
  dt_data_loader *loader = CAPI_SENTINEL(dt_data_loader);
  float pixels[4 * 16];
  int32_t got[4];
  dt_ndarray *data = NULL, *lab = NULL;
  int32_t has = 0;
  size_t n = 0, i;
  int exact = 1;

  path_in(images, sizeof images, "img-idx3-ubyte");
  path_in(labels, sizeof labels, "lab-idx1-ubyte");
  path_in(short_labels, sizeof short_labels, "short-idx1-ubyte");
  path_in(bad_label, sizeof bad_label, "big-idx1-ubyte");
  path_in(garbage, sizeof garbage, "garbage");
  path_in(truncated, sizeof truncated, "trunc-idx3-ubyte");
  CHECK(write_images(images, 10, 10, 4, 4));
  CHECK(write_labels(labels, labels10, 10));
  CHECK(write_labels(short_labels, labels10, 9));
  CHECK(write_labels(bad_label, label_big, 3));
  CHECK(write_file(garbage, junk, sizeof junk));
  CHECK(write_images(truncated, 3, 10, 4, 4));

  o.mean = 0.5f;
  o.std = 0.25f;
  loader = NULL;
  if (CHECK_OK(dt_data_loader_create(&loader, images, labels, &o))) {
    CHECK_OK(dt_data_loader_num_samples(&n, loader));
    CHECK_EQ_U64(n, 10);
    CHECK_OK(dt_data_loader_num_batches(&n, loader));
    CHECK_EQ_U64(n, 3);
    CHECK_OK(dt_data_loader_start_epoch(loader, 0));
    CHECK_EQ_I64(next_labels(loader, NULL, 0, 4, 4), 4);
    if (CHECK_OK(dt_data_loader_next(&data, &lab, &has, loader)) && has == 1) {
      /* Samples 4..7, in file order, normalised as (x / 255 - 0.5) / 0.25. */
      CHECK_OK(dt_ndarray_copy_to_host(pixels, sizeof pixels, data));
      CHECK_OK(dt_ndarray_copy_to_host(got, sizeof got, lab));
      CHECK(got[0] == 4 && got[1] == 5 && got[2] == 6 && got[3] == 7);
      for (i = 0; i < 4 * 16; i++) {
        const double x = pixel_of((uint32_t)(4 + i / 16), (uint32_t)(i % 16));
        exact &= fabs(pixels[i] - (x / 255.0 - 0.5) / 0.25) < 1e-5;
      }
      CHECK(exact);
      dt_ndarray_free(data);
      dt_ndarray_free(lab);
    }
    CHECK_EQ_I64(next_labels(loader, got, 4, 4, 4), 2);
    CHECK(got[0] == 8 && got[1] == 9);
    CHECK_EQ_I64(next_labels(loader, NULL, 0, 4, 4), -1);
    dt_data_loader_free(loader);
  }
  loader = CAPI_SENTINEL(dt_data_loader);

  /* Malformed files: I/O errors naming the file. */
  CHECK_STATUS(dt_data_loader_create(&loader, garbage, labels, &o), DT_ERR_IO);
  CHECK(last_error_has(garbage));
  CHECK_STATUS(dt_data_loader_create(&loader, images, garbage, &o), DT_ERR_IO);
  CHECK(last_error_has(garbage));
  CHECK_STATUS(dt_data_loader_create(&loader, truncated, labels, &o), DT_ERR_IO);
  CHECK(last_error_has(truncated));
  CHECK_STATUS(dt_data_loader_create(&loader, images, short_labels, &o), DT_ERR_IO);
  CHECK(last_error_has(short_labels) || last_error_has(images));
  /* Labels swapped with images: a 3-d file where labels belong. */
  CHECK_STATUS(dt_data_loader_create(&loader, labels, images, &o), DT_ERR_IO);
  {
    char three[600];
    path_in(three, sizeof three, "three-idx3-ubyte");
    CHECK(write_images(three, 3, 3, 4, 4));
    CHECK_STATUS(dt_data_loader_create(&loader, three, bad_label, &o), DT_ERR_IO);
    CHECK(last_error_has(bad_label));
    unlink(three);
  }
  /* Missing files. */
  path_in(missing_dir, sizeof missing_dir, "no-such-dir");
  CHECK_STATUS(dt_data_loader_create(&loader, missing_dir, labels, &o), DT_ERR_NOT_FOUND);
  CHECK_STATUS(dt_data_loader_create(&loader, images, missing_dir, &o), DT_ERR_NOT_FOUND);
  CHECK_STATUS(dt_data_loader_create_mnist(&loader, missing_dir, "t10k", &o), DT_ERR_NOT_FOUND);
  CHECK_STATUS(dt_data_loader_create_mnist(&loader, "/nonexistent/fashion-mnist", "train", NULL),
               DT_ERR_NOT_FOUND);
  CHECK_STATUS(dt_data_loader_create(&loader, NULL, labels, &o), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_data_loader_create(&loader, images, NULL, &o), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_data_loader_create(NULL, images, labels, &o), DT_ERR_INVALID_ARGUMENT);
  o.batch_size = 0;
  CHECK_STATUS(dt_data_loader_create(&loader, images, labels, &o), DT_ERR_INVALID_ARGUMENT);
  CHECK(loader == CAPI_SENTINEL(dt_data_loader));

  /* A directory whose standard-named files are garbage. */
  path_in(sub, sizeof sub, "garbage-mnist");
  snprintf(sub_images, sizeof sub_images, "%s/t10k-images-idx3-ubyte", sub);
  snprintf(sub_labels, sizeof sub_labels, "%s/t10k-labels-idx1-ubyte", sub);
  if (CHECK(mkdir(sub, 0700) == 0)) {
    CHECK(write_file(sub_images, junk, sizeof junk));
    CHECK(write_file(sub_labels, junk, sizeof junk));
    CHECK_STATUS(dt_data_loader_create_mnist(&loader, sub, "t10k", NULL), DT_ERR_IO);
    CHECK(last_error_has("t10k-"));
    /* Only the test split is there. */
    CHECK_STATUS(dt_data_loader_create_mnist(&loader, sub, "train", NULL), DT_ERR_NOT_FOUND);
    CHECK(loader == CAPI_SENTINEL(dt_data_loader));
    unlink(sub_images);
    unlink(sub_labels);
    rmdir(sub);
  }
  unlink(images);
  unlink(labels);
  unlink(short_labels);
  unlink(bad_label);
  unlink(garbage);
  unlink(truncated);
}

static void test_calls_and_handles(void) {
  dt_data_loader_options o = options_with(100, 0);
  dt_data_loader *loader = t10k(&o);
  dt_ndarray *data = CAPI_SENTINEL(dt_ndarray), *labels = CAPI_SENTINEL(dt_ndarray);
  dt_context *ctx = NULL;
  int32_t has = -1;
  size_t n = 12345;
  if (loader == NULL) return;
  CHECK_STATUS(dt_data_loader_start_epoch(loader, -1), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_data_loader_start_epoch(NULL, 0), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_data_loader_num_samples(NULL, loader), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_data_loader_num_samples(&n, NULL), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_data_loader_num_batches(NULL, loader), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_data_loader_num_batches(&n, NULL), DT_ERR_INVALID_ARGUMENT);
  CHECK_EQ_U64(n, 12345);
  CHECK_OK(dt_data_loader_start_epoch(loader, 0));
  CHECK_STATUS(dt_data_loader_start_epoch(loader, -1), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_data_loader_next(NULL, &labels, &has, loader), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_data_loader_next(&data, NULL, &has, loader), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_data_loader_next(&data, &labels, NULL, loader), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_data_loader_next(&data, &labels, &has, NULL), DT_ERR_INVALID_ARGUMENT);
  CHECK(data == CAPI_SENTINEL(dt_ndarray) && labels == CAPI_SENTINEL(dt_ndarray));
  CHECK_EQ_I64(has, -1);
  /* None of the failed calls consumed a batch: the epoch still has all 100. */
  {
    int64_t b, batches = 0;
    while ((b = next_labels(loader, NULL, 0, 28, 28)) > 0) batches++;
    CHECK_EQ_I64(batches, 100);
  }

  /* Another kind of handle is not a loader. */
  if (CHECK_OK(dt_context_create(&ctx, DT_DEVICE_CPU, 0))) {
    CHECK_STATUS(dt_data_loader_num_samples(&n, (const dt_data_loader *)ctx), DT_ERR_INVALID_HANDLE);
    CHECK_STATUS(dt_data_loader_start_epoch((dt_data_loader *)ctx, 0), DT_ERR_INVALID_HANDLE);
    dt_data_loader_free((dt_data_loader *)ctx); /* ignored, reported */
    CHECK(last_error_has("dt_data_loader_free"));
    dt_context_free(ctx);
  }

  dt_data_loader_free(loader);
  CHECK_STATUS(dt_data_loader_num_samples(&n, loader), DT_ERR_INVALID_HANDLE);
  CHECK_STATUS(dt_data_loader_num_batches(&n, loader), DT_ERR_INVALID_HANDLE);
  CHECK_STATUS(dt_data_loader_start_epoch(loader, 0), DT_ERR_INVALID_HANDLE);
  CHECK_STATUS(dt_data_loader_next(&data, &labels, &has, loader), DT_ERR_INVALID_HANDLE);
  CHECK(data == CAPI_SENTINEL(dt_ndarray) && labels == CAPI_SENTINEL(dt_ndarray));
  CHECK_EQ_U64(n, 12345);
  dt_data_loader_free(loader); /* double free: ignored, reported */
  CHECK(last_error_has("dt_data_loader_free"));
  dt_data_loader_free(NULL);
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
