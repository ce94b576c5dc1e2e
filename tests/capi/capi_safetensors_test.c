/*
 * Saving and loading named arrays in safetensors files: round trips, every
 * dtype, views, empty and foreign files. Bad saves and loads:
 * capi_safetensors/errors.c.
 */
#include "capi_safetensors/capi_safetensors_test_util.h"

/* Shared with the tests in capi_safetensors/. */
dt_context *g_ctx;
char g_dir[512];

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
