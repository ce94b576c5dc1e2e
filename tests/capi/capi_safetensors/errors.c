/*
 * Safetensors saves and loads that must fail: bad arguments, unwritable
 * paths, and malformed, truncated or inconsistent files.
 */
#include "capi_safetensors_test_util.h"

void test_save_errors(void) {
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

void test_load_errors(void) {
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
