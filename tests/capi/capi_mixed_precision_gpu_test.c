/*
 * Mixed precision through the C API on a GPU net: float16 and bfloat16 with
 * their loss-scaling defaults, custom loss-scaling options read back, bad
 * values refused without touching the scaler, the dtype locked after a
 * forward (the numerics are tests/gpu's). Exits 77 (CTest SKIP_RETURN_CODE)
 * when no GPU is visible.
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

static void test_gpu_net(void) {
  dt_context *ctx = NULL;
  dt_net *net = NULL;
  dt_ndarray *x = NULL;
  const int64_t dims[2] = {2, 4};
  double scale = 0.0;
  dt_loss_scaling_options o;
  dt_loss_scaling_options got;
  if (!CHECK_OK(dt_context_create(&ctx, DT_DEVICE_GPU, 0))) return;
  if (CHECK_OK(dt_net_create(&net, ctx, "mlp", k_mlp_options))) {
    CHECK_OK(dt_net_set_compute_dtype(net, DT_FLOAT16));
    CHECK_OK(dt_net_loss_scale(&scale, net));
    CHECK_EQ_DBL(scale, 65536.0);
    dt_loss_scaling_options_init(&got, sizeof got);
    CHECK_OK(dt_net_loss_scaling(&got, net));
    CHECK_EQ_I64(got.enabled, 1);
    CHECK_EQ_DBL(got.init_scale, 65536.0);

    /* float16 with custom options, read back; then without scaling. */
    dt_loss_scaling_options_init(&o, sizeof o);
    o.init_scale = 1024.0;
    o.growth_factor = 4.0;
    o.backoff_factor = 0.25;
    o.growth_interval = 10;
    CHECK_OK(dt_net_set_loss_scaling(net, &o));
    CHECK_OK(dt_net_loss_scale(&scale, net));
    CHECK_EQ_DBL(scale, 1024.0);
    CHECK_OK(dt_net_loss_scaling(&got, net));
    CHECK_EQ_I64(got.enabled, 1);
    CHECK_EQ_DBL(got.init_scale, 1024.0);
    CHECK_EQ_DBL(got.growth_factor, 4.0);
    CHECK_EQ_DBL(got.backoff_factor, 0.25);
    CHECK_EQ_I64(got.growth_interval, 10);
    o.growth_factor = 1.0; /* refused: the previous scaler stays */
    CHECK_STATUS(dt_net_set_loss_scaling(net, &o), DT_ERR_INVALID_ARGUMENT);
    CHECK(last_error_mentions("growth_factor"));
    CHECK_OK(dt_net_loss_scaling(&got, net));
    CHECK_EQ_DBL(got.growth_factor, 4.0);
    o.enabled = 0;
    CHECK_OK(dt_net_set_loss_scaling(net, &o));
    CHECK_OK(dt_net_loss_scale(&scale, net));
    CHECK_EQ_DBL(scale, 1.0);
    CHECK_OK(dt_net_loss_scaling(&got, net));
    CHECK_EQ_I64(got.enabled, 0);

    /* The dtype resets the scaler to its default: bfloat16 has none. */
    CHECK_OK(dt_net_set_compute_dtype(net, DT_BFLOAT16));
    CHECK_OK(dt_net_loss_scale(&scale, net));
    CHECK_EQ_DBL(scale, 1.0);
    CHECK_OK(dt_net_loss_scaling(&got, net));
    CHECK_EQ_I64(got.enabled, 0);
    /* bfloat16 may turn scaling on. */
    dt_loss_scaling_options_init(&o, sizeof o);
    o.init_scale = 256.0;
    CHECK_OK(dt_net_set_loss_scaling(net, &o));
    CHECK_OK(dt_net_loss_scale(&scale, net));
    CHECK_EQ_DBL(scale, 256.0);
    o.enabled = 0;
    CHECK_OK(dt_net_set_loss_scaling(net, &o));
    CHECK_OK(dt_net_initialize(net, 1));
    if (CHECK_OK(dt_ndarray_create(&x, ctx, DT_FLOAT32, dims, 2))) {
      CHECK_OK(dt_net_forward(net, (const dt_ndarray *const *)&x, 1, 0));
      CHECK_STATUS(dt_net_set_compute_dtype(net, DT_FLOAT16), DT_ERR_BAD_STATE);
      dt_ndarray_free(x);
    }
    dt_net_free(net);
  }
  dt_context_free(ctx);
}

int main(void) {
  const int skip = capi_gpu_skip_code();
  if (skip != 0) return skip;
  test_gpu_net();
  return capi_finish();
}
