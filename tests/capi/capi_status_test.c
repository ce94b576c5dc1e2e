/*
 * Status strings, the last error, version, build information and dtypes.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "capi_check.h"

#define N_STATUS 21 /* DT_OK .. DT_ERR_UNAUTHENTICATED */

static void test_last_error_initially_empty(void) {
  /* Runs before any failing call on this thread. */
  const char *le = dt_last_error();
  CHECK(le != NULL);
  if (le != NULL) CHECK_STREQ(le, "");
}

static void test_status_strings(void) {
  const char *names[N_STATUS];
  int i, j;
  CHECK_EQ_I64(DT_ERR_UNAUTHENTICATED, N_STATUS - 1);
  for (i = 0; i < N_STATUS; i++) {
    names[i] = dt_status_string((dt_status)i);
    CHECK(names[i] != NULL);
    if (names[i] == NULL) names[i] = "";
    CHECK(names[i][0] != '\0');
  }
  for (i = 0; i < N_STATUS; i++) {
    for (j = i + 1; j < N_STATUS; j++) {
      if (!CHECK(strcmp(names[i], names[j]) != 0)) {
        fprintf(stderr, "  statuses %d and %d share \"%s\"\n", i, j,
                names[i]);
      }
    }
  }
  /* Unknown values: still never NULL. 20 and 31 are within the enum's
   * representable range; 1000 and -1 are outside it. */
  CHECK(dt_status_string((dt_status)20) != NULL);
  CHECK(dt_status_string((dt_status)31) != NULL);
  CHECK(dt_status_string((dt_status)1000) != NULL);
  CHECK(dt_status_string((dt_status)-1) != NULL);
  /* A status string is static text: it does not change between calls. */
  CHECK(dt_status_string(DT_ERR_IO) == dt_status_string(DT_ERR_IO) ||
        strcmp(dt_status_string(DT_ERR_IO), names[DT_ERR_IO]) == 0);
}

static void test_last_error_set_and_replaced(void) {
  char first[512];
  int32_t count;
  size_t size = 12345;
  CHECK_STATUS(dt_gpu_count(NULL), DT_ERR_INVALID_ARGUMENT);
  strncpy(first, dt_last_error(), sizeof first - 1);
  first[sizeof first - 1] = '\0';
  CHECK(first[0] != '\0');
  /* A successful call does not crash and leaves a valid string. */
  CHECK_OK(dt_gpu_count(&count));
  CHECK(dt_last_error() != NULL);
  /* A different failure records a different message. */
  CHECK_STATUS(dt_dtype_size(&size, (dt_dtype)7), DT_ERR_INVALID_ARGUMENT);
  CHECK(strcmp(dt_last_error(), first) != 0);
  CHECK_EQ_U64(size, 12345);
}

static void test_version(void) {
  char expected[64];
  const char *vs = dt_version_string();
  CHECK_EQ_U64(dt_version(), DT_VERSION_NUMBER);
  CHECK_EQ_I64(DT_VERSION_NUMBER, DT_VERSION_MAJOR * 10000 +
                                      DT_VERSION_MINOR * 100 +
                                      DT_VERSION_PATCH);
  snprintf(expected, sizeof expected, "%d.%d.%d", DT_VERSION_MAJOR,
           DT_VERSION_MINOR, DT_VERSION_PATCH);
  CHECK(vs != NULL);
  if (vs != NULL) CHECK_STREQ(vs, expected);
  CHECK(dt_version_string() == vs || strcmp(dt_version_string(), vs) == 0);
}

static int all_bytes(const unsigned char *p, size_t n, unsigned char v) {
  size_t i;
  for (i = 0; i < n; i++) {
    if (p[i] != v) return 0;
  }
  return 1;
}

static void test_build_info(void) {
  dt_build_info info;
  dt_build_info saved;
  int32_t gpus = -1;
  unsigned char *bytes = (unsigned char *)&info;
  size_t prefix;

  /* init: struct_size set, every other field zero. */
  memset(&info, 0xAB, sizeof info);
  CHECK_OK(dt_build_info_init(&info, sizeof info));
  CHECK_EQ_U64(info.struct_size, sizeof(dt_build_info));
  CHECK_EQ_I64(info.version_major, 0);
  CHECK_EQ_I64(info.version_minor, 0);
  CHECK_EQ_I64(info.version_patch, 0);
  CHECK_EQ_I64(info.with_cuda, 0);
  CHECK_EQ_I64(info.with_cudnn, 0);
  CHECK_EQ_I64(info.with_nccl, 0);
  CHECK_EQ_I64(info.with_onednn, 0);
  CHECK_EQ_I64(info.cuda_runtime_version, 0);
  CHECK_EQ_I64(info.cudnn_version, 0);
  CHECK_EQ_I64(info.nccl_version, 0);
  CHECK_EQ_I64(info.onednn_version, 0);
  CHECK_EQ_I64(info.gpu_count, 0);

  CHECK_STATUS(dt_build_info_get(NULL), DT_ERR_INVALID_ARGUMENT);

  /* struct_size 0: rejected, nothing written. */
  memset(&info, 0xCD, sizeof info);
  info.struct_size = 0;
  memcpy(&saved, &info, sizeof info);
  CHECK_STATUS(dt_build_info_get(&info), DT_ERR_INVALID_ARGUMENT);
  CHECK(memcmp(&saved, &info, sizeof info) == 0);

  /* An older caller's struct: only the fields before with_cudnn. */
  prefix = offsetof(dt_build_info, with_cudnn);
  memset(&info, 0xCD, sizeof info);
  info.struct_size = prefix;
  CHECK_OK(dt_build_info_get(&info));
  CHECK_EQ_U64(info.struct_size, prefix);
  CHECK_EQ_I64(info.version_major, DT_VERSION_MAJOR);
  CHECK_EQ_I64(info.version_minor, DT_VERSION_MINOR);
  CHECK_EQ_I64(info.version_patch, DT_VERSION_PATCH);
  CHECK(info.with_cuda == 0 || info.with_cuda == 1);
  CHECK(all_bytes(bytes + prefix, sizeof info - prefix, 0xCD));

  /* A size that cuts version_minor in half is no struct's: rejected, and
   * nothing written. */
  prefix = offsetof(dt_build_info, version_minor) + 2;
  memset(&info, 0xCD, sizeof info);
  info.struct_size = prefix;
  memcpy(&saved, &info, sizeof info);
  CHECK_STATUS(dt_build_info_get(&info), DT_ERR_INVALID_ARGUMENT);
  CHECK(memcmp(&saved, &info, sizeof info) == 0);

  /* Only struct_size itself: nothing else fits. */
  prefix = sizeof(size_t);
  memset(&info, 0xCD, sizeof info);
  info.struct_size = prefix;
  CHECK_OK(dt_build_info_get(&info));
  CHECK(all_bytes(bytes + prefix, sizeof info - prefix, 0xCD));

  /* Full struct. */
  memset(&info, 0xCD, sizeof info);
  dt_build_info_init(&info, sizeof info);
  CHECK_OK(dt_build_info_get(&info));
  CHECK_EQ_U64(info.struct_size, sizeof(dt_build_info));
  CHECK_EQ_I64(info.version_major, DT_VERSION_MAJOR);
  CHECK_EQ_I64(info.version_minor, DT_VERSION_MINOR);
  CHECK_EQ_I64(info.version_patch, DT_VERSION_PATCH);
  CHECK(info.with_cuda == 0 || info.with_cuda == 1);
  CHECK(info.with_cudnn == 0 || info.with_cudnn == 1);
  CHECK(info.with_nccl == 0 || info.with_nccl == 1);
  /* oneDNN is a required dependency: every build reports it. */
  CHECK_EQ_I64(info.with_onednn, 1);
  CHECK(info.onednn_version > 0);
  if (info.with_cuda == 0) {
    CHECK_EQ_I64(info.cuda_runtime_version, 0);
    CHECK_EQ_I64(info.gpu_count, 0);
  } else {
    CHECK(info.cuda_runtime_version > 0);
  }
  if (info.with_cudnn == 0) CHECK_EQ_I64(info.cudnn_version, 0);
  if (info.with_nccl == 0) CHECK_EQ_I64(info.nccl_version, 0);
  CHECK(info.gpu_count >= 0);
  CHECK_OK(dt_gpu_count(&gpus));
  CHECK_EQ_I64(info.gpu_count, gpus);
  printf("build: cuda=%d cudnn=%d nccl=%d onednn=%d cuda_rt=%d gpus=%d\n",
         (int)info.with_cuda, (int)info.with_cudnn, (int)info.with_nccl,
         (int)info.with_onednn, (int)info.cuda_runtime_version,
         (int)info.gpu_count);
}

static void test_gpu_count(void) {
  int32_t count = -7;
  CHECK_STATUS(dt_gpu_count(NULL), DT_ERR_INVALID_ARGUMENT);
  CHECK_OK(dt_gpu_count(&count));
  CHECK(count >= 0);
}

static void test_dtype_size(void) {
  static const struct {
    dt_dtype dtype;
    size_t size;
    const char *name;
  } table[] = {
      {DT_FLOAT32, 4, "F32"}, {DT_FLOAT16, 2, "F16"}, {DT_BFLOAT16, 2, "BF16"},
      {DT_FLOAT64, 8, "F64"}, {DT_INT32, 4, "I32"},   {DT_INT64, 8, "I64"},
      {DT_UINT8, 1, "U8"},
  };
  size_t i;
  size_t out;
  for (i = 0; i < sizeof table / sizeof table[0]; i++) {
    out = 0;
    CHECK_OK(dt_dtype_size(&out, table[i].dtype));
    CHECK_EQ_U64(out, table[i].size);
    CHECK_STREQ(dt_dtype_name(table[i].dtype), table[i].name);
    CHECK_STATUS(dt_dtype_size(NULL, table[i].dtype),
                 DT_ERR_INVALID_ARGUMENT);
  }
  CHECK_EQ_I64(DT_FLOAT32, 0);
  CHECK_EQ_I64(DT_UINT8, 6);
  out = 777;
  CHECK_STATUS(dt_dtype_size(&out, (dt_dtype)7), DT_ERR_INVALID_ARGUMENT);
  CHECK_EQ_U64(out, 777);
  CHECK_STATUS(dt_dtype_size(&out, (dt_dtype)99), DT_ERR_INVALID_ARGUMENT);
  CHECK_EQ_U64(out, 777);
  CHECK_STATUS(dt_dtype_size(&out, (dt_dtype)-1), DT_ERR_INVALID_ARGUMENT);
  CHECK_EQ_U64(out, 777);
  CHECK_STATUS(dt_dtype_size(NULL, (dt_dtype)99), DT_ERR_INVALID_ARGUMENT);
  CHECK_STREQ(dt_dtype_name((dt_dtype)7), "?");
  CHECK_STREQ(dt_dtype_name((dt_dtype)99), "?");
  CHECK_STREQ(dt_dtype_name((dt_dtype)-1), "?");
}

int main(void) {
  test_last_error_initially_empty();
  test_status_strings();
  test_last_error_set_and_replaced();
  test_version();
  test_build_info();
  test_gpu_count();
  test_dtype_size();
  return capi_finish();
}
