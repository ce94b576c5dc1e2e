/*
 * Nets: model builders, JSON descriptions, parameters, forward/backward,
 * parameter files, the context's thread count, and every bad argument.
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "capi_check.h"

static dt_context *g_ctx;
static char g_dir[512];

/* A small MLP: 4 features, one hidden layer of 8, 3 classes. */
static const char *k_mlp_options =
    "{\"input_shape\": [4], \"hidden\": [8], \"classes\": 3}";

static dt_net *make_net(const char *builder, const char *options) {
  dt_net *net = NULL;
  if (!CHECK_OK(dt_net_create(&net, g_ctx, builder, options))) return NULL;
  return net;
}

static dt_ndarray *make_array(dt_dtype dtype, const int64_t *dims, size_t ndim,
                              const void *data, size_t nbytes) {
  dt_ndarray *a = NULL;
  if (!CHECK_OK(dt_ndarray_create(&a, g_ctx, dtype, dims, ndim))) return NULL;
  if (data != NULL) CHECK_OK(dt_ndarray_copy_from_host(a, data, nbytes));
  return a;
}

static int last_error_has(const char *text) {
  return strstr(dt_last_error(), text) != NULL;
}

static void test_threads(void) {
  int32_t n = -5;
  dt_context *ctx = NULL;
  CHECK_OK(dt_context_create(&ctx, DT_DEVICE_CPU, 0));
  CHECK_OK(dt_context_num_threads(&n, ctx));
  CHECK_EQ_I64(n, 0);
  CHECK_OK(dt_context_set_num_threads(ctx, 1));
  CHECK_OK(dt_context_num_threads(&n, ctx));
  CHECK_EQ_I64(n, 1);
  CHECK_STATUS(dt_context_set_num_threads(ctx, -1), DT_ERR_INVALID_ARGUMENT);
  CHECK_OK(dt_context_num_threads(&n, ctx));
  CHECK_EQ_I64(n, 1);
  CHECK_STATUS(dt_context_set_num_threads(NULL, 1), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_context_num_threads(NULL, ctx), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_context_num_threads(&n, NULL), DT_ERR_INVALID_ARGUMENT);
  dt_context_free(ctx);
  CHECK_STATUS(dt_context_num_threads(&n, ctx), DT_ERR_INVALID_HANDLE);
}

static void test_create(void) {
  static const char *builders[3] = {"mlp", "lenet", "resnet18"};
  static const size_t expected_params[3] = {6, 8, 102};
  dt_net *net = CAPI_SENTINEL(dt_net);
  size_t i, n = 0;
  for (i = 0; i < 3; i++) {
    dt_net *built = make_net(builders[i], NULL);
    if (built == NULL) continue;
    CHECK_OK(dt_net_num_params(&n, built));
    CHECK_EQ_U64(n, expected_params[i]);
    dt_net_free(built);
  }
  net = make_net("lenet", "{\"input_shape\": [3, 32, 32], \"classes\": 100}");
  dt_net_free(net);

  net = CAPI_SENTINEL(dt_net);
  CHECK_STATUS(dt_net_create(&net, g_ctx, "vgg16", NULL), DT_ERR_INVALID_ARGUMENT);
  CHECK(last_error_has("vgg16"));
  CHECK_STATUS(dt_net_create(&net, g_ctx, "lenet", "{\"classes\": "), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_net_create(&net, g_ctx, "lenet", "{\"clases\": 10}"), DT_ERR_INVALID_ARGUMENT);
  CHECK(last_error_has("clases"));
  /* An input too small for the layers: the shape error names the layer. */
  CHECK_STATUS(dt_net_create(&net, g_ctx, "lenet", "{\"input_shape\": [1, 8, 8]}"),
               DT_ERR_SHAPE_MISMATCH);
  CHECK(last_error_has("conv2"));
  CHECK_STATUS(dt_net_create(NULL, g_ctx, "lenet", NULL), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_net_create(&net, NULL, "lenet", NULL), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_net_create(&net, g_ctx, NULL, NULL), DT_ERR_INVALID_ARGUMENT);
  CHECK(net == CAPI_SENTINEL(dt_net));
  dt_net_free(NULL);
}

static void test_json(void) {
  dt_net *net = make_net("lenet", NULL);
  dt_net *rebuilt = CAPI_SENTINEL(dt_net);
  size_t length = 0, length2 = 0;
  char small[16];
  char *text, *text2;
  if (net == NULL) return;
  CHECK_OK(dt_net_to_json(NULL, 0, &length, net));
  CHECK(length > 100);
  text = (char *)malloc(length);
  text2 = (char *)malloc(length);
  memset(small, 'x', sizeof small);
  CHECK_STATUS(dt_net_to_json(small, sizeof small, &length2, net), DT_ERR_INVALID_ARGUMENT);
  CHECK_EQ_U64(length2, 0);
  CHECK(small[0] == 'x');
  CHECK_STATUS(dt_net_to_json(text, length - 1, &length2, net), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_net_to_json(NULL, 10, &length2, net), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_net_to_json(text, length, NULL, net), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_net_to_json(text, length, &length2, NULL), DT_ERR_INVALID_ARGUMENT);
  CHECK_OK(dt_net_to_json(text, length, &length2, net));
  CHECK_EQ_U64(length2, length);
  CHECK_EQ_U64(strlen(text) + 1, length);
  CHECK(strstr(text, "\"format\": \"disttrain.net\"") != NULL);
  CHECK(strstr(text, "\"conv1\"") != NULL);

  /* The description rebuilds the same net, which writes the same text. */
  if (CHECK_OK(dt_net_create_from_json(&rebuilt, g_ctx, text))) {
    CHECK_OK(dt_net_to_json(text2, length, &length2, rebuilt));
    CHECK_STREQ(text2, text);
    dt_net_free(rebuilt);
  }

  rebuilt = CAPI_SENTINEL(dt_net);
  CHECK_STATUS(dt_net_create_from_json(&rebuilt, g_ctx, "{\"format\": "), DT_ERR_INVALID_ARGUMENT);
  CHECK(last_error_has("line 1"));
  CHECK_STATUS(dt_net_create_from_json(&rebuilt, g_ctx,
                                       "{\"format\": \"disttrain.net\", \"version\": 9, "
                                       "\"inputs\": [], \"layers\": []}"),
               DT_ERR_NOT_SUPPORTED);
  CHECK_STATUS(dt_net_create_from_json(&rebuilt, g_ctx,
                                       "{\"format\": \"disttrain.net\", \"version\": 1, "
                                       "\"inputs\": [{\"name\": \"x\", \"shape\": [4]}], "
                                       "\"layers\": [{\"name\": \"fc\", \"type\": \"Densely\"}]}"),
               DT_ERR_INVALID_ARGUMENT);
  CHECK(last_error_has("Densely"));
  CHECK_STATUS(dt_net_create_from_json(&rebuilt, g_ctx,
                                       "{\"format\": \"disttrain.net\", \"version\": 1, "
                                       "\"inputs\": [{\"name\": \"x\", \"shape\": [4]}], "
                                       "\"layers\": [{\"name\": \"fc\", \"type\": \"Dense\", "
                                       "\"inputs\": [\"y\"], \"units\": 2}]}"),
               DT_ERR_INVALID_ARGUMENT);
  CHECK(last_error_has("\"y\""));
  CHECK_STATUS(dt_net_create_from_json(&rebuilt, g_ctx, NULL), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_net_create_from_json(&rebuilt, NULL, text), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_net_create_from_json(NULL, g_ctx, text), DT_ERR_INVALID_ARGUMENT);
  CHECK(rebuilt == CAPI_SENTINEL(dt_net));
  free(text);
  free(text2);
  dt_net_free(net);
}

static void test_params(void) {
  static const char *names[8] = {"conv1.weight", "conv1.bias", "conv2.weight", "conv2.bias",
                                 "fc1.weight",   "fc1.bias",   "fc2.weight",   "fc2.bias"};
  dt_net *net = make_net("lenet", NULL);
  dt_net *resnet = make_net("resnet18", "{\"input_shape\": [3, 8, 8]}");
  dt_ndarray *arr = CAPI_SENTINEL(dt_ndarray);
  const char *name = NULL;
  int32_t aux = -1;
  size_t i, n = 0, index = 99, total = 0;
  int64_t dims[4];
  if (net == NULL || resnet == NULL) return;
  CHECK_OK(dt_net_num_params(&n, net));
  CHECK_EQ_U64(n, 8);
  for (i = 0; i < 8; i++) {
    CHECK_OK(dt_net_param_name(&name, net, i));
    CHECK_STREQ(name, names[i]);
    CHECK_OK(dt_net_param_is_auxiliary(&aux, net, i));
    CHECK_EQ_I64(aux, 0);
    CHECK_OK(dt_net_find_param(&index, net, names[i]));
    CHECK_EQ_U64(index, i);
    if (CHECK_OK(dt_net_param(&arr, net, i))) {
      size_t size = 0;
      CHECK_OK(dt_ndarray_size(&size, arr));
      total += size;
      dt_ndarray_free(arr);
    }
    if (CHECK_OK(dt_net_grad(&arr, net, i))) dt_ndarray_free(arr);
  }
  CHECK_EQ_U64(total, 431080);
  if (CHECK_OK(dt_net_param(&arr, net, 0))) {
    CHECK_OK(dt_ndarray_shape(dims, 4, arr));
    CHECK(dims[0] == 20 && dims[1] == 1 && dims[2] == 5 && dims[3] == 5);
    dt_ndarray_free(arr);
  }

  arr = CAPI_SENTINEL(dt_ndarray);
  CHECK_STATUS(dt_net_param(&arr, net, 8), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_net_grad(&arr, net, 8), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_net_param(NULL, net, 0), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_net_param(&arr, NULL, 0), DT_ERR_INVALID_ARGUMENT);
  CHECK(arr == CAPI_SENTINEL(dt_ndarray));
  CHECK_STATUS(dt_net_param_name(&name, net, 8), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_net_param_name(NULL, net, 0), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_net_param_is_auxiliary(&aux, net, 8), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_net_param_is_auxiliary(NULL, net, 0), DT_ERR_INVALID_ARGUMENT);
  index = 99;
  CHECK_STATUS(dt_net_find_param(&index, net, "conv3.weight"), DT_ERR_NOT_FOUND);
  CHECK(last_error_has("conv3.weight"));
  CHECK_STATUS(dt_net_find_param(&index, net, NULL), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_net_find_param(NULL, net, "fc1.bias"), DT_ERR_INVALID_ARGUMENT);
  CHECK_EQ_U64(index, 99);
  CHECK_STATUS(dt_net_num_params(NULL, net), DT_ERR_INVALID_ARGUMENT);

  /* Auxiliary states: listed, flagged, without a gradient. */
  CHECK_OK(dt_net_find_param(&index, resnet, "bn1.running_mean"));
  CHECK_OK(dt_net_param_is_auxiliary(&aux, resnet, index));
  CHECK_EQ_I64(aux, 1);
  CHECK_STATUS(dt_net_grad(&arr, resnet, index), DT_ERR_NOT_FOUND);
  CHECK_STATUS(dt_net_set_grad_req(resnet, "bn1.running_mean", DT_GRAD_ADD), DT_ERR_INVALID_ARGUMENT);
  CHECK_OK(dt_net_set_grad_req(resnet, NULL, DT_GRAD_NULL));
  CHECK_OK(dt_net_set_grad_req(resnet, "fc.weight", DT_GRAD_ADD));
  CHECK_STATUS(dt_net_set_grad_req(resnet, "fc.nothing", DT_GRAD_ADD), DT_ERR_NOT_FOUND);
  CHECK_STATUS(dt_net_set_grad_req(resnet, NULL, (dt_grad_req)7), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_net_set_grad_req(NULL, NULL, DT_GRAD_WRITE), DT_ERR_INVALID_ARGUMENT);
  dt_net_free(resnet);
  dt_net_free(net);
}

/* Forward and backward on a batch of 2, with every bad argument. */
static void test_forward_backward(void) {
  static const float x_data[8] = {0.5f, -1.0f, 2.0f, 0.1f, -0.3f, 0.8f, 1.5f, -2.0f};
  static const int32_t labels_data[2] = {0, 2};
  static const float float_labels_data[2] = {0.0f, 2.0f};
  static const int32_t bad_labels_data[2] = {0, 3};
  const int64_t x_dims[2] = {2, 4}, bad_dims[2] = {2, 5}, label_dims[1] = {2}, label3_dims[1] = {3};
  dt_net *net = make_net("mlp", k_mlp_options);
  dt_ndarray *x = make_array(DT_FLOAT32, x_dims, 2, x_data, sizeof x_data);
  dt_ndarray *bad_x = make_array(DT_FLOAT32, bad_dims, 2, NULL, 0);
  dt_ndarray *int_x = make_array(DT_INT32, x_dims, 2, NULL, 0);
  dt_ndarray *labels = make_array(DT_INT32, label_dims, 1, labels_data, sizeof labels_data);
  dt_ndarray *float_labels = make_array(DT_FLOAT32, label_dims, 1, float_labels_data, sizeof float_labels_data);
  dt_ndarray *bad_labels = make_array(DT_INT32, label_dims, 1, bad_labels_data, sizeof bad_labels_data);
  dt_ndarray *labels3 = make_array(DT_INT32, label3_dims, 1, NULL, 0);
  dt_ndarray *out = CAPI_SENTINEL(dt_ndarray), *grad = NULL;
  const dt_ndarray *inputs[2];
  double loss = -1.0;
  size_t n = 0, i;
  int64_t dims[2] = {0, 0};
  float grads[8 * 4]; /* fc1.weight: (8, 4) */
  int nonzero = 0;
  if (net == NULL || x == NULL) return;
  inputs[0] = x;
  inputs[1] = x;
  CHECK_OK(dt_net_initialize(net, 1));
  CHECK_STATUS(dt_net_initialize(NULL, 1), DT_ERR_INVALID_ARGUMENT);

  /* Nothing to read or differentiate before a forward. */
  CHECK_STATUS(dt_net_output(&out, net, 0), DT_ERR_BAD_STATE);
  CHECK_STATUS(dt_net_backward(&loss, net, labels), DT_ERR_BAD_STATE);
  CHECK(out == CAPI_SENTINEL(dt_ndarray));
  CHECK_EQ_DBL(loss, -1.0);

  CHECK_STATUS(dt_net_forward(net, inputs, 1, 2), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_net_forward(net, NULL, 1, 1), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_net_forward(net, inputs, 2, 1), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_net_forward(net, inputs, 0, 1), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_net_forward(NULL, inputs, 1, 1), DT_ERR_INVALID_ARGUMENT);
  inputs[0] = bad_x;
  CHECK_STATUS(dt_net_forward(net, inputs, 1, 1), DT_ERR_SHAPE_MISMATCH);
  CHECK(last_error_has("\"data\"") && last_error_has("(2, 5)") && last_error_has("(batch, 4)"));
  inputs[0] = int_x;
  CHECK_STATUS(dt_net_forward(net, inputs, 1, 1), DT_ERR_DTYPE_MISMATCH);
  inputs[0] = NULL;
  CHECK_STATUS(dt_net_forward(net, inputs, 1, 1), DT_ERR_INVALID_ARGUMENT);
  CHECK(last_error_has("inputs[0]"));

  inputs[0] = x;
  CHECK_OK(dt_net_forward(net, inputs, 1, 1));
  CHECK_OK(dt_net_num_outputs(&n, net));
  CHECK_EQ_U64(n, 1);
  CHECK_STATUS(dt_net_num_outputs(NULL, net), DT_ERR_INVALID_ARGUMENT);
  if (CHECK_OK(dt_net_output(&out, net, 0))) {
    CHECK_OK(dt_ndarray_shape(dims, 2, out));
    CHECK(dims[0] == 2 && dims[1] == 3);
    dt_ndarray_free(out);
  }
  out = CAPI_SENTINEL(dt_ndarray);
  CHECK_STATUS(dt_net_output(&out, net, 1), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_net_output(NULL, net, 0), DT_ERR_INVALID_ARGUMENT);
  CHECK(out == CAPI_SENTINEL(dt_ndarray));

  CHECK_STATUS(dt_net_backward(&loss, net, float_labels), DT_ERR_DTYPE_MISMATCH);
  CHECK_STATUS(dt_net_backward(&loss, net, labels3), DT_ERR_SHAPE_MISMATCH);
  CHECK_STATUS(dt_net_backward(&loss, net, bad_labels), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_net_backward(&loss, net, NULL), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_net_backward(&loss, NULL, labels), DT_ERR_INVALID_ARGUMENT);
  CHECK_EQ_DBL(loss, -1.0);
  CHECK_OK(dt_net_backward(&loss, net, labels));
  CHECK(isfinite(loss) && loss > 0.0);
  CHECK_OK(dt_net_backward(NULL, net, labels));

  if (CHECK_OK(dt_net_grad(&grad, net, 0))) {
    CHECK_OK(dt_ndarray_copy_to_host(grads, sizeof(float) * 8 * 4, grad));
    for (i = 0; i < 8 * 4; i++) nonzero += grads[i] != 0.0f;
    CHECK(nonzero > 0);
    dt_ndarray_free(grad);
  }
  dt_ndarray_free(x);
  dt_ndarray_free(bad_x);
  dt_ndarray_free(int_x);
  dt_ndarray_free(labels);
  dt_ndarray_free(float_labels);
  dt_ndarray_free(bad_labels);
  dt_ndarray_free(labels3);
  dt_net_free(net);
}

static void read_param(const dt_net *net, size_t index, float *dst, size_t count) {
  dt_ndarray *arr = NULL;
  if (CHECK_OK(dt_net_param(&arr, net, index))) {
    CHECK_OK(dt_ndarray_copy_to_host(dst, count * sizeof(float), arr));
    dt_ndarray_free(arr);
  }
}

static void test_save_load(void) {
  char path[600], missing[600];
  float saved[32], changed[32], loaded[32];
  dt_net *net = make_net("mlp", k_mlp_options);
  dt_net *lenet = make_net("lenet", NULL);
  if (net == NULL || lenet == NULL) return;
  snprintf(path, sizeof path, "%s/mlp.safetensors", g_dir);
  snprintf(missing, sizeof missing, "%s/none.safetensors", g_dir);
  CHECK_OK(dt_net_initialize(net, 5));
  read_param(net, 0, saved, 32);
  CHECK_OK(dt_net_save_params(net, path));
  CHECK_OK(dt_net_initialize(net, 6));
  read_param(net, 0, changed, 32);
  CHECK(memcmp(saved, changed, sizeof saved) != 0);
  CHECK_OK(dt_net_load_params(net, path));
  read_param(net, 0, loaded, 32);
  CHECK(memcmp(saved, loaded, sizeof saved) == 0);

  CHECK_STATUS(dt_net_load_params(net, missing), DT_ERR_NOT_FOUND);
  /* Another net's file lacks this net's parameters. */
  CHECK_STATUS(dt_net_load_params(lenet, path), DT_ERR_NOT_FOUND);
  CHECK(last_error_has("conv1.weight"));
  CHECK_STATUS(dt_net_load_params(net, NULL), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_net_load_params(NULL, path), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_net_save_params(net, NULL), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_net_save_params(NULL, path), DT_ERR_INVALID_ARGUMENT);
  unlink(path);
  dt_net_free(lenet);
  dt_net_free(net);
}

static void test_handles(void) {
  dt_context *ctx = NULL;
  dt_net *net = NULL;
  dt_ndarray *arr = NULL;
  const int64_t dims[1] = {2};
  const dt_ndarray *inputs[1];
  size_t n = 0;
  static const float x_data[4] = {1.0f, 2.0f, 3.0f, 4.0f};
  const int64_t x_dims[2] = {1, 4};
  /* The net keeps its context alive. */
  CHECK_OK(dt_context_create(&ctx, DT_DEVICE_CPU, 0));
  CHECK_OK(dt_net_create(&net, ctx, "mlp", k_mlp_options));
  dt_context_free(ctx);
  CHECK_OK(dt_ndarray_create(&arr, g_ctx, DT_FLOAT32, x_dims, 2));
  CHECK_OK(dt_ndarray_copy_from_host(arr, x_data, sizeof x_data));
  inputs[0] = arr;
  CHECK_OK(dt_net_forward(net, inputs, 1, 0));
  /* A handle of another kind is not a net. */
  CHECK_STATUS(dt_net_num_params(&n, (const dt_net *)arr), DT_ERR_INVALID_HANDLE);
  dt_ndarray_free(arr);
  arr = NULL;
  CHECK_OK(dt_ndarray_create(&arr, g_ctx, DT_INT32, dims, 1));
  dt_net_free(net);
  CHECK_STATUS(dt_net_num_params(&n, net), DT_ERR_INVALID_HANDLE);
  CHECK_STATUS(dt_net_backward(NULL, net, arr), DT_ERR_INVALID_HANDLE);
  dt_net_free(net); /* double free: ignored, reported */
  CHECK(last_error_has("dt_net_free"));
  dt_ndarray_free(arr);
}

int main(void) {
  const char *tmp = getenv("TMPDIR");
  int rc;
  if (tmp == NULL || tmp[0] == '\0') tmp = "/tmp";
  snprintf(g_dir, sizeof g_dir, "%s/capi_net_%ld", tmp, (long)getpid());
  if (mkdir(g_dir, 0700) != 0) {
    fprintf(stderr, "cannot create %s\n", g_dir);
    printf("0 passed, 1 failed\n");
    return 1;
  }
  if (dt_context_create(&g_ctx, DT_DEVICE_CPU, 0) != DT_OK) {
    fprintf(stderr, "cannot create a CPU context: %s\n", dt_last_error());
    rmdir(g_dir);
    printf("0 passed, 1 failed\n");
    return 1;
  }
  /* The test shares two cores with the rest of the suite. */
  dt_context_set_num_threads(g_ctx, 2);
  test_threads();
  test_create();
  test_json();
  test_params();
  test_forward_backward();
  test_save_load();
  test_handles();
  dt_context_free(g_ctx);
  rc = capi_finish();
  if (rmdir(g_dir) != 0) fprintf(stderr, "cannot remove %s (files left?)\n", g_dir);
  return rc;
}
