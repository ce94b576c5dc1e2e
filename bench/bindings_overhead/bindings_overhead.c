/*
 * bindings_overhead (C baseline): the time of one small dt_kvstore_pushpull
 * (one key, `elements` float32 values, on a "local" kvstore) called straight
 * through the C API. The binding benchmarks (BindingsOverhead.java, go/) time
 * the same call through their language; run.sh prints the ratios.
 *
 *   bindings_overhead [--elements N] [--iterations N] [--repeats N]
 *
 * Prints the best (lowest) ns per call over the repeats and one JSON line:
 *   {"bench":"bindings_overhead","lang":"c","op":"kvstore_pushpull",
 *    "elements":256,"iterations":...,"repeats":...,"ns_per_call":...}
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dt_c_api.h"

#define CHECK(call)                                                      \
  do {                                                                   \
    dt_status status_ = (call);                                          \
    if (status_ != DT_OK) {                                              \
      fprintf(stderr, "error: %s: %s\n", dt_status_string(status_),      \
              dt_last_error());                                          \
      goto done;                                                         \
    }                                                                    \
  } while (0)

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static long parse_positive(const char *flag, const char *value) {
  char *end = NULL;
  long v = value != NULL ? strtol(value, &end, 10) : 0;
  if (value == NULL || *end != '\0' || v <= 0) {
    fprintf(stderr, "error: %s needs a positive integer\n", flag);
    exit(2);
  }
  return v;
}

int main(int argc, char **argv) {
  long elements = 256, iterations = 200000, repeats = 5;
  dt_context *ctx = NULL;
  dt_kvstore *kv = NULL;
  dt_ndarray *value = NULL, *out = NULL;
  const uint64_t key = 3;
  double best = -1.0;
  int rc = 1, i;
  long r, k;

  for (i = 1; i < argc; i += 2) {
    const char *value_text = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(argv[i], "--elements") == 0) elements = parse_positive(argv[i], value_text);
    else if (strcmp(argv[i], "--iterations") == 0) iterations = parse_positive(argv[i], value_text);
    else if (strcmp(argv[i], "--repeats") == 0) repeats = parse_positive(argv[i], value_text);
    else {
      fprintf(stderr, "usage: bindings_overhead [--elements N] [--iterations N] [--repeats N]\n");
      return 2;
    }
  }

  CHECK(dt_context_create(&ctx, DT_DEVICE_CPU, 0));
  CHECK(dt_kvstore_create(&kv, "local"));
  {
    int64_t dims[1];
    dims[0] = (int64_t)elements;
    CHECK(dt_ndarray_create(&value, ctx, DT_FLOAT32, dims, 1));
    CHECK(dt_ndarray_create(&out, ctx, DT_FLOAT32, dims, 1));
  }
  CHECK(dt_ndarray_fill(value, 1.0));
  CHECK(dt_kvstore_init(kv, &key, (const dt_ndarray *const *)&value, 1));

  /* Warm-up: caches, allocator, the store's first-use paths. */
  for (k = 0; k < iterations / 10 + 1; ++k) {
    CHECK(dt_kvstore_pushpull(kv, &key, (const dt_ndarray *const *)&value, &out, 1, 0));
  }
  for (r = 0; r < repeats; ++r) {
    double start = now_ns(), per_call;
    for (k = 0; k < iterations; ++k) {
      CHECK(dt_kvstore_pushpull(kv, &key, (const dt_ndarray *const *)&value, &out, 1, 0));
    }
    per_call = (now_ns() - start) / (double)iterations;
    if (best < 0 || per_call < best) best = per_call;
  }
  printf("c: kvstore_pushpull of %ld float32: %.1f ns per call (best of %ld x %ld)\n",
         elements, best, repeats, iterations);
  printf("{\"bench\":\"bindings_overhead\",\"lang\":\"c\",\"op\":\"kvstore_pushpull\",\"elements\":%ld,"
         "\"iterations\":%ld,\"repeats\":%ld,\"ns_per_call\":%.1f}\n",
         elements, iterations, repeats, best);
  rc = 0;

done:
  dt_ndarray_free(out);
  dt_ndarray_free(value);
  dt_kvstore_free(kv);
  dt_context_free(ctx);
  return rc;
}
