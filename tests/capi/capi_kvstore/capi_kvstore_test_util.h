/*
 * What the kvstore C API tests share: the CPU context, vectors made from
 * values, exact value checks and a local store.
 */
#ifndef CAPI_KVSTORE_TEST_UTIL_H
#define CAPI_KVSTORE_TEST_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../capi_check.h"

extern dt_context *g_ctx;

static inline int last_error_has(const char *text) {
  return strstr(dt_last_error(), text) != NULL;
}

/* A float32 array of n elements holding values (zeros when values is NULL). */
static inline dt_ndarray *vec(const float *values, int64_t n) {
  dt_ndarray *a = NULL;
  if (!CHECK_OK(dt_ndarray_create(&a, g_ctx, DT_FLOAT32, &n, 1))) return NULL;
  if (values != NULL) CHECK_OK(dt_ndarray_copy_from_host(a, values, (size_t)n * sizeof(float)));
  return a;
}

/* Checks that the float32 array a holds exactly the n values. */
#define CHECK_VALUES(a, expected, n) check_values(a, expected, n, __LINE__)
static inline void check_values(const dt_ndarray *a, const float *expected, size_t n, int line) {
  float got[16];
  size_t i;
  if (n > 16 || !CHECK_OK(dt_ndarray_copy_to_host(got, n * sizeof(float), a))) return;
  for (i = 0; i < n; i++) {
    if (!CHECK(got[i] == expected[i])) {
      fprintf(stderr, "  line %d: element %lu is %.9g, expected %.9g\n", line, (unsigned long)i,
              (double)got[i], (double)expected[i]);
    }
  }
}

static inline dt_kvstore *make_local(void) {
  dt_kvstore *kv = NULL;
  if (!CHECK_OK(dt_kvstore_create(&kv, "local"))) return NULL;
  return kv;
}

/* The groups of tests in capi_kvstore/, called by main in capi_kvstore_test.c. */
void test_string_keys(void);
void test_mismatches(void);
void test_empty_and_null(void);
void test_handles(void);

#endif
