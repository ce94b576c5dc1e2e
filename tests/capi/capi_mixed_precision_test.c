/*
 * Mixed precision through the C API: dt_net_set_compute_dtype and its
 * companions, with every bad argument; a CPU net refuses 16-bit compute.
 * Where a GPU is visible, a GPU net also takes float16 / bfloat16 with their
 * loss-scaling defaults (the numerics are tests/gpu's).
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

static void test_gpu_if_present(void) {
  int32_t count = 0;
  dt_context *ctx = NULL;
  dt_net *net = NULL;
  dt_ndarray *x = NULL;
  const int64_t dims[2] = {2, 4};
  double scale = 0.0;
  if (dt_gpu_count(&count) != DT_OK || count == 0) {
    printf("no GPU: the GPU part is skipped\n");
    return;
  }
  if (!CHECK_OK(dt_context_create(&ctx, DT_DEVICE_GPU, 0))) return;
  if (CHECK_OK(dt_net_create(&net, ctx, "mlp", k_mlp_options))) {
    CHECK_OK(dt_net_set_compute_dtype(net, DT_FLOAT16));
    CHECK_OK(dt_net_loss_scale(&scale, net));
    CHECK_EQ_DBL(scale, 65536.0);
    CHECK_OK(dt_net_set_compute_dtype(net, DT_BFLOAT16));
    CHECK_OK(dt_net_loss_scale(&scale, net));
    CHECK_EQ_DBL(scale, 1.0);
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
  test_cpu();
  test_gpu_if_present();
  return capi_finish();
}
