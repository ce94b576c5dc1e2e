/*
 * CIFAR loaders: CIFAR-10 and CIFAR-100 files written here with hand-made
 * pixels, batches of (B, 3, 32, 32) normalised with CIFAR-10's statistics
 * or the caller's, random crop and flip that repeat with the seed, every
 * bad argument, truncated and corrupt files, and an older caller's shorter
 * struct.
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

#define PIXELS 3072
#define MAX_RECORDS 24

static char g_dir[512];
static char g_sub[600]; /* a folder with bad files */

static const float kMean[3] = {0.4914f, 0.4822f, 0.4465f};
static const float kStd[3] = {0.2470f, 0.2435f, 0.2616f};

static int last_error_has(const char *text) {
  return strstr(dt_last_error(), text) != NULL;
}

static unsigned char pixel(int image, int c, int y, int x) {
  return (unsigned char)((image * 37 + c * 85 + y * 7 + x) % 256);
}

/* count records of images first, first + 1, ...; label_bytes 1 (CIFAR-10,
 * label labels[i]) or 2 (CIFAR-100: coarse labels[i] % 20, fine labels[i]). */
static int write_cifar(const char *dir, const char *name, int label_bytes, const int *labels, int count,
                       int first, size_t cut) {
  static unsigned char bytes[MAX_RECORDS * (PIXELS + 2)];
  char path[700];
  size_t n = 0;
  int i, c, y, x;
  FILE *f;
  size_t written;
  for (i = 0; i < count; i++) {
    if (label_bytes == 2) bytes[n++] = (unsigned char)(labels[i] % 20);
    bytes[n++] = (unsigned char)labels[i];
    for (c = 0; c < 3; c++)
      for (y = 0; y < 32; y++)
        for (x = 0; x < 32; x++) bytes[n++] = pixel(first + i, c, y, x);
  }
  n -= cut;
  snprintf(path, sizeof path, "%s/%s", dir, name);
  f = fopen(path, "wb");
  if (f == NULL) return 0;
  written = fwrite(bytes, 1, n, f);
  return fclose(f) == 0 && written == n;
}

static void remove_in(const char *dir, const char *name) {
  char path[700];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  remove(path);
}

static dt_data_loader_options unshuffled(int64_t batch) {
  dt_data_loader_options o;
  dt_data_loader_options_init(&o, sizeof o);
  o.batch_size = batch;
  o.shuffle = 0;
  return o;
}

/* The next batch's data (floats, up to cap) and labels; returns its size. */
static int64_t next_batch(dt_data_loader *loader, float *data, size_t cap, int32_t *labels) {
  dt_ndarray *d = NULL, *l = NULL;
  int32_t has = 0;
  int64_t dims[4] = {0, 0, 0, 0};
  size_t ndim = 0, bytes = 0;
  if (!CHECK_OK(dt_data_loader_next(&d, &l, &has, loader)) || !has) return 0;
  CHECK_OK(dt_ndarray_ndim(&ndim, d));
  CHECK_EQ_U64(ndim, 4);
  CHECK_OK(dt_ndarray_shape(dims, 4, d));
  CHECK(dims[1] == 3 && dims[2] == 32 && dims[3] == 32);
  CHECK_OK(dt_ndarray_nbytes(&bytes, d));
  if (CHECK(bytes <= cap * sizeof(float))) CHECK_OK(dt_ndarray_copy_to_host(data, bytes, d));
  CHECK_OK(dt_ndarray_copy_to_host(labels, (size_t)dims[0] * sizeof(int32_t), l));
  dt_ndarray_free(d);
  dt_ndarray_free(l);
  return dims[0];
}

/* Whether `got` is image `image` normalised with mean/std: exactly the
 * loader's arithmetic, (v / 255 - mean) / std in float. */
static int is_image(const float *got, int image, const float *mean, const float *std) {
  int c, y, x;
  for (c = 0; c < 3; c++)
    for (y = 0; y < 32; y++)
      for (x = 0; x < 32; x++) {
        const float v = (float)pixel(image, c, y, x);
        const float want = (v / 255.0f - mean[c]) / std[c];
        if (fabsf(got[(c * 32 + y) * 32 + x] - want) > 1e-6f) return 0;
      }
  return 1;
}

/* Whether `got` is image `image` padded by 4, cropped at (cy, cx) and
 * flipped or not; returns 1 + (cy * 9 + cx) * 2 + flip for the first match,
 * 0 for none. */
static int which_crop(const float *got, int image) {
  int cy, cx, flip, c, y, x;
  for (cy = 0; cy <= 8; cy++)
    for (cx = 0; cx <= 8; cx++)
      for (flip = 0; flip <= 1; flip++) {
        int match = 1;
        for (c = 0; c < 3 && match; c++)
          for (y = 0; y < 32 && match; y++)
            for (x = 0; x < 32 && match; x++) {
              const int sy = y + cy - 4;
              const int sx = (flip ? 31 - x : x) + cx - 4;
              const float v = (sy < 0 || sy > 31 || sx < 0 || sx > 31) ? 0.0f : (float)pixel(image, c, sy, sx);
              const float want = (v / 255.0f - kMean[c]) / kStd[c];
              match = fabsf(got[(c * 32 + y) * 32 + x] - want) <= 1e-6f;
            }
        if (match) return 1 + (cy * 9 + cx) * 2 + flip;
      }
  return 0;
}

static float g_batch[MAX_RECORDS * PIXELS];
static float g_other[MAX_RECORDS * PIXELS];
static int32_t g_labels[MAX_RECORDS];

/* The fields added for CIFAR default to "not set": the behaviour before. */
static void test_new_option_defaults(void) {
  dt_data_loader_options o;
  memset(&o, 0xAB, sizeof o);
  CHECK_OK(dt_data_loader_options_init(&o, sizeof o));
  CHECK_EQ_I64(o.random_crop_padding, 0);
  CHECK_EQ_I64(o.random_flip, 0);
  CHECK(o.channel_mean == NULL && o.channel_std == NULL);
  CHECK_EQ_U64(o.num_channel_stats, 0);
  CHECK_EQ_DBL(o.mean, 0.2860f);
}

static void test_cifar10_test_split(void) {
  dt_data_loader *loader = NULL;
  dt_data_loader_options o = unshuffled(2);
  size_t n = 0;
  int64_t got;
  if (!CHECK_OK(dt_data_loader_create_cifar(&loader, g_dir, "test", 10, &o))) return;
  CHECK_OK(dt_data_loader_num_samples(&n, loader));
  CHECK_EQ_U64(n, 3);
  CHECK_OK(dt_data_loader_num_batches(&n, loader));
  CHECK_EQ_U64(n, 2);
  CHECK_OK(dt_data_loader_start_epoch(loader, 0));
  got = next_batch(loader, g_batch, MAX_RECORDS * PIXELS, g_labels);
  CHECK_EQ_I64(got, 2);
  CHECK(g_labels[0] == 6 && g_labels[1] == 1);
  /* CIFAR-10's statistics by default; mean and std do not apply. */
  CHECK(is_image(g_batch, 100, kMean, kStd));
  CHECK(is_image(g_batch + PIXELS, 101, kMean, kStd));
  /* Image 100's first red byte is 100 * 37 % 256 = 116. */
  CHECK(fabsf(g_batch[0] - (116.0f / 255.0f - 0.4914f) / 0.2470f) < 1e-6f);
  got = next_batch(loader, g_batch, MAX_RECORDS * PIXELS, g_labels);
  CHECK_EQ_I64(got, 1);
  CHECK(g_labels[0] == 2 && is_image(g_batch, 102, kMean, kStd));
  CHECK_EQ_I64(next_batch(loader, g_batch, MAX_RECORDS * PIXELS, g_labels), 0);
  dt_data_loader_free(loader);
}

static void test_train_splits_and_own_statistics(void) {
  static const float zero[3] = {0.0f, 0.0f, 0.0f};
  static const float one[3] = {1.0f, 1.0f, 1.0f};
  dt_data_loader *loader = NULL;
  dt_data_loader_options o = unshuffled(8);
  int i;
  o.channel_mean = zero;
  o.channel_std = one;
  o.num_channel_stats = 3;
  if (CHECK_OK(dt_data_loader_create_cifar(&loader, g_dir, "train", 10, &o))) {
    CHECK_OK(dt_data_loader_start_epoch(loader, 0));
    CHECK_EQ_I64(next_batch(loader, g_batch, MAX_RECORDS * PIXELS, g_labels), 5);
    /* data_batch_k.bin holds image k with label k; plain x / 255 here. */
    for (i = 0; i < 5; i++) {
      CHECK(g_labels[i] == i + 1);
      CHECK(is_image(g_batch + i * PIXELS, i + 1, zero, one));
    }
    dt_data_loader_free(loader);
  }
  o = unshuffled(8);
  if (CHECK_OK(dt_data_loader_create_cifar(&loader, g_dir, "train", 100, &o))) {
    CHECK_OK(dt_data_loader_start_epoch(loader, 0));
    CHECK_EQ_I64(next_batch(loader, g_batch, MAX_RECORDS * PIXELS, g_labels), 2);
    /* The fine label is the class. */
    CHECK(g_labels[0] == 99 && g_labels[1] == 42);
    CHECK(is_image(g_batch + PIXELS, 201, kMean, kStd));
    dt_data_loader_free(loader);
  }
}

/* Reads one epoch of the 20-image "test" split of variant 100 into out. */
static int64_t augmented_epoch(float *out, uint64_t seed, int32_t epoch) {
  dt_data_loader *loader = NULL;
  dt_data_loader_options o;
  int64_t total = 0, got;
  dt_data_loader_options_init(&o, sizeof o);
  o.batch_size = 8;
  o.seed = seed;
  o.random_crop_padding = 4;
  o.random_flip = 1;
  if (!CHECK_OK(dt_data_loader_create_cifar(&loader, g_dir, "test", 100, &o))) return 0;
  CHECK_OK(dt_data_loader_start_epoch(loader, epoch));
  while ((got = next_batch(loader, out + total * PIXELS, (size_t)(MAX_RECORDS - total) * PIXELS,
                           g_labels + total)) > 0) {
    total += got;
  }
  dt_data_loader_free(loader);
  return total;
}

static void test_augmentation_repeats_with_the_seed(void) {
  int64_t i;
  int crops[163] = {0};
  int distinct = 0, flipped = 0;
  CHECK_EQ_I64(augmented_epoch(g_batch, 7, 0), 20);
  /* Every image is a crop of its padded original, possibly mirrored. */
  for (i = 0; i < 20; i++) {
    const int found = which_crop(g_batch + i * PIXELS, 300 + g_labels[i]);
    CHECK(found != 0);
    if (found != 0 && crops[found]++ == 0) distinct++;
    flipped += found != 0 && (found - 1) % 2 == 1;
  }
  CHECK(distinct > 5);
  CHECK(flipped > 0 && flipped < 20);
  /* A second run with the same seed: the same batches, bit for bit. */
  CHECK_EQ_I64(augmented_epoch(g_other, 7, 0), 20);
  CHECK(memcmp(g_batch, g_other, 20 * PIXELS * sizeof(float)) == 0);
  /* Another seed, or another epoch: other crops. */
  CHECK_EQ_I64(augmented_epoch(g_other, 8, 0), 20);
  CHECK(memcmp(g_batch, g_other, 20 * PIXELS * sizeof(float)) != 0);
  CHECK_EQ_I64(augmented_epoch(g_other, 7, 1), 20);
  CHECK(memcmp(g_batch, g_other, 20 * PIXELS * sizeof(float)) != 0);
}

/* An older caller's struct ends before the augmentation fields: whatever
 * its memory holds there is never read. */
static void test_older_struct(void) {
  dt_data_loader *loader = NULL;
  dt_data_loader_options o = unshuffled(3);
  const size_t end_of_std = offsetof(dt_data_loader_options, std) + sizeof(float);
  /* Its tail padding and the newer fields: garbage. */
  memset((unsigned char *)&o + end_of_std, 0xAB, sizeof o - end_of_std);
  o.struct_size = offsetof(dt_data_loader_options, random_crop_padding);
  if (CHECK_OK(dt_data_loader_create_cifar(&loader, g_dir, "test", 10, &o))) {
    CHECK_OK(dt_data_loader_start_epoch(loader, 0));
    CHECK_EQ_I64(next_batch(loader, g_batch, MAX_RECORDS * PIXELS, g_labels), 3);
    CHECK(is_image(g_batch + 2 * PIXELS, 102, kMean, kStd));
    dt_data_loader_free(loader);
  }
}

static void test_bad_arguments(void) {
  static const float three[3] = {0.5f, 0.5f, 0.5f};
  dt_data_loader *loader = CAPI_SENTINEL(dt_data_loader);
  dt_data_loader_options o;
  int i;
  CHECK_STATUS(dt_data_loader_create_cifar(&loader, NULL, "test", 10, NULL), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_data_loader_create_cifar(NULL, g_dir, "test", 10, NULL), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_data_loader_create_cifar(&loader, g_dir, NULL, 10, NULL), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_data_loader_create_cifar(&loader, g_dir, "t10k", 10, NULL), DT_ERR_INVALID_ARGUMENT);
  CHECK(last_error_has("split must be \"train\" or \"test\""));
  CHECK_STATUS(dt_data_loader_create_cifar(&loader, g_dir, "test", 11, NULL), DT_ERR_INVALID_ARGUMENT);
  CHECK(last_error_has("variant must be 10 or 100"));
  for (i = 0; i < 7; i++) {
    o = unshuffled(2);
    switch (i) {
      case 0: o.random_flip = 2; break;
      case 1: o.random_crop_padding = -1; break;
      case 2: o.random_crop_padding = 33; break;
      case 3: o.num_channel_stats = 1; o.channel_mean = three; o.channel_std = three; break;
      case 4: o.num_channel_stats = 3; o.channel_mean = three; break;
      case 5: o.num_channel_stats = 3; o.channel_mean = three; o.channel_std = three; o.batch_size = 0; break;
      default: o.num_parts = 4; break; /* more parts than the 3 samples */
    }
    CHECK_STATUS(dt_data_loader_create_cifar(&loader, g_dir, "test", 10, &o), DT_ERR_INVALID_ARGUMENT);
    CHECK(loader == CAPI_SENTINEL(dt_data_loader));
  }
  o = unshuffled(2);
  o.num_channel_stats = 3;
  o.channel_mean = kMean;
  o.channel_std = three;
  /* MNIST has one channel. */
  CHECK_STATUS(dt_data_loader_create_mnist(&loader, NULL, "t10k", &o), DT_ERR_INVALID_ARGUMENT);
}

static void test_missing_and_corrupt_files(void) {
  static const int labels[3] = {1, 2, 3};
  static const int bad[3] = {1, 10, 3};
  dt_data_loader *loader = CAPI_SENTINEL(dt_data_loader);
  CHECK_STATUS(dt_data_loader_create_cifar(&loader, g_sub, "test", 10, NULL), DT_ERR_NOT_FOUND);
  CHECK(last_error_has("test_batch.bin"));
  /* The third record is cut 5 bytes short: it starts at byte offset 6146. */
  CHECK(write_cifar(g_sub, "test_batch.bin", 1, labels, 3, 0, 5));
  CHECK_STATUS(dt_data_loader_create_cifar(&loader, g_sub, "test", 10, NULL), DT_ERR_IO);
  CHECK(last_error_has(g_sub) && last_error_has("test_batch.bin is truncated"));
  CHECK(last_error_has("byte offset 6146 has only 3068 bytes"));
  /* A label of 10 in the second record, at byte offset 3073. */
  CHECK(write_cifar(g_sub, "test_batch.bin", 1, bad, 3, 0, 0));
  CHECK_STATUS(dt_data_loader_create_cifar(&loader, g_sub, "test", 10, NULL), DT_ERR_IO);
  CHECK(last_error_has("label 10 at byte offset 3073 (record 1)"));
  CHECK(loader == CAPI_SENTINEL(dt_data_loader));
  remove_in(g_sub, "test_batch.bin");
}

int main(void) {
  static const int test_labels[3] = {6, 1, 2};
  static const int fine_labels[2] = {99, 42};
  int labels[20];
  const char *tmp = getenv("TMPDIR");
  int rc, i;
  char name[64];
  if (tmp == NULL || tmp[0] == '\0') tmp = "/tmp";
  snprintf(g_dir, sizeof g_dir, "%s/capi_cifar_%ld", tmp, (long)getpid());
  snprintf(g_sub, sizeof g_sub, "%s/bad", g_dir);
  if (mkdir(g_dir, 0700) != 0 || mkdir(g_sub, 0700) != 0) {
    fprintf(stderr, "cannot create %s\n", g_sub);
    printf("0 passed, 1 failed\n");
    return 1;
  }
  for (i = 0; i < 20; i++) labels[i] = i;
  CHECK(write_cifar(g_dir, "test_batch.bin", 1, test_labels, 3, 100, 0));
  for (i = 1; i <= 5; i++) {
    snprintf(name, sizeof name, "data_batch_%d.bin", i);
    CHECK(write_cifar(g_dir, name, 1, &i, 1, i, 0));
  }
  CHECK(write_cifar(g_dir, "train.bin", 2, fine_labels, 2, 200, 0));
  CHECK(write_cifar(g_dir, "test.bin", 2, labels, 20, 300, 0));

  test_new_option_defaults();
  test_cifar10_test_split();
  test_train_splits_and_own_statistics();
  test_augmentation_repeats_with_the_seed();
  test_older_struct();
  test_bad_arguments();
  test_missing_and_corrupt_files();

  rc = capi_finish();
  remove_in(g_dir, "test_batch.bin");
  for (i = 1; i <= 5; i++) {
    snprintf(name, sizeof name, "data_batch_%d.bin", i);
    remove_in(g_dir, name);
  }
  remove_in(g_dir, "train.bin");
  remove_in(g_dir, "test.bin");
  if (rmdir(g_sub) != 0 || rmdir(g_dir) != 0) fprintf(stderr, "cannot remove %s (files left?)\n", g_dir);
  return rc;
}
