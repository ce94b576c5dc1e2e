/*
 * Optimizer descriptions: every name, the typed setters (a rejected value
 * leaves the description as it was), the to_json buffer protocol, JSON round
 * trips, malformed JSON, and NULL, freed and mistyped handles.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capi_check.h"

static int last_error_has(const char *text) {
  return strstr(dt_last_error(), text) != NULL;
}

/* The description as a malloc'd string (NULL on failure, counted). */
static char *json_of(const dt_optimizer *opt) {
  size_t length = 0, length2 = 0;
  char *text;
  if (!CHECK_OK(dt_optimizer_to_json(NULL, 0, &length, opt))) return NULL;
  if (!CHECK(length > 1)) return NULL;
  text = (char *)malloc(length);
  if (text == NULL) return NULL;
  if (!CHECK_OK(dt_optimizer_to_json(text, length, &length2, opt))) {
    free(text);
    return NULL;
  }
  CHECK_EQ_U64(length2, length);
  return text;
}

/* The number after "key": in a JSON text; NAN when absent. */
static double json_number(const char *text, const char *key) {
  char quoted[64];
  const char *p;
  snprintf(quoted, sizeof quoted, "\"%s\"", key);
  p = strstr(text, quoted);
  if (p == NULL) return NAN;
  p += strlen(quoted);
  while (*p == ' ' || *p == ':') p++;
  return strtod(p, NULL);
}

static dt_optimizer *make_opt(const char *name) {
  dt_optimizer *opt = NULL;
  if (!CHECK_OK(dt_optimizer_create(&opt, name))) return NULL;
  return opt;
}

static void test_create(void) {
  static const char *names[4] = {"sgd", "nag", "adam", "adamw"};
  dt_optimizer *opt = CAPI_SENTINEL(dt_optimizer);
  size_t i;
  for (i = 0; i < 4; i++) {
    dt_optimizer *made = make_opt(names[i]);
    char quoted[16];
    char *text;
    if (made == NULL) continue;
    text = json_of(made);
    snprintf(quoted, sizeof quoted, "\"%s\"", names[i]);
    CHECK(text != NULL && strstr(text, "\"optimizer\"") != NULL && strstr(text, quoted) != NULL);
    free(text);
    dt_optimizer_free(made);
  }

  CHECK_STATUS(dt_optimizer_create(&opt, "rmsprop"), DT_ERR_INVALID_ARGUMENT);
  CHECK(last_error_has("rmsprop"));
  CHECK(last_error_has("sgd") && last_error_has("nag") && last_error_has("adam") &&
        last_error_has("adamw"));
  CHECK_STATUS(dt_optimizer_create(&opt, ""), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_optimizer_create(&opt, "SGD"), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_optimizer_create(&opt, NULL), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_optimizer_create(NULL, "sgd"), DT_ERR_INVALID_ARGUMENT);
  CHECK(opt == CAPI_SENTINEL(dt_optimizer));
  dt_optimizer_free(NULL);
}

/* A rejected setting returns `expected` and leaves the description as it was. */
#define CHECK_REJECTED(opt, call, expected)                               \
  do {                                                                    \
    char *before_ = json_of(opt);                                         \
    char *after_;                                                         \
    CHECK_STATUS(call, expected);                                         \
    after_ = json_of(opt);                                                \
    if (before_ != NULL && after_ != NULL) CHECK_STREQ(after_, before_); \
    free(before_);                                                        \
    free(after_);                                                         \
  } while (0)

static void test_setters(void) {
  dt_optimizer *sgd = make_opt("sgd");
  dt_optimizer *adam = make_opt("adamw");
  dt_optimizer *nag = make_opt("nag");
  const int64_t steps[2] = {10, 20};
  char *text;
  if (sgd == NULL || adam == NULL || nag == NULL) return;

  CHECK_OK(dt_optimizer_set_double(sgd, "learning_rate", 0.05));
  CHECK_OK(dt_optimizer_set_double(sgd, "momentum", 0.9));
  CHECK_OK(dt_optimizer_set_double(sgd, "wd", 1e-4));
  CHECK_OK(dt_optimizer_set_bool(sgd, "nesterov", 1));
  CHECK_OK(dt_optimizer_set_int(sgd, "warmup_steps", 10));
  CHECK_OK(dt_optimizer_set_double(sgd, "learning_rate", 1.0 / 3.0)); /* replaces */
  text = json_of(sgd);
  if (text != NULL) {
    CHECK_EQ_DBL(json_number(text, "learning_rate"), 1.0 / 3.0);
    CHECK_EQ_DBL(json_number(text, "momentum"), 0.9);
    CHECK_EQ_DBL(json_number(text, "wd"), 1e-4);
    CHECK_EQ_DBL(json_number(text, "warmup_steps"), 10.0);
    CHECK(strstr(text, "\"nesterov\"") != NULL && strstr(text, "true") != NULL);
  }
  free(text);
  /* Boundaries that are inside the documented ranges. */
  CHECK_OK(dt_optimizer_set_double(sgd, "momentum", 0.0));
  CHECK_OK(dt_optimizer_set_double(sgd, "learning_rate", 0.0));

  /* Unknown keys, wrong types, values out of range. */
  CHECK_REJECTED(sgd, dt_optimizer_set_double(sgd, "learning_rat", 0.1), DT_ERR_INVALID_ARGUMENT);
  CHECK(last_error_has("learning_rat"));
  CHECK_REJECTED(sgd, dt_optimizer_set_double(sgd, "beta1", 0.9), DT_ERR_INVALID_ARGUMENT);
  CHECK_REJECTED(sgd, dt_optimizer_set_string(sgd, "learning_rate", "fast"), DT_ERR_INVALID_ARGUMENT);
  CHECK(last_error_has("learning_rate"));
  CHECK_REJECTED(sgd, dt_optimizer_set_bool(sgd, "learning_rate", 1), DT_ERR_INVALID_ARGUMENT);
  CHECK_REJECTED(sgd, dt_optimizer_set_int_list(sgd, "learning_rate", steps, 2), DT_ERR_INVALID_ARGUMENT);
  CHECK_REJECTED(sgd, dt_optimizer_set_double(sgd, "nesterov", 1.0), DT_ERR_INVALID_ARGUMENT);
  CHECK_REJECTED(sgd, dt_optimizer_set_double(sgd, "warmup_steps", 2.5), DT_ERR_INVALID_ARGUMENT);
  CHECK_REJECTED(sgd, dt_optimizer_set_double(sgd, "learning_rate", -0.1), DT_ERR_INVALID_ARGUMENT);
  CHECK(last_error_has("learning_rate"));
  CHECK_REJECTED(sgd, dt_optimizer_set_double(sgd, "learning_rate", NAN), DT_ERR_INVALID_ARGUMENT);
  CHECK_REJECTED(sgd, dt_optimizer_set_double(sgd, "learning_rate", INFINITY), DT_ERR_INVALID_ARGUMENT);
  CHECK_REJECTED(sgd, dt_optimizer_set_double(sgd, "momentum", 1.5), DT_ERR_INVALID_ARGUMENT);
  CHECK(last_error_has("momentum"));
  CHECK_REJECTED(sgd, dt_optimizer_set_double(sgd, "momentum", 1.0), DT_ERR_INVALID_ARGUMENT);
  CHECK_REJECTED(sgd, dt_optimizer_set_double(sgd, "momentum", -0.1), DT_ERR_INVALID_ARGUMENT);
  CHECK_REJECTED(sgd, dt_optimizer_set_double(sgd, "wd", -1.0), DT_ERR_INVALID_ARGUMENT);
  CHECK_REJECTED(sgd, dt_optimizer_set_double(sgd, "rescale_grad", 0.0), DT_ERR_INVALID_ARGUMENT);
  CHECK_REJECTED(sgd, dt_optimizer_set_int(sgd, "warmup_steps", -1), DT_ERR_INVALID_ARGUMENT);
  CHECK_REJECTED(sgd, dt_optimizer_set_string(sgd, "lr_scheduler", "sawtooth"), DT_ERR_INVALID_ARGUMENT);
  CHECK(last_error_has("sawtooth"));
  /* A schedule key may come before its schedule; a description still
   * lacking the schedule is rejected where it is used (here: parsed whole). */
  {
    dt_optimizer *partial = NULL;
    dt_optimizer *reparsed = CAPI_SENTINEL(dt_optimizer);
    char json[512];
    size_t length = 0;
    CHECK_OK(dt_optimizer_create(&partial, "sgd"));
    CHECK_OK(dt_optimizer_set_int_list(partial, "steps", steps, 2));
    CHECK_OK(dt_optimizer_to_json(json, sizeof json, &length, partial));
    CHECK_STATUS(dt_optimizer_create_from_json(&reparsed, json), DT_ERR_INVALID_ARGUMENT);
    CHECK(reparsed == CAPI_SENTINEL(dt_optimizer));
    CHECK_OK(dt_optimizer_set_string(partial, "lr_scheduler", "multifactor"));
    CHECK_OK(dt_optimizer_to_json(json, sizeof json, &length, partial));
    CHECK_OK(dt_optimizer_create_from_json(&reparsed, json));
    dt_optimizer_free(reparsed);
    dt_optimizer_free(partial);
  }

  /* Adam's keys belong to adam/adamw, not to sgd or nag. */
  CHECK_OK(dt_optimizer_set_double(adam, "beta1", 0.95));
  CHECK_OK(dt_optimizer_set_double(adam, "beta2", 0.98));
  CHECK_OK(dt_optimizer_set_double(adam, "epsilon", 1e-6));
  CHECK_REJECTED(adam, dt_optimizer_set_double(adam, "beta1", 1.0), DT_ERR_INVALID_ARGUMENT);
  CHECK_REJECTED(adam, dt_optimizer_set_double(adam, "epsilon", 0.0), DT_ERR_INVALID_ARGUMENT);
  CHECK_REJECTED(adam, dt_optimizer_set_double(adam, "momentum", 0.9), DT_ERR_INVALID_ARGUMENT);
  CHECK_OK(dt_optimizer_set_double(nag, "momentum", 0.8));
  CHECK_REJECTED(nag, dt_optimizer_set_double(nag, "beta2", 0.9), DT_ERR_INVALID_ARGUMENT);

  /* NULL arguments. */
  CHECK_REJECTED(sgd, dt_optimizer_set_double(sgd, NULL, 0.1), DT_ERR_INVALID_ARGUMENT);
  CHECK_REJECTED(sgd, dt_optimizer_set_int(sgd, NULL, 1), DT_ERR_INVALID_ARGUMENT);
  CHECK_REJECTED(sgd, dt_optimizer_set_bool(sgd, NULL, 1), DT_ERR_INVALID_ARGUMENT);
  CHECK_REJECTED(sgd, dt_optimizer_set_string(sgd, NULL, "factor"), DT_ERR_INVALID_ARGUMENT);
  CHECK_REJECTED(sgd, dt_optimizer_set_string(sgd, "lr_scheduler", NULL), DT_ERR_INVALID_ARGUMENT);
  CHECK_REJECTED(sgd, dt_optimizer_set_int_list(sgd, NULL, steps, 2), DT_ERR_INVALID_ARGUMENT);
  CHECK_REJECTED(sgd, dt_optimizer_set_int_list(sgd, "steps", NULL, 2), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_optimizer_set_double(NULL, "learning_rate", 0.1), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_optimizer_set_int(NULL, "warmup_steps", 1), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_optimizer_set_bool(NULL, "nesterov", 1), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_optimizer_set_string(NULL, "lr_scheduler", "none"), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_optimizer_set_int_list(NULL, "steps", steps, 2), DT_ERR_INVALID_ARGUMENT);

  dt_optimizer_free(sgd);
  dt_optimizer_free(adam);
  dt_optimizer_free(nag);
}

/* The header lists the learning-rate schedules among the keys a description
 * holds; the typed setters, one key at a time, must be able to build one. */
static void test_schedule_setters(void) {
  static const int64_t steps[2] = {100, 200};
  dt_optimizer *factor = make_opt("sgd");
  dt_optimizer *multi = make_opt("sgd");
  char *text;
  if (factor == NULL || multi == NULL) return;

  /* Either order: the schedule first, or its keys first. */
  if (dt_optimizer_set_string(factor, "lr_scheduler", "factor") == DT_OK) {
    CHECK_OK(dt_optimizer_set_int(factor, "step", 100));
  } else {
    CHECK_OK(dt_optimizer_set_int(factor, "step", 100));
    CHECK_OK(dt_optimizer_set_string(factor, "lr_scheduler", "factor"));
  }
  text = json_of(factor);
  CHECK(text != NULL && strstr(text, "\"factor\"") != NULL);
  CHECK(text != NULL && json_number(text, "step") == 100.0);
  free(text);

  if (dt_optimizer_set_string(multi, "lr_scheduler", "multifactor") == DT_OK) {
    CHECK_OK(dt_optimizer_set_int_list(multi, "steps", steps, 2));
  } else {
    CHECK_OK(dt_optimizer_set_int_list(multi, "steps", steps, 2));
    CHECK_OK(dt_optimizer_set_string(multi, "lr_scheduler", "multifactor"));
  }
  text = json_of(multi);
  CHECK(text != NULL && strstr(text, "\"multifactor\"") != NULL);
  free(text);
  dt_optimizer_free(factor);
  dt_optimizer_free(multi);
}

static void test_to_json_buffer(void) {
  dt_optimizer *opt = make_opt("adam");
  size_t length = 0, length2 = 77;
  char small[8];
  char *text;
  if (opt == NULL) return;
  CHECK_OK(dt_optimizer_set_double(opt, "learning_rate", 0.001));
  CHECK_OK(dt_optimizer_to_json(NULL, 0, &length, opt));
  CHECK(length > 10);
  text = (char *)malloc(length + 8);
  if (text == NULL) return;

  memset(small, 'x', sizeof small);
  CHECK_STATUS(dt_optimizer_to_json(small, sizeof small, &length2, opt), DT_ERR_INVALID_ARGUMENT);
  CHECK(small[0] == 'x' && small[7] == 'x');
  CHECK_EQ_U64(length2, 77);
  memset(text, 'x', length + 8);
  CHECK_STATUS(dt_optimizer_to_json(text, length - 1, &length2, opt), DT_ERR_INVALID_ARGUMENT);
  CHECK(text[0] == 'x');
  CHECK_EQ_U64(length2, 77);
  CHECK_STATUS(dt_optimizer_to_json(NULL, 16, &length2, opt), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_optimizer_to_json(text, length, NULL, opt), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_optimizer_to_json(NULL, 0, NULL, opt), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_optimizer_to_json(text, length, &length2, NULL), DT_ERR_INVALID_ARGUMENT);
  CHECK_EQ_U64(length2, 77);

  /* Exactly the size asked for; nothing written past it. */
  CHECK_OK(dt_optimizer_to_json(text, length, &length2, opt));
  CHECK_EQ_U64(length2, length);
  CHECK_EQ_U64(strlen(text) + 1, length);
  CHECK(text[length] == 'x');
  CHECK_EQ_DBL(json_number(text, "learning_rate"), 0.001);
  /* A larger buffer works too and reports the same length. */
  CHECK_OK(dt_optimizer_to_json(text, length + 8, &length2, opt));
  CHECK_EQ_U64(length2, length);
  free(text);
  dt_optimizer_free(opt);
}

static void test_json_round_trip(void) {
  dt_optimizer *sgd = make_opt("sgd");
  dt_optimizer *adam = make_opt("adam");
  dt_optimizer *copy = CAPI_SENTINEL(dt_optimizer);
  dt_optimizer *sched = NULL;
  char *text, *text2;
  if (sgd == NULL || adam == NULL) return;
  CHECK_OK(dt_optimizer_set_double(sgd, "learning_rate", 0.1 + 0.2)); /* 17 digits to survive */
  CHECK_OK(dt_optimizer_set_double(sgd, "momentum", 0.9));
  CHECK_OK(dt_optimizer_set_bool(sgd, "nesterov", 0));
  CHECK_OK(dt_optimizer_set_int(sgd, "warmup_steps", 5));
  CHECK_OK(dt_optimizer_set_double(sgd, "warmup_begin_lr", 1e-3));
  CHECK_OK(dt_optimizer_set_double(sgd, "clip_gradient", 2.5));
  CHECK_OK(dt_optimizer_set_bool(sgd, "multi_precision", 1));
  CHECK_OK(dt_optimizer_set_string(sgd, "lr_scheduler", "none"));

  text = json_of(sgd);
  if (text != NULL && CHECK_OK(dt_optimizer_create_from_json(&copy, text))) {
    text2 = json_of(copy);
    if (text2 != NULL) {
      CHECK_STREQ(text2, text);
      CHECK_EQ_DBL(json_number(text2, "learning_rate"), 0.1 + 0.2);
    }
    free(text2);
    dt_optimizer_free(copy);
  }
  free(text);

  CHECK_OK(dt_optimizer_set_double(adam, "beta2", 0.995));
  text = json_of(adam);
  copy = NULL;
  if (text != NULL && CHECK_OK(dt_optimizer_create_from_json(&copy, text))) {
    text2 = json_of(copy);
    if (text2 != NULL) CHECK_STREQ(text2, text);
    free(text2);
    dt_optimizer_free(copy);
  }
  free(text);

  /* Hand-written, as in the header, with a schedule. */
  CHECK_OK(dt_optimizer_create_from_json(&sched,
                                         "{\"optimizer\": \"sgd\", \"learning_rate\": 0.05, "
                                         "\"momentum\": 0.9}"));
  dt_optimizer_free(sched);
  sched = NULL;
  if (CHECK_OK(dt_optimizer_create_from_json(&sched,
                                             "{\"optimizer\": \"sgd\", \"lr_scheduler\": \"cosine\", "
                                             "\"max_update\": 1000, \"final_lr\": 0.001, "
                                             "\"warmup_steps\": 10}"))) {
    text = json_of(sched);
    CHECK(text != NULL && strstr(text, "\"cosine\"") != NULL);
    free(text);
    dt_optimizer_free(sched);
  }
  dt_optimizer_free(sgd);
  dt_optimizer_free(adam);
}

static void test_json_errors(void) {
  static const char *bad[] = {
      "{\"optimizer\": ",
      "",
      "[1, 2]",
      "\"sgd\"",
      "{\"learning_rate\": 0.1}",
      "{\"optimizer\": 3}",
      "{\"optimizer\": \"rmsprop\"}",
      "{\"optimizer\": \"sgd\", \"momentum\": 1.5}",
      "{\"optimizer\": \"sgd\", \"learning_rate\": \"0.1\"}",
      "{\"optimizer\": \"sgd\", \"learning_rat\": 0.1}",
      "{\"optimizer\": \"sgd\", \"wd\": null}",
      "{\"optimizer\": \"sgd\", \"wd\": {\"a\": 1}}",
      "{\"optimizer\": \"sgd\", \"warmup_steps\": 18446744073709551615}",
      "{\"optimizer\": \"sgd\", \"lr_scheduler\": \"factor\"}",
      "{\"optimizer\": \"sgd\", \"lr_scheduler\": \"multifactor\", \"steps\": [20, 10]}",
      "{\"optimizer\": \"sgd\", \"lr_scheduler\": \"cosine\", \"max_update\": 5, \"warmup_steps\": 5}",
      "{\"optimizer\": \"adam\", \"beta1\": 0.9} trailing",
  };
  dt_optimizer *opt = CAPI_SENTINEL(dt_optimizer);
  size_t i;
  for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    if (!CHECK_STATUS(dt_optimizer_create_from_json(&opt, bad[i]), DT_ERR_INVALID_ARGUMENT)) {
      fprintf(stderr, "  json: %s\n", bad[i]);
    }
  }
  CHECK_STATUS(dt_optimizer_create_from_json(&opt, "{\"optimizer\": \"rmsprop\"}"), DT_ERR_INVALID_ARGUMENT);
  CHECK(last_error_has("rmsprop"));
  CHECK_STATUS(dt_optimizer_create_from_json(&opt, NULL), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_optimizer_create_from_json(NULL, "{\"optimizer\": \"sgd\"}"), DT_ERR_INVALID_ARGUMENT);
  CHECK(opt == CAPI_SENTINEL(dt_optimizer));
}

static void test_handles(void) {
  dt_optimizer *opt = make_opt("sgd");
  dt_context *ctx = NULL;
  const int64_t steps[1] = {3};
  size_t length = 5;
  char buf[64];
  if (opt == NULL) return;
  dt_optimizer_free(opt);
  CHECK_STATUS(dt_optimizer_set_double(opt, "learning_rate", 0.1), DT_ERR_INVALID_HANDLE);
  CHECK_STATUS(dt_optimizer_set_int(opt, "warmup_steps", 1), DT_ERR_INVALID_HANDLE);
  CHECK_STATUS(dt_optimizer_set_bool(opt, "nesterov", 1), DT_ERR_INVALID_HANDLE);
  CHECK_STATUS(dt_optimizer_set_string(opt, "lr_scheduler", "none"), DT_ERR_INVALID_HANDLE);
  CHECK_STATUS(dt_optimizer_set_int_list(opt, "steps", steps, 1), DT_ERR_INVALID_HANDLE);
  CHECK_STATUS(dt_optimizer_to_json(buf, sizeof buf, &length, opt), DT_ERR_INVALID_HANDLE);
  CHECK_EQ_U64(length, 5);
  dt_optimizer_free(opt); /* double free: ignored, reported */
  CHECK(last_error_has("dt_optimizer_free"));

  /* A handle of another kind is not an optimizer. */
  if (CHECK_OK(dt_context_create(&ctx, DT_DEVICE_CPU, 0))) {
    CHECK_STATUS(dt_optimizer_set_double((dt_optimizer *)ctx, "learning_rate", 0.1),
                 DT_ERR_INVALID_HANDLE);
    CHECK_STATUS(dt_optimizer_to_json(NULL, 0, &length, (const dt_optimizer *)ctx), DT_ERR_INVALID_HANDLE);
    dt_optimizer_free((dt_optimizer *)ctx); /* not an optimizer: ignored */
    CHECK(last_error_has("dt_optimizer_free"));
    CHECK_EQ_U64(length, 5);
    dt_context_free(ctx);
  }
}

int main(void) {
  test_create();
  test_setters();
  test_schedule_setters();
  test_to_json_buffer();
  test_json_round_trip();
  test_json_errors();
  test_handles();
  return capi_finish();
}
