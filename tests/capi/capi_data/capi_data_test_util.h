/*
 * What the data loader C API tests share: the scratch folder, IDX files
 * written here, options and the Fashion-MNIST t10k loader.
 */
#ifndef CAPI_DATA_TEST_UTIL_H
#define CAPI_DATA_TEST_UTIL_H

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

#include "../capi_check.h"

#define MNIST_DIR "/usr/share/datasets/fashion-mnist"

extern char g_dir[512];

static inline int last_error_has(const char *text) {
  return strstr(dt_last_error(), text) != NULL;
}

static inline void path_in(char *out, size_t cap, const char *name) {
  snprintf(out, cap, "%s/%s", g_dir, name);
}

static inline int write_file(const char *path, const void *bytes, size_t n) {
  FILE *f = fopen(path, "wb");
  size_t written;
  if (f == NULL) return 0;
  written = fwrite(bytes, 1, n, f);
  return fclose(f) == 0 && written == n;
}

static inline void put_be32(unsigned char *p, uint32_t v) {
  p[0] = (unsigned char)(v >> 24);
  p[1] = (unsigned char)(v >> 16);
  p[2] = (unsigned char)(v >> 8);
  p[3] = (unsigned char)v;
}

/* The pixel the test writes at (sample, offset). */
static inline unsigned char pixel_of(uint32_t sample, uint32_t offset) {
  return (unsigned char)((sample * 37u + offset * 11u) & 0xFFu);
}

/* An IDX uint8 image file of n (rows x cols) images; `claimed` is the count
 * in the header (n for a well-formed file). */
static inline int write_images(const char *path, uint32_t n, uint32_t claimed, uint32_t rows, uint32_t cols) {
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

static inline int write_labels(const char *path, const unsigned char *labels, uint32_t n) {
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

static inline dt_data_loader_options options_with(int64_t batch, int32_t shuffle) {
  dt_data_loader_options o;
  dt_data_loader_options_init(&o, sizeof o);
  o.batch_size = batch;
  o.shuffle = shuffle;
  return o;
}

static inline dt_data_loader *t10k(const dt_data_loader_options *o) {
  dt_data_loader *loader = NULL;
  if (!CHECK_OK(dt_data_loader_create_mnist(&loader, NULL, "t10k", o))) return NULL;
  return loader;
}

/* The next batch's labels into dst (capacity cap); returns B, or -1 at the
 * end of the epoch / on failure. Checks the shapes and dtypes on the way. */
static inline int64_t next_labels(dt_data_loader *loader, int32_t *dst, size_t cap, int64_t rows, int64_t cols) {
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

/* The groups of tests in capi_data/, called by main in capi_data_test.c. */
void test_short_struct(void);
void test_bad_options(void);
void test_own_files(void);
void test_calls_and_handles(void);

#endif
