/*
 * What the trainer C API tests share: the CPU context and scratch folder,
 * the tiny MLP's description, nets, optimizers and trainers made from it,
 * parameter snapshots and the fixed batch.
 */
#ifndef CAPI_TRAINER_TEST_UTIL_H
#define CAPI_TRAINER_TEST_UTIL_H

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

#define BATCH 6
#define FEATURES 16
#define MAX_PARAMS 512

extern dt_context *g_ctx;
extern char g_dir[512];

static const char *const k_net_json =
    "{\"format\": \"disttrain.net\", \"version\": 1,"
    " \"inputs\": [{\"name\": \"data\", \"shape\": [1, 4, 4]}],"
    " \"layers\": ["
    "  {\"name\": \"flatten\", \"type\": \"Flatten\"},"
    "  {\"name\": \"fc1\", \"type\": \"Dense\", \"units\": 8},"
    "  {\"name\": \"act\", \"type\": \"ReLU\"},"
    "  {\"name\": \"fc2\", \"type\": \"Dense\", \"units\": 3}],"
    " \"output\": \"fc2\"}";

/* Same layer names, another hidden width: a checkpoint that does not fit. */
static const char *const k_wide_net_json =
    "{\"format\": \"disttrain.net\", \"version\": 1,"
    " \"inputs\": [{\"name\": \"data\", \"shape\": [1, 4, 4]}],"
    " \"layers\": ["
    "  {\"name\": \"flatten\", \"type\": \"Flatten\"},"
    "  {\"name\": \"fc1\", \"type\": \"Dense\", \"units\": 5},"
    "  {\"name\": \"act\", \"type\": \"ReLU\"},"
    "  {\"name\": \"fc2\", \"type\": \"Dense\", \"units\": 3}],"
    " \"output\": \"fc2\"}";

static inline int last_error_has(const char *text) {
  return strstr(dt_last_error(), text) != NULL;
}

static inline void path_in(char *out, size_t cap, const char *name) {
  snprintf(out, cap, "%s/%s", g_dir, name);
}

static inline dt_net *make_net_from(const char *json, uint64_t seed) {
  dt_net *net = NULL;
  if (!CHECK_OK(dt_net_create_from_json(&net, g_ctx, json))) return NULL;
  if (!CHECK_OK(dt_net_initialize(net, seed))) {
    dt_net_free(net);
    return NULL;
  }
  return net;
}

static inline dt_net *make_net(uint64_t seed) { return make_net_from(k_net_json, seed); }

static inline dt_optimizer *make_sgd(double lr, double momentum) {
  dt_optimizer *opt = NULL;
  if (!CHECK_OK(dt_optimizer_create(&opt, "sgd"))) return NULL;
  CHECK_OK(dt_optimizer_set_double(opt, "learning_rate", lr));
  CHECK_OK(dt_optimizer_set_double(opt, "momentum", momentum));
  return opt;
}

static inline dt_trainer *make_trainer(dt_net *net, const dt_optimizer *opt, dt_kvstore *kv,
                                const dt_trainer_options *options) {
  dt_trainer *t = NULL;
  if (net == NULL || opt == NULL) return NULL;
  if (!CHECK_OK(dt_trainer_create(&t, net, opt, kv, options))) return NULL;
  return t;
}

/* Every parameter of the net, concatenated, into dst; returns the count. */
static inline size_t snapshot(float *dst, size_t cap, const dt_net *net) {
  size_t n = 0, i, total = 0;
  if (!CHECK_OK(dt_net_num_params(&n, net))) return 0;
  for (i = 0; i < n; i++) {
    dt_ndarray *p = NULL;
    size_t size = 0;
    if (!CHECK_OK(dt_net_param(&p, net, i))) return 0;
    CHECK_OK(dt_ndarray_size(&size, p));
    if (CHECK(total + size <= cap)) {
      CHECK_OK(dt_ndarray_copy_to_host(dst + total, size * sizeof(float), p));
      total += size;
    }
    dt_ndarray_free(p);
  }
  return total;
}

/* Checks that two nets hold bit-identical parameters. */
static inline int same_params(const dt_net *a, const dt_net *b) {
  static float pa[MAX_PARAMS], pb[MAX_PARAMS];
  size_t na = snapshot(pa, MAX_PARAMS, a), nb = snapshot(pb, MAX_PARAMS, b);
  return na > 0 && na == nb && memcmp(pa, pb, na * sizeof(float)) == 0;
}

/* The largest absolute difference between two nets' parameters. */
static inline double max_param_diff(const dt_net *a, const dt_net *b) {
  static float pa[MAX_PARAMS], pb[MAX_PARAMS];
  size_t na = snapshot(pa, MAX_PARAMS, a), nb = snapshot(pb, MAX_PARAMS, b), i;
  double worst = 0.0;
  if (na == 0 || na != nb) return INFINITY;
  for (i = 0; i < na; i++) {
    const double d = fabs((double)pa[i] - (double)pb[i]);
    if (!(d <= worst)) worst = d;
  }
  return worst;
}

/* A fixed batch of 6 samples of 1x4x4 (labels 0, 1, 2, 0, 1, 2). */
extern dt_ndarray *g_x, *g_y;

static inline void make_batch(void) {
  float x[BATCH * FEATURES];
  int32_t y[BATCH];
  const int64_t xdims[4] = {BATCH, 1, 4, 4}, ydims[1] = {BATCH};
  int i, j;
  for (i = 0; i < BATCH; i++) {
    y[i] = i % 3;
    for (j = 0; j < FEATURES; j++) {
      x[i * FEATURES + j] = (float)(((i * 7 + j * 5) % 11) - 5) / 5.0f + (j % 3 == y[i] ? 1.0f : 0.0f);
    }
  }
  CHECK_OK(dt_ndarray_create(&g_x, g_ctx, DT_FLOAT32, xdims, 4));
  CHECK_OK(dt_ndarray_copy_from_host(g_x, x, sizeof x));
  CHECK_OK(dt_ndarray_create(&g_y, g_ctx, DT_INT32, ydims, 1));
  CHECK_OK(dt_ndarray_copy_from_host(g_y, y, sizeof y));
}

/* The groups of tests in capi_trainer/, called by main in capi_trainer_test.c. */
void test_checkpoint(void);
void test_fit(void);
void test_extra_contexts(void);
void test_sync_modes(void);
void test_handles(void);

#endif
