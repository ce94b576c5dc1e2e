/*
 * capi_check.h - a tiny check harness for the C API tests.
 *
 * Uses only the public header. Every check is counted; a failed check prints
 * file:line, the checked text and, for statuses, the got/expected names and
 * dt_last_error(). capi_finish() prints "N passed, N failed" and returns the
 * process exit code (0 when nothing failed).
 */
#ifndef CAPI_CHECK_H
#define CAPI_CHECK_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "dt_c_api.h"

typedef struct capi_counts {
  long passed;
  long failed;
} capi_counts;

/* One count per program, defined in capi_check.c: a test program built from
 * several files counts the checks of all of them. */
capi_counts *capi_counts_get(void);

static inline int capi_check_impl(int ok, const char *file, int line,
                                  const char *text) {
  if (ok) {
    capi_counts_get()->passed++;
  } else {
    capi_counts_get()->failed++;
    fprintf(stderr, "%s:%d: FAILED: %s\n", file, line, text);
    fflush(stderr);
  }
  return ok;
}

static inline const char *capi_status_name(dt_status s) {
  const char *name = dt_status_string(s);
  return name != NULL ? name : "(NULL status string)";
}

/* The dt_* function a call text starts with, copied into buf ("" if none). */
static inline void capi_call_name(char *buf, size_t cap, const char *text) {
  size_t n = 0;
  while (*text == ' ' || *text == '(') text++;
  if (strncmp(text, "dt_", 3) == 0) {
    while (n + 1 < cap && text[n] != '\0' && text[n] != '(' &&
           text[n] != ' ') {
      buf[n] = text[n];
      n++;
    }
  }
  buf[n] = '\0';
}

/* Checks got == expected. On a non-OK status also checks that
 * dt_last_error() is non-NULL and non-empty, and (counted separately,
 * as the header documents it) that it names the dt_* call. */
static inline int capi_check_status_impl(dt_status got, dt_status expected,
                                         const char *file, int line,
                                         const char *text) {
  char msg[1024];
  char fname[128];
  int msg_ok = 1;
  int ok;
  /* Copy first: the text is valid only until the next disttrain call. */
  const char *le = dt_last_error();
  if (le == NULL) {
    strcpy(msg, "(NULL)");
    msg_ok = 0;
  } else {
    strncpy(msg, le, sizeof msg - 1);
    msg[sizeof msg - 1] = '\0';
    if (got != DT_OK && msg[0] == '\0') msg_ok = 0;
  }
  ok = (got == expected) && msg_ok;
  if (ok) {
    capi_counts_get()->passed++;
  } else {
    capi_counts_get()->failed++;
    fprintf(stderr,
            "%s:%d: FAILED: %s\n  got %d (%s), expected %d (%s)\n"
            "  dt_last_error(): \"%s\"%s\n",
            file, line, text, (int)got, capi_status_name(got), (int)expected,
            capi_status_name(expected), msg,
            msg_ok ? "" : "  <- must be non-NULL and non-empty after an error");
    fflush(stderr);
  }
  if (got != DT_OK && le != NULL) {
    capi_call_name(fname, sizeof fname, text);
    if (fname[0] != '\0') {
      if (strstr(msg, fname) != NULL) {
        capi_counts_get()->passed++;
      } else {
        capi_counts_get()->failed++;
        fprintf(stderr,
                "%s:%d: FAILED: dt_last_error() after %s does not name the "
                "call \"%s\": \"%s\"\n",
                file, line, text, fname, msg);
        fflush(stderr);
        ok = 0;
      }
    }
  }
  return ok;
}

/* Accepts either of two statuses (only where the header allows both). */
static inline int capi_check_status2_impl(dt_status got, dt_status e1,
                                          dt_status e2, const char *file,
                                          int line, const char *text) {
  return capi_check_status_impl(got, got == e2 ? e2 : e1, file, line, text);
}

static inline int capi_check_i64_impl(int64_t got, int64_t expected,
                                      const char *file, int line,
                                      const char *text) {
  int ok = got == expected;
  capi_check_impl(ok, file, line, text);
  if (!ok) {
    fprintf(stderr, "  got %lld, expected %lld\n", (long long)got,
            (long long)expected);
  }
  return ok;
}

static inline int capi_check_u64_impl(uint64_t got, uint64_t expected,
                                      const char *file, int line,
                                      const char *text) {
  int ok = got == expected;
  capi_check_impl(ok, file, line, text);
  if (!ok) {
    fprintf(stderr, "  got %llu (0x%llx), expected %llu (0x%llx)\n",
            (unsigned long long)got, (unsigned long long)got,
            (unsigned long long)expected, (unsigned long long)expected);
  }
  return ok;
}

static inline int capi_check_dbl_impl(double got, double expected,
                                      const char *file, int line,
                                      const char *text) {
  int ok = got == expected;
  capi_check_impl(ok, file, line, text);
  if (!ok) fprintf(stderr, "  got %.17g, expected %.17g\n", got, expected);
  return ok;
}

static inline int capi_check_str_impl(const char *got, const char *expected,
                                      const char *file, int line,
                                      const char *text) {
  int ok = got != NULL && expected != NULL && strcmp(got, expected) == 0;
  capi_check_impl(ok, file, line, text);
  if (!ok) {
    fprintf(stderr, "  got \"%s\", expected \"%s\"\n",
            got != NULL ? got : "(NULL)",
            expected != NULL ? expected : "(NULL)");
  }
  return ok;
}

/* Checks that dt_last_error() is non-NULL and non-empty right now. */
static inline int capi_check_last_error_impl(const char *file, int line) {
  const char *le = dt_last_error();
  return capi_check_impl(le != NULL && le[0] != '\0', file, line,
                         "dt_last_error() non-NULL and non-empty");
}

/* Aligned storage whose address serves as a sentinel "untouched" handle. */
static inline void *capi_sentinel(void) {
  static union {
    long double ld;
    long long ll;
    void *p;
    double d;
  } storage;
  return &storage;
}

#define CAPI_SENTINEL(type) ((type *)capi_sentinel())

static inline int capi_finish(void) {
  capi_counts *c = capi_counts_get();
  printf("%ld passed, %ld failed\n", c->passed, c->failed);
  fflush(stdout);
  return c->failed == 0 ? 0 : 1;
}

/* For programs that test the GPU only: 0 to go on when a GPU is visible,
 * else the exit code to return at once: 77 (CTest's SKIP_RETURN_CODE) with
 * "SKIPPED: no GPU", or 1 when dt_gpu_count itself fails. */
static inline int capi_gpu_skip_code(void) {
  int32_t gpus = 0;
  if (dt_gpu_count(&gpus) != DT_OK) {
    fprintf(stderr, "dt_gpu_count failed: %s\n", dt_last_error());
    printf("0 passed, 1 failed\n");
    return 1;
  }
  if (gpus == 0) {
    printf("SKIPPED: no GPU\n");
    return 77;
  }
  return 0;
}

#define CHECK(cond) capi_check_impl((cond) ? 1 : 0, __FILE__, __LINE__, #cond)
#define CHECK_STATUS(call, expected) \
  capi_check_status_impl((call), (expected), __FILE__, __LINE__, #call)
#define CHECK_STATUS2(call, e1, e2) \
  capi_check_status2_impl((call), (e1), (e2), __FILE__, __LINE__, #call)
#define CHECK_OK(call) CHECK_STATUS(call, DT_OK)
#define CHECK_EQ_I64(got, expected)                                     \
  capi_check_i64_impl((int64_t)(got), (int64_t)(expected), __FILE__, \
                      __LINE__, #got " == " #expected)
#define CHECK_EQ_U64(got, expected)                                       \
  capi_check_u64_impl((uint64_t)(got), (uint64_t)(expected), __FILE__, \
                      __LINE__, #got " == " #expected)
#define CHECK_EQ_DBL(got, expected)                                   \
  capi_check_dbl_impl((double)(got), (double)(expected), __FILE__, \
                      __LINE__, #got " == " #expected)
#define CHECK_STREQ(got, expected) \
  capi_check_str_impl((got), (expected), __FILE__, __LINE__, \
                      #got " == " #expected)
#define CHECK_LAST_ERROR() capi_check_last_error_impl(__FILE__, __LINE__)

/* ctx's allocator statistics; every byte 0xEE first, so that a field the
 * call forgot to write shows. */
static inline dt_memory_stats capi_memory_stats_of(const dt_context *ctx) {
  dt_memory_stats s;
  memset(&s, 0xEE, sizeof s);
  CHECK_OK(dt_memory_stats_init(&s, sizeof s));
  CHECK_OK(dt_context_memory_stats(&s, ctx));
  return s;
}

/* Checks all four counts of ctx's allocator statistics at once. */
#define CHECK_MEMORY_STATS(ctx, in_use, peak, cached, allocs)   \
  do {                                                          \
    const dt_memory_stats capi_s_ = capi_memory_stats_of(ctx);  \
    CHECK_EQ_U64(capi_s_.in_use_bytes, (in_use));               \
    CHECK_EQ_U64(capi_s_.peak_bytes, (peak));                   \
    CHECK_EQ_U64(capi_s_.cached_bytes, (cached));               \
    CHECK_EQ_U64(capi_s_.allocations, (allocs));                \
  } while (0)

#endif /* CAPI_CHECK_H */
