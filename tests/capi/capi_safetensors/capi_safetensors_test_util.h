/*
 * What the safetensors C API tests share: the CPU context and scratch
 * folder, file helpers, hand-written safetensors files and array checks.
 */
#ifndef CAPI_SAFETENSORS_TEST_UTIL_H
#define CAPI_SAFETENSORS_TEST_UTIL_H

#define _POSIX_C_SOURCE 200809L

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "../capi_check.h"

extern dt_context *g_ctx;
extern char g_dir[512];

static inline void path_in_dir(char *out, size_t cap, const char *name) {
  snprintf(out, cap, "%s/%s", g_dir, name);
}

static inline int file_exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}

/* Reads a whole file; the caller frees. */
static inline unsigned char *read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  unsigned char *buf;
  long n;
  *len = 0;
  if (f == NULL) return NULL;
  if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 ||
      fseek(f, 0, SEEK_SET) != 0) {
    fclose(f);
    return NULL;
  }
  buf = (unsigned char *)malloc((size_t)n + 1);
  if (buf != NULL && fread(buf, 1, (size_t)n, f) != (size_t)n) {
    free(buf);
    buf = NULL;
  }
  fclose(f);
  if (buf != NULL) *len = (size_t)n;
  return buf;
}

static inline int write_file(const char *path, const void *data, size_t len) {
  FILE *f = fopen(path, "wb");
  int ok;
  if (f == NULL) return 0;
  ok = fwrite(data, 1, len, f) == len;
  return fclose(f) == 0 && ok;
}

/* Writes a safetensors file from a header text and raw data. */
static inline int write_st(const char *path, const char *header, const void *data,
                    size_t data_len) {
  size_t hl = strlen(header), i;
  unsigned char *buf = (unsigned char *)malloc(8 + hl + data_len + 1);
  int ok;
  if (buf == NULL) return 0;
  for (i = 0; i < 8; i++) buf[i] = (unsigned char)(((uint64_t)hl >> (8 * i)) & 0xFF);
  memcpy(buf + 8, header, hl);
  if (data_len > 0) memcpy(buf + 8 + hl, data, data_len);
  ok = write_file(path, buf, 8 + hl + data_len);
  free(buf);
  return ok;
}

static inline size_t count_dir_entries(const char *dir) {
  DIR *d = opendir(dir);
  struct dirent *e;
  size_t n = 0;
  if (d == NULL) return (size_t)-1;
  while ((e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) n++;
  }
  closedir(d);
  return n;
}

static inline dt_ndarray *make(dt_dtype dtype, const int64_t *dims, size_t ndim) {
  dt_ndarray *a = NULL;
  if (!CHECK_OK(dt_ndarray_create(&a, g_ctx, dtype, dims, ndim))) return NULL;
  return a;
}

/* Checks dtype, shape and bytes of arr. */
static inline void check_array(const dt_ndarray *arr, dt_dtype dtype,
                        const int64_t *dims, size_t ndim, const void *bytes,
                        size_t nbytes, int line) {
  dt_dtype dt = (dt_dtype)99;
  size_t nd = 99, nb = 99, i;
  int64_t got_dims[DT_MAX_NDIM];
  unsigned char *buf = (unsigned char *)malloc(nbytes + 1);
  int ok = arr != NULL && buf != NULL;
  ok = ok && dt_ndarray_dtype(&dt, arr) == DT_OK && dt == dtype;
  ok = ok && dt_ndarray_ndim(&nd, arr) == DT_OK && nd == ndim;
  ok = ok && dt_ndarray_shape(got_dims, DT_MAX_NDIM, arr) == DT_OK;
  for (i = 0; ok && i < ndim; i++) ok = got_dims[i] == dims[i];
  ok = ok && dt_ndarray_nbytes(&nb, arr) == DT_OK && nb == nbytes;
  ok = ok && dt_ndarray_copy_to_host(buf, nbytes, arr) == DT_OK;
  ok = ok && (nbytes == 0 || memcmp(buf, bytes, nbytes) == 0);
  if (!capi_check_impl(ok, __FILE__, line,
                       "array has the expected dtype, shape and bytes")) {
    fprintf(stderr, "  dtype %d (want %d), ndim %u (want %u), nbytes %u "
            "(want %u): %s\n", (int)dt, (int)dtype, (unsigned)nd,
            (unsigned)ndim, (unsigned)nb, (unsigned)nbytes, dt_last_error());
  }
  free(buf);
}

/* ------------------------------------------------------------------------ */

static const float k_w[6] = {1.0f, -2.5f, 3.25f, 0.0f, 1e-3f, -7.0f};
static const double k_scalar = 3.25;

/* The groups of tests in capi_safetensors/, called by main in capi_safetensors_test.c. */
void test_save_errors(void);
void test_load_errors(void);

#endif
