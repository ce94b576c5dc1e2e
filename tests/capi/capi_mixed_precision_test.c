/*
 * Mixed precision through the C API: dt_net_set_compute_dtype and its
 * companions, and the loss-scaling options, with every bad argument; a CPU
 * net refuses 16-bit compute and loss scaling. A GPU net's side is
 * capi_mixed_precision_gpu_test.c.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "capi_check.h"

static const char *k_mlp_options =
    "{\"input_shape\": [4], \"hidden\": [8], \"classes\": 3}";

static int last_error_mentions(const char *text) {
  return strstr(dt_last_error(), text) != NULL;
}

static void test_arguments(dt_net *net) {
  dt_dtype dtype = DT_INT64;
  double scale = 0.0;
  CHECK_STATUS(dt_net_set_compute_dtype(NULL, DT_FLOAT16), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_net_set_compute_dtype(net, (dt_dtype)99), DT_ERR_INVALID_ARGUMENT);
  CHECK(last_error_mentions("99"));
  CHECK_STATUS(dt_net_set_compute_dtype(net, (dt_dtype)-1), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_net_set_compute_dtype(net, DT_INT32), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_net_set_compute_dtype(net, DT_FLOAT64), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_net_compute_dtype(NULL, net), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_net_compute_dtype(&dtype, NULL), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_net_loss_scale(NULL, net), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_net_loss_scale(&scale, NULL), DT_ERR_INVALID_ARGUMENT);
  CHECK_OK(dt_net_compute_dtype(&dtype, net));
  CHECK_EQ_I64(dtype, DT_FLOAT32);
}

static void test_loss_scaling_defaults(void) {
  dt_loss_scaling_options o;
  memset(&o, 0xab, sizeof o);
  dt_loss_scaling_options_init(&o, sizeof o);
  CHECK_EQ_I64(o.struct_size, sizeof o);
  CHECK_EQ_I64(o.enabled, 1);
  CHECK_EQ_DBL(o.init_scale, 65536.0);
  CHECK_EQ_DBL(o.growth_factor, 2.0);
  CHECK_EQ_DBL(o.backoff_factor, 0.5);
  CHECK_EQ_I64(o.growth_interval, 2000);
  CHECK_STATUS(dt_loss_scaling_options_init(NULL, sizeof o), DT_ERR_INVALID_ARGUMENT);
}

/* Each out-of-range field, on an enabled struct: the message names it. */
static void test_loss_scaling_bad_values(dt_net *net) {
  struct {
    const char *field;
    double init_scale, growth_factor, backoff_factor;
    int64_t growth_interval;
  } cases[] = {
      {"init_scale", 0.0, 2.0, 0.5, 2000},
      {"init_scale", -1.0, 2.0, 0.5, 2000},
      {"init_scale", 1e300, 2.0, 0.5, 2000},
      {"init_scale", 1e-30, 2.0, 0.5, 2000},
      {"growth_factor", 65536.0, 1.0, 0.5, 2000},
      {"growth_factor", 65536.0, 0.5, 0.5, 2000},
      {"backoff_factor", 65536.0, 2.0, 0.0, 2000},
      {"backoff_factor", 65536.0, 2.0, 1.0, 2000},
      {"growth_interval", 65536.0, 2.0, 0.5, 0},
      {"growth_interval", 65536.0, 2.0, 0.5, -5},
  };
  size_t i;
  for (i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
    dt_loss_scaling_options o;
    dt_loss_scaling_options_init(&o, sizeof o);
    o.init_scale = cases[i].init_scale;
    o.growth_factor = cases[i].growth_factor;
    o.backoff_factor = cases[i].backoff_factor;
    o.growth_interval = cases[i].growth_interval;
    CHECK_STATUS(dt_net_set_loss_scaling(net, &o), DT_ERR_INVALID_ARGUMENT);
    if (!CHECK(last_error_mentions(cases[i].field))) {
      fprintf(stderr, "  case %u: %s\n", (unsigned)i, dt_last_error());
    }
  }
}

static void test_loss_scaling_arguments(dt_net *net) {
  dt_loss_scaling_options o;
  dt_loss_scaling_options got;
  dt_loss_scaling_options_init(&o, sizeof o);
  CHECK_STATUS(dt_net_set_loss_scaling(NULL, &o), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_net_set_loss_scaling(net, NULL), DT_ERR_INVALID_ARGUMENT);
  CHECK(last_error_mentions("options"));
  CHECK_STATUS(dt_net_loss_scaling(NULL, net), DT_ERR_INVALID_ARGUMENT);
  dt_loss_scaling_options_init(&got, sizeof got);
  CHECK_STATUS(dt_net_loss_scaling(&got, NULL), DT_ERR_INVALID_ARGUMENT);

  /* A struct_size that no struct has: the struct was not initialised. The
   * out-parameter is left untouched. A longer one comes from a newer header
   * and is read up to this release's fields when its tail is zero. */
  o.struct_size = 0;
  CHECK_STATUS(dt_net_set_loss_scaling(net, &o), DT_ERR_INVALID_ARGUMENT);
  CHECK(last_error_mentions("struct_size"));
  o.struct_size = sizeof o - 1;
  CHECK_STATUS(dt_net_set_loss_scaling(net, &o), DT_ERR_INVALID_ARGUMENT);
  {
    struct {
      dt_loss_scaling_options o;
      unsigned char tail[8];
    } newer;
    CHECK_OK(dt_loss_scaling_options_init(&newer.o, sizeof newer));
    newer.o.enabled = 0; /* a no-op on this float32 net: only the size is judged */
    CHECK_OK(dt_net_set_loss_scaling(net, &newer.o));
  }
  memset(&got, 0, sizeof got);
  got.struct_size = sizeof got - 1;
  CHECK_STATUS(dt_net_loss_scaling(&got, net), DT_ERR_INVALID_ARGUMENT);
  CHECK(last_error_mentions("struct_size"));
  CHECK_EQ_I64(got.enabled, 0);
  CHECK_EQ_DBL(got.init_scale, 0.0);
}

/* A float32 net: no scaling to enable, disabling is a no-op, and the getter
 * reports a disabled scaler with the defaults. */
static void test_loss_scaling_float32(dt_net *net) {
  dt_loss_scaling_options o;
  dt_loss_scaling_options got;
  double scale = 0.0;
  dt_loss_scaling_options_init(&got, sizeof got);
  got.enabled = 7;
  CHECK_OK(dt_net_loss_scaling(&got, net));
  CHECK_EQ_I64(got.enabled, 0);
  CHECK_EQ_DBL(got.init_scale, 65536.0);
  CHECK_EQ_I64(got.growth_interval, 2000);

  dt_loss_scaling_options_init(&o, sizeof o);
  CHECK_STATUS(dt_net_set_loss_scaling(net, &o), DT_ERR_INVALID_ARGUMENT);
  CHECK(last_error_mentions("float32"));
  test_loss_scaling_bad_values(net);

  /* Disabled, the other fields are not looked at. */
  o.enabled = 0;
  o.init_scale = -1.0;
  o.growth_interval = 0;
  CHECK_OK(dt_net_set_loss_scaling(net, &o));
  CHECK_OK(dt_net_loss_scaling(&got, net));
  CHECK_EQ_I64(got.enabled, 0);
  CHECK_EQ_DBL(got.init_scale, 65536.0);
  CHECK_OK(dt_net_loss_scale(&scale, net));
  CHECK_EQ_DBL(scale, 1.0);
}

static void test_cpu(void) {
  dt_context *ctx = NULL;
  dt_net *net = NULL;
  dt_dtype dtype = DT_INT64;
  double scale = 0.0;
  dt_optimizer *opt = NULL;
  dt_trainer *trainer = NULL;
  int64_t skipped = -1;
  if (!CHECK_OK(dt_context_create(&ctx, DT_DEVICE_CPU, 0))) return;
  if (CHECK_OK(dt_net_create(&net, ctx, "mlp", k_mlp_options))) {
    test_arguments(net);
    CHECK_STATUS(dt_net_set_compute_dtype(net, DT_FLOAT16), DT_ERR_NOT_SUPPORTED);
    CHECK(last_error_mentions("GPU"));
    CHECK_STATUS(dt_net_set_compute_dtype(net, DT_BFLOAT16), DT_ERR_NOT_SUPPORTED);
    CHECK_OK(dt_net_set_compute_dtype(net, DT_FLOAT32));
    CHECK_OK(dt_net_compute_dtype(&dtype, net));
    CHECK_EQ_I64(dtype, DT_FLOAT32);
    CHECK_OK(dt_net_loss_scale(&scale, net));
    CHECK_EQ_DBL(scale, 1.0);
    test_loss_scaling_arguments(net);
    test_loss_scaling_float32(net);

    CHECK_OK(dt_optimizer_create(&opt, "sgd"));
    if (CHECK_OK(dt_trainer_create(&trainer, net, opt, NULL, NULL))) {
      CHECK_STATUS(dt_trainer_skipped_steps(NULL, trainer), DT_ERR_INVALID_ARGUMENT);
      CHECK_OK(dt_trainer_skipped_steps(&skipped, trainer));
      CHECK_EQ_I64(skipped, 0);
      dt_trainer_free(trainer);
    }
    CHECK_STATUS(dt_trainer_skipped_steps(&skipped, NULL), DT_ERR_INVALID_ARGUMENT);
    dt_optimizer_free(opt);
    dt_net_free(net);
  }
  dt_context_free(ctx);
}

int main(void) {
  test_loss_scaling_defaults();
  test_cpu();
  return capi_finish();
}
