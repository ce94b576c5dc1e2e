/*
 * Saving and loading named arrays in safetensors files.
 */
#define _POSIX_C_SOURCE 200809L

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "capi_check.h"

static dt_context *g_ctx;
static char g_dir[512];

static void path_in_dir(char *out, size_t cap, const char *name) {
  snprintf(out, cap, "%s/%s", g_dir, name);
}

static int file_exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}

/* Reads a whole file; the caller frees. */
static unsigned char *read_file(const char *path, size_t *len) {
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

static int write_file(const char *path, const void *data, size_t len) {
  FILE *f = fopen(path, "wb");
  int ok;
  if (f == NULL) return 0;
  ok = fwrite(data, 1, len, f) == len;
  return fclose(f) == 0 && ok;
}

/* Writes a safetensors file from a header text and raw data. */
static int write_st(const char *path, const char *header, const void *data,
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

static size_t count_dir_entries(const char *dir) {
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

static dt_ndarray *make(dt_dtype dtype, const int64_t *dims, size_t ndim) {
  dt_ndarray *a = NULL;
  if (!CHECK_OK(dt_ndarray_create(&a, g_ctx, dtype, dims, ndim))) return NULL;
  return a;
}

/* Checks dtype, shape and bytes of arr. */
static void check_array(const dt_ndarray *arr, dt_dtype dtype,
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

static void test_round_trip(void) {
  const int64_t dw[2] = {2, 3}, de[2] = {0, 4};
  dt_ndarray *w = make(DT_FLOAT32, dw, 2);
  dt_ndarray *s = make(DT_FLOAT64, NULL, 0);
  dt_ndarray *e = make(DT_INT64, de, 2);
  const char *names[3] = {"weight", "scalar", "empty"};
  const dt_ndarray *arrays[3];
  char path[600];
  dt_named_arrays *list = NULL;
  size_t count = 99, i, j, file_len = 0;
  unsigned char *file;

  arrays[0] = w;
  arrays[1] = s;
  arrays[2] = e;
  CHECK_OK(dt_ndarray_copy_from_host(w, k_w, sizeof k_w));
  CHECK_OK(dt_ndarray_copy_from_host(s, &k_scalar, sizeof k_scalar));
  path_in_dir(path, sizeof path, "good.safetensors");
  CHECK_OK(dt_ndarray_save(path, names, arrays, 3));
  /* Written to a temporary name and renamed: only the file remains. */
  CHECK_EQ_U64(count_dir_entries(g_dir), 1);

  /* The file layout: u64 LE header length, a JSON object, then exactly the
   * data bytes (safetensors allows no holes). */
  file = read_file(path, &file_len);
  CHECK(file != NULL && file_len >= 10);
  if (file != NULL && file_len >= 10) {
    uint64_t hl = 0;
    char *header;
    for (i = 0; i < 8; i++) hl |= (uint64_t)file[i] << (8 * i);
    CHECK(hl <= file_len - 8);
    CHECK_EQ_U64(file_len, 8 + hl + sizeof k_w + sizeof k_scalar);
    if (hl <= file_len - 8) {
      header = (char *)malloc((size_t)hl + 1);
      memcpy(header, file + 8, (size_t)hl);
      header[hl] = '\0';
      CHECK(header[0] == '{');
      CHECK(strrchr(header, '}') != NULL);
      CHECK(strstr(header, "\"weight\"") != NULL);
      CHECK(strstr(header, "\"scalar\"") != NULL);
      CHECK(strstr(header, "\"empty\"") != NULL);
      CHECK(strstr(header, "\"F32\"") != NULL);
      CHECK(strstr(header, "\"F64\"") != NULL);
      CHECK(strstr(header, "\"I64\"") != NULL);
      CHECK(strstr(header, "data_offsets") != NULL);
      free(header);
    }
  }
  free(file);

  CHECK_OK(dt_named_arrays_load(&list, g_ctx, path));
  CHECK_OK(dt_named_arrays_count(&count, list));
  CHECK_EQ_U64(count, 3);
  /* Names: each saved name once (the header does not fix the order). */
  {
    int seen[3] = {0, 0, 0};
    for (i = 0; i < count && i < 3; i++) {
      const char *name = NULL;
      dt_ndarray *got = NULL;
      CHECK_OK(dt_named_arrays_name(&name, list, i));
      if (name == NULL) continue;
      for (j = 0; j < 3; j++) {
        if (strcmp(name, names[j]) == 0) seen[j]++;
      }
      /* get(i) is the entry named name(i). */
      CHECK_OK(dt_named_arrays_get(&got, list, i));
      if (strcmp(name, "weight") == 0)
        check_array(got, DT_FLOAT32, dw, 2, k_w, sizeof k_w, __LINE__);
      if (strcmp(name, "scalar") == 0)
        check_array(got, DT_FLOAT64, NULL, 0, &k_scalar, 8, __LINE__);
      if (strcmp(name, "empty") == 0)
        check_array(got, DT_INT64, de, 2, NULL, 0, __LINE__);
      dt_ndarray_free(got);
    }
    CHECK(seen[0] == 1 && seen[1] == 1 && seen[2] == 1);
  }
  /* Find by name. */
  {
    dt_ndarray *fw = NULL, *fs = NULL, *fe = NULL, *miss;
    dt_context *c = NULL;
    dt_device_type t = (dt_device_type)0;
    CHECK_OK(dt_named_arrays_find(&fw, list, "weight"));
    CHECK_OK(dt_named_arrays_find(&fs, list, "scalar"));
    CHECK_OK(dt_named_arrays_find(&fe, list, "empty"));
    check_array(fw, DT_FLOAT32, dw, 2, k_w, sizeof k_w, __LINE__);
    check_array(fs, DT_FLOAT64, NULL, 0, &k_scalar, 8, __LINE__);
    check_array(fe, DT_INT64, de, 2, NULL, 0, __LINE__);
    CHECK_OK(dt_ndarray_context(&c, fw));
    CHECK_OK(dt_context_device_type(&t, c));
    CHECK_EQ_I64(t, DT_DEVICE_CPU);
    dt_context_free(c);
    miss = CAPI_SENTINEL(dt_ndarray);
    CHECK_STATUS(dt_named_arrays_find(&miss, list, "missing"),
                 DT_ERR_NOT_FOUND);
    CHECK(miss == CAPI_SENTINEL(dt_ndarray));
    miss = CAPI_SENTINEL(dt_ndarray);
    CHECK_STATUS(dt_named_arrays_find(&miss, list, "weigh"),
                 DT_ERR_NOT_FOUND);
    CHECK(miss == CAPI_SENTINEL(dt_ndarray));
    miss = CAPI_SENTINEL(dt_ndarray);
    CHECK_STATUS(dt_named_arrays_find(&miss, list, "WEIGHT"),
                 DT_ERR_NOT_FOUND);
    CHECK(miss == CAPI_SENTINEL(dt_ndarray));
    miss = CAPI_SENTINEL(dt_ndarray);
    CHECK_STATUS(dt_named_arrays_find(&miss, list, NULL),
                 DT_ERR_INVALID_ARGUMENT);
    CHECK(miss == CAPI_SENTINEL(dt_ndarray));
    CHECK_STATUS(dt_named_arrays_find(NULL, list, "weight"),
                 DT_ERR_INVALID_ARGUMENT);
    miss = CAPI_SENTINEL(dt_ndarray);
    CHECK_STATUS(dt_named_arrays_find(&miss, NULL, "weight"),
                 DT_ERR_INVALID_ARGUMENT);
    CHECK(miss == CAPI_SENTINEL(dt_ndarray));

    /* Two handles to one entry share storage. */
    {
      dt_ndarray *again = NULL;
      float v[6];
      CHECK_OK(dt_named_arrays_find(&again, list, "weight"));
      CHECK(again != fw);
      CHECK_OK(dt_ndarray_fill(again, 4.0));
      CHECK_OK(dt_ndarray_copy_to_host(v, sizeof v, fw));
      CHECK_EQ_DBL(v[0], 4.0);
      CHECK_EQ_DBL(v[5], 4.0);
      CHECK_OK(dt_ndarray_copy_from_host(again, k_w, sizeof k_w));
      dt_ndarray_free(again);
    }

    /* Index errors and NULLs. */
    {
      const char *name = "untouched";
      dt_ndarray *g = CAPI_SENTINEL(dt_ndarray);
      size_t n = 99;
      CHECK_STATUS(dt_named_arrays_get(&g, list, 3), DT_ERR_INVALID_ARGUMENT);
      CHECK(g == CAPI_SENTINEL(dt_ndarray));
      CHECK_STATUS(dt_named_arrays_get(&g, list, (size_t)-1),
                   DT_ERR_INVALID_ARGUMENT);
      CHECK(g == CAPI_SENTINEL(dt_ndarray));
      CHECK_STATUS(dt_named_arrays_get(NULL, list, 0),
                   DT_ERR_INVALID_ARGUMENT);
      CHECK_STATUS(dt_named_arrays_get(&g, NULL, 0), DT_ERR_INVALID_ARGUMENT);
      CHECK(g == CAPI_SENTINEL(dt_ndarray));
      CHECK_STATUS(dt_named_arrays_name(&name, list, 3),
                   DT_ERR_INVALID_ARGUMENT);
      CHECK_STREQ(name, "untouched");
      CHECK_STATUS(dt_named_arrays_name(NULL, list, 0),
                   DT_ERR_INVALID_ARGUMENT);
      CHECK_STATUS(dt_named_arrays_name(&name, NULL, 0),
                   DT_ERR_INVALID_ARGUMENT);
      CHECK_STREQ(name, "untouched");
      CHECK_STATUS(dt_named_arrays_count(NULL, list), DT_ERR_INVALID_ARGUMENT);
      CHECK_STATUS(dt_named_arrays_count(&n, NULL), DT_ERR_INVALID_ARGUMENT);
      CHECK_EQ_U64(n, 99);
    }

    /* A name stays valid (and unchanged) while the list lives, across
     * other calls. */
    {
      const char *n0 = NULL;
      char copy[64];
      dt_ndarray *tmp = NULL;
      CHECK_OK(dt_named_arrays_name(&n0, list, 0));
      if (n0 != NULL) {
        strncpy(copy, n0, sizeof copy - 1);
        copy[sizeof copy - 1] = '\0';
        CHECK_OK(dt_named_arrays_get(&tmp, list, 1));
        dt_ndarray_free(tmp);
        CHECK_STATUS(dt_named_arrays_find(&tmp, list, "nope"),
                     DT_ERR_NOT_FOUND);
        CHECK_STREQ(n0, copy);
      }
    }

    /* Arrays obtained from the list outlive it. */
    dt_named_arrays_free(list);
    list = NULL;
    check_array(fw, DT_FLOAT32, dw, 2, k_w, sizeof k_w, __LINE__);
    check_array(fs, DT_FLOAT64, NULL, 0, &k_scalar, 8, __LINE__);
    check_array(fe, DT_INT64, de, 2, NULL, 0, __LINE__);
    CHECK_OK(dt_ndarray_scale(fw, 2.0));
    dt_ndarray_free(fw);
    dt_ndarray_free(fs);
    dt_ndarray_free(fe);
  }

  /* Loaded data is a copy: changing the source arrays does not matter. */
  CHECK_OK(dt_ndarray_fill(w, 0.0));
  list = NULL;
  CHECK_OK(dt_named_arrays_load(&list, g_ctx, path));
  {
    dt_ndarray *fw = NULL;
    CHECK_OK(dt_named_arrays_find(&fw, list, "weight"));
    check_array(fw, DT_FLOAT32, dw, 2, k_w, sizeof k_w, __LINE__);
    dt_ndarray_free(fw);
  }
  dt_named_arrays_free(list);

  /* Overwriting an existing file. */
  {
    const char *one[1] = {"only"};
    const dt_ndarray *arr1[1];
    dt_ndarray *got = NULL;
    arr1[0] = s;
    CHECK_OK(dt_ndarray_save(path, one, arr1, 1));
    list = NULL;
    CHECK_OK(dt_named_arrays_load(&list, g_ctx, path));
    count = 0;
    CHECK_OK(dt_named_arrays_count(&count, list));
    CHECK_EQ_U64(count, 1);
    CHECK_OK(dt_named_arrays_find(&got, list, "only"));
    check_array(got, DT_FLOAT64, NULL, 0, &k_scalar, 8, __LINE__);
    dt_ndarray_free(got);
    dt_named_arrays_free(list);
  }
  CHECK_EQ_U64(count_dir_entries(g_dir), 1);

  unlink(path);
  dt_ndarray_free(w);
  dt_ndarray_free(s);
  dt_ndarray_free(e);
}

static void test_all_dtypes_and_names(void) {
  static const dt_dtype dts[7] = {DT_FLOAT32, DT_FLOAT16, DT_BFLOAT16,
                                  DT_FLOAT64, DT_INT32,   DT_INT64,
                                  DT_UINT8};
  /* JSON needs escapes for the quote, backslash and newline. */
  const char *names[7] = {"a.f32",       "quo\"te",  "back\\slash",
                          "new\nline",   "uni\xc3\xa9", "layer.0/w",
                          "u8 with space"};
  const int64_t dims[7][3] = {{3, 1, 1}, {2, 2, 1}, {5, 1, 1}, {1, 1, 1},
                              {2, 1, 3}, {4, 1, 1}, {7, 1, 1}};
  const size_t ndims[7] = {1, 2, 1, 3, 3, 1, 1};
  dt_ndarray *arrs[7];
  const dt_ndarray *carrs[7];
  unsigned char data[7][64];
  size_t nbytes[7];
  char path[600];
  dt_named_arrays *list = NULL;
  size_t i, k, count = 0;

  for (k = 0; k < 7; k++) {
    arrs[k] = make(dts[k], dims[k], ndims[k]);
    carrs[k] = arrs[k];
    nbytes[k] = 0;
    dt_ndarray_nbytes(&nbytes[k], arrs[k]);
    /* Any bytes, NaN and subnormal patterns included: stored verbatim. */
    for (i = 0; i < nbytes[k] && i < 64; i++)
      data[k][i] = (unsigned char)(0xF0u ^ (i * 37u + k * 11u));
    CHECK_OK(dt_ndarray_copy_from_host(arrs[k], data[k], nbytes[k]));
  }
  path_in_dir(path, sizeof path, "all.safetensors");
  CHECK_OK(dt_ndarray_save(path, names, carrs, 7));
  CHECK_OK(dt_named_arrays_load(&list, g_ctx, path));
  CHECK_OK(dt_named_arrays_count(&count, list));
  CHECK_EQ_U64(count, 7);
  for (k = 0; k < 7; k++) {
    dt_ndarray *got = NULL;
    if (!CHECK_OK(dt_named_arrays_find(&got, list, names[k]))) {
      fprintf(stderr, "  name \"%s\"\n", names[k]);
      continue;
    }
    check_array(got, dts[k], dims[k], ndims[k], data[k], nbytes[k], __LINE__);
    dt_ndarray_free(got);
  }
  dt_named_arrays_free(list);
  unlink(path);
  for (k = 0; k < 7; k++) dt_ndarray_free(arrs[k]);
}

static void test_save_view(void) {
  const int64_t d[2] = {4, 2}, e[2] = {2, 2};
  const int32_t v[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  dt_ndarray *a = make(DT_INT32, d, 2), *s = NULL, *got = NULL;
  const char *names[1] = {"rows"};
  const dt_ndarray *arrays[1];
  dt_named_arrays *list = NULL;
  char path[600];
  path_in_dir(path, sizeof path, "view.safetensors");
  CHECK_OK(dt_ndarray_copy_from_host(a, v, sizeof v));
  CHECK_OK(dt_ndarray_slice(&s, a, 1, 3));
  arrays[0] = s;
  CHECK_OK(dt_ndarray_save(path, names, arrays, 1));
  CHECK_OK(dt_named_arrays_load(&list, g_ctx, path));
  CHECK_OK(dt_named_arrays_find(&got, list, "rows"));
  check_array(got, DT_INT32, e, 2, v + 2, 4 * sizeof(int32_t), __LINE__);
  dt_ndarray_free(got);
  dt_named_arrays_free(list);
  unlink(path);
  dt_ndarray_free(s);
  dt_ndarray_free(a);
}

static void test_empty_file(void) {
  char path[600];
  dt_named_arrays *list = NULL;
  size_t count = 99;
  path_in_dir(path, sizeof path, "none.safetensors");
  CHECK_OK(dt_ndarray_save(path, NULL, NULL, 0));
  CHECK_OK(dt_named_arrays_load(&list, g_ctx, path));
  CHECK_OK(dt_named_arrays_count(&count, list));
  CHECK_EQ_U64(count, 0);
  {
    dt_ndarray *g = CAPI_SENTINEL(dt_ndarray);
    CHECK_STATUS(dt_named_arrays_get(&g, list, 0), DT_ERR_INVALID_ARGUMENT);
    CHECK(g == CAPI_SENTINEL(dt_ndarray));
    CHECK_STATUS(dt_named_arrays_find(&g, list, "x"), DT_ERR_NOT_FOUND);
    CHECK(g == CAPI_SENTINEL(dt_ndarray));
  }
  dt_named_arrays_free(list);
  unlink(path);
}

static void test_save_errors(void) {
  const int64_t d[1] = {2};
  dt_ndarray *a = make(DT_FLOAT32, d, 1), *b = make(DT_UINT8, d, 1);
  const dt_ndarray *arrays[2];
  const dt_ndarray *with_null[2];
  const char *names[2] = {"a", "b"};
  const char *dup[2] = {"same", "same"};
  const char *empty[2] = {"a", ""};
  const char *null_name[2] = {"a", NULL};
  const char *reserved[2] = {"a", "__metadata__"};
  char path[600], bad[700], sub[600];

  arrays[0] = a;
  arrays[1] = b;
  with_null[0] = a;
  with_null[1] = NULL;
  path_in_dir(path, sizeof path, "err.safetensors");

  CHECK_STATUS(dt_ndarray_save(NULL, names, arrays, 2),
               DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_ndarray_save(path, NULL, arrays, 2),
               DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_ndarray_save(path, names, NULL, 2),
               DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_ndarray_save(path, names, with_null, 2),
               DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_ndarray_save(path, null_name, arrays, 2),
               DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_ndarray_save(path, empty, arrays, 2),
               DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_ndarray_save(path, dup, arrays, 2),
               DT_ERR_INVALID_ARGUMENT);
  /* safetensors reserves "__metadata__" for the metadata map: an entry
   * under that name could not be read back. */
  CHECK_STATUS(dt_ndarray_save(path, reserved, arrays, 2),
               DT_ERR_INVALID_ARGUMENT);
  CHECK(!file_exists(path)); /* nothing written by a failed save */
  CHECK_EQ_U64(count_dir_entries(g_dir), 0);

  /* A directory that does not exist. */
  snprintf(bad, sizeof bad, "%s/no/such/dir/x.safetensors", g_dir);
  CHECK_STATUS(dt_ndarray_save(bad, names, arrays, 2), DT_ERR_IO);

  /* The path names an existing directory: the final rename fails, and the
   * temporary file must not be left behind. */
  path_in_dir(sub, sizeof sub, "subdir");
  CHECK(mkdir(sub, 0700) == 0);
  CHECK_STATUS(dt_ndarray_save(sub, names, arrays, 2), DT_ERR_IO);
  CHECK_EQ_U64(count_dir_entries(g_dir), 1);
  CHECK_EQ_U64(count_dir_entries(sub), 0);

  /* Loading a directory is an I/O error, not "not found". */
  {
    dt_named_arrays *list = CAPI_SENTINEL(dt_named_arrays);
    CHECK_STATUS(dt_named_arrays_load(&list, g_ctx, sub), DT_ERR_IO);
    CHECK(list == CAPI_SENTINEL(dt_named_arrays));
  }
  rmdir(sub);

  /* A freed array in the list. */
  {
    dt_ndarray *gone = make(DT_FLOAT32, d, 1);
    const dt_ndarray *with_freed[2];
    dt_ndarray_free(gone);
    with_freed[0] = a;
    with_freed[1] = gone;
    CHECK_STATUS(dt_ndarray_save(path, names, with_freed, 2),
                 DT_ERR_INVALID_HANDLE);
    CHECK(!file_exists(path));
  }
  dt_ndarray_free(a);
  dt_ndarray_free(b);
}

static void expect_load_fails2(const char *path, dt_status expect,
                               dt_status alt, int line) {
  dt_named_arrays *list = CAPI_SENTINEL(dt_named_arrays);
  char text[800];
  snprintf(text, sizeof text, "dt_named_arrays_load(&list, ctx, \"%s\")",
           path);
  capi_check_status2_impl(dt_named_arrays_load(&list, g_ctx, path), expect,
                          alt, __FILE__, line, text);
  if (!capi_check_impl(list == CAPI_SENTINEL(dt_named_arrays), __FILE__, line,
                       "out-parameter list left untouched")) {
    if (list != NULL) dt_named_arrays_free(list);
  }
}

static void expect_load_fails(const char *path, dt_status expect, int line) {
  expect_load_fails2(path, expect, expect, line);
}

static void test_load_errors(void) {
  char path[600], good[600];
  dt_named_arrays *list;
  const float two[2] = {1.0f, 2.0f};

  path_in_dir(path, sizeof path, "bad.safetensors");
  CHECK_STATUS(dt_named_arrays_load(NULL, g_ctx, path),
               DT_ERR_INVALID_ARGUMENT);
  list = CAPI_SENTINEL(dt_named_arrays);
  CHECK_STATUS(dt_named_arrays_load(&list, NULL, path),
               DT_ERR_INVALID_ARGUMENT);
  CHECK(list == CAPI_SENTINEL(dt_named_arrays));
  CHECK_STATUS(dt_named_arrays_load(&list, g_ctx, NULL),
               DT_ERR_INVALID_ARGUMENT);
  CHECK(list == CAPI_SENTINEL(dt_named_arrays));

  /* Missing file. */
  expect_load_fails(path, DT_ERR_NOT_FOUND, __LINE__);

  /* 20 garbage bytes (fixed pseudo-random sequence). */
  {
    unsigned char junk[20];
    uint32_t x = 0x12345678u;
    size_t i;
    for (i = 0; i < sizeof junk; i++) {
      x = x * 1664525u + 1013904223u;
      junk[i] = (unsigned char)(x >> 24);
    }
    CHECK(write_file(path, junk, sizeof junk));
    expect_load_fails(path, DT_ERR_IO, __LINE__);
  }
  /* Empty file, and one shorter than the length prefix. */
  CHECK(write_file(path, "", 0));
  expect_load_fails(path, DT_ERR_IO, __LINE__);
  CHECK(write_file(path, "\x02\0\0\0", 4));
  expect_load_fails(path, DT_ERR_IO, __LINE__);

  /* Truncated copy of a good file. */
  {
    const int64_t d[1] = {64};
    dt_ndarray *a = make(DT_FLOAT64, d, 1);
    const char *names[1] = {"x"};
    const dt_ndarray *arrays[1];
    unsigned char *bytes;
    size_t len = 0;
    arrays[0] = a;
    path_in_dir(good, sizeof good, "good2.safetensors");
    CHECK_OK(dt_ndarray_fill(a, 1.25));
    CHECK_OK(dt_ndarray_save(good, names, arrays, 1));
    bytes = read_file(good, &len);
    CHECK(bytes != NULL && len > 8);
    if (bytes != NULL) {
      CHECK(write_file(path, bytes, len / 2));
      expect_load_fails(path, DT_ERR_IO, __LINE__);
      /* Only the data's last byte missing. */
      CHECK(write_file(path, bytes, len - 1));
      expect_load_fails(path, DT_ERR_IO, __LINE__);
      /* Cut inside the header. */
      CHECK(write_file(path, bytes, 12));
      expect_load_fails(path, DT_ERR_IO, __LINE__);
      free(bytes);
    }
    unlink(good);
    dt_ndarray_free(a);
  }

  /* Header length beyond the file. */
  {
    unsigned char buf[10] = {0xE8, 0x03, 0, 0, 0, 0, 0, 0, '{', '}'};
    CHECK(write_file(path, buf, sizeof buf));
    expect_load_fails(path, DT_ERR_IO, __LINE__);
    /* A huge length must not be trusted for an allocation either. */
    memset(buf, 0xFF, 8);
    CHECK(write_file(path, buf, sizeof buf));
    expect_load_fails(path, DT_ERR_IO, __LINE__);
  }

  /* Malformed headers. */
  CHECK(write_st(path, "", NULL, 0));
  expect_load_fails(path, DT_ERR_IO, __LINE__);
  CHECK(write_st(path, "hello", NULL, 0));
  expect_load_fails(path, DT_ERR_IO, __LINE__);
  CHECK(write_st(path, "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],", two, 8));
  expect_load_fails(path, DT_ERR_IO, __LINE__);
  CHECK(write_st(path, "[1,2,3]", NULL, 0));
  expect_load_fails(path, DT_ERR_IO, __LINE__);
  /* Data shorter than the offsets say. */
  CHECK(write_st(path,
                 "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],"
                 "\"data_offsets\":[0,8]}}",
                 two, 4));
  expect_load_fails(path, DT_ERR_IO, __LINE__);
  /* Offsets that disagree with shape x dtype. */
  CHECK(write_st(path,
                 "{\"a\":{\"dtype\":\"F32\",\"shape\":[3],"
                 "\"data_offsets\":[0,8]}}",
                 two, 8));
  expect_load_fails(path, DT_ERR_IO, __LINE__);
  /* End before begin. */
  CHECK(write_st(path,
                 "{\"a\":{\"dtype\":\"F32\",\"shape\":[0],"
                 "\"data_offsets\":[8,0]}}",
                 two, 8));
  expect_load_fails(path, DT_ERR_IO, __LINE__);
  /* Unknown dtype. */
  CHECK(write_st(path,
                 "{\"a\":{\"dtype\":\"Q7\",\"shape\":[2],"
                 "\"data_offsets\":[0,8]}}",
                 two, 8));
  expect_load_fails(path, DT_ERR_IO, __LINE__);
  /* Negative dim. */
  CHECK(write_st(path,
                 "{\"a\":{\"dtype\":\"F32\",\"shape\":[-2],"
                 "\"data_offsets\":[0,8]}}",
                 two, 8));
  expect_load_fails(path, DT_ERR_IO, __LINE__);
  /* Missing data_offsets. */
  CHECK(write_st(path, "{\"a\":{\"dtype\":\"F32\",\"shape\":[2]}}", two, 8));
  expect_load_fails(path, DT_ERR_IO, __LINE__);
  CHECK(write_st(path,
                 "{\"a\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,2],"
                 "\"data_offsets\":[0,8]}}",
                 two, 8));
  /* Valid safetensors beyond DT_MAX_NDIM: the header does not say
   * whether that is malformed (I/O) or unsupported. */
  expect_load_fails2(path, DT_ERR_IO, DT_ERR_NOT_SUPPORTED, __LINE__);
  /* Bytes after the last tensor: safetensors forbids holes. */
  CHECK(write_st(path,
                 "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],"
                 "\"data_offsets\":[0,4]}}",
                 two, 8));
  expect_load_fails(path, DT_ERR_IO, __LINE__);
  unlink(path);
}

/* A file written by hand, as other tools write it: __metadata__ is not an
 * entry, header padding spaces are allowed, entries keep header order. */
static void test_foreign_file(void) {
  char path[600];
  dt_named_arrays *list = NULL;
  size_t count = 0;
  const char *name = NULL;
  unsigned char data[12];
  const float fz[2] = {1.5f, -2.0f};
  const uint8_t ua[4] = {1, 2, 3, 250};
  const int64_t dz[1] = {2}, da[2] = {2, 2};
  dt_ndarray *got = NULL;

  memcpy(data, fz, 8);
  memcpy(data + 8, ua, 4);
  path_in_dir(path, sizeof path, "foreign.safetensors");
  CHECK(write_st(path,
                 "{\"__metadata__\":{\"format\":\"pt\"},"
                 "\"zeta\":{\"dtype\":\"F32\",\"shape\":[2],"
                 "\"data_offsets\":[0,8]},"
                 "\"alpha\":{\"dtype\":\"U8\",\"shape\":[2,2],"
                 "\"data_offsets\":[8,12]}}    ",
                 data, sizeof data));
  if (!CHECK_OK(dt_named_arrays_load(&list, g_ctx, path))) {
    unlink(path);
    return;
  }
  CHECK_OK(dt_named_arrays_count(&count, list));
  CHECK_EQ_U64(count, 2);
  CHECK_OK(dt_named_arrays_name(&name, list, 0));
  CHECK_STREQ(name, "zeta");
  CHECK_OK(dt_named_arrays_name(&name, list, 1));
  CHECK_STREQ(name, "alpha");
  CHECK_OK(dt_named_arrays_get(&got, list, 0));
  check_array(got, DT_FLOAT32, dz, 1, fz, 8, __LINE__);
  dt_ndarray_free(got);
  got = NULL;
  CHECK_OK(dt_named_arrays_get(&got, list, 1));
  check_array(got, DT_UINT8, da, 2, ua, 4, __LINE__);
  dt_ndarray_free(got);
  got = CAPI_SENTINEL(dt_ndarray);
  CHECK_STATUS(dt_named_arrays_find(&got, list, "__metadata__"),
               DT_ERR_NOT_FOUND);
  CHECK(got == CAPI_SENTINEL(dt_ndarray));
  dt_named_arrays_free(list);
  unlink(path);
}

static void test_free_list(void) {
  char path[600];
  dt_named_arrays *list = NULL;
  char before[512];
  size_t n = 5;
  path_in_dir(path, sizeof path, "free.safetensors");
  dt_named_arrays_free(NULL);
  CHECK_OK(dt_ndarray_save(path, NULL, NULL, 0));
  CHECK_OK(dt_named_arrays_load(&list, g_ctx, path));
  CHECK_STATUS(dt_named_arrays_count(NULL, list), DT_ERR_INVALID_ARGUMENT);
  strncpy(before, dt_last_error(), sizeof before - 1);
  before[sizeof before - 1] = '\0';
  dt_named_arrays_free(list);
  dt_named_arrays_free(list);
  CHECK_LAST_ERROR();
  CHECK(strcmp(dt_last_error(), before) != 0);
  CHECK_STATUS(dt_named_arrays_count(&n, list), DT_ERR_INVALID_HANDLE);
  CHECK_EQ_U64(n, 5);
  unlink(path);
}

int main(void) {
  const char *tmp = getenv("TMPDIR");
  int rc;
  if (tmp == NULL || tmp[0] == '\0') tmp = "/tmp";
  snprintf(g_dir, sizeof g_dir, "%s/capi_safetensors_%ld", tmp,
           (long)getpid());
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
  test_save_errors();
  test_round_trip();
  test_all_dtypes_and_names();
  test_save_view();
  test_empty_file();
  test_load_errors();
  test_foreign_file();
  test_free_list();
  dt_context_free(g_ctx);
  rc = capi_finish();
  if (count_dir_entries(g_dir) != 0) {
    fprintf(stderr, "files left in %s\n", g_dir);
  }
  if (rmdir(g_dir) != 0) fprintf(stderr, "cannot remove %s\n", g_dir);
  return rc;
}
