/*
 * capi_options_test.c - the one rule for option and info structs
 * (dt_c_api.h, "Option and info structs"), for every struct: _init writes
 * exactly the caller's size; a shorter struct (an older header) gets the
 * defaults for the fields it lacks; a longer one (a newer header) is
 * accepted with a zero tail and refused with a set byte there; fills write
 * only the caller's size; NULL options mean the defaults.
 */
#define _POSIX_C_SOURCE 200112L /* setenv */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "capi_check.h"

#define CANARY 0xEE

static int all_bytes(const void *p, size_t n, unsigned char value) {
  const unsigned char *bytes = (const unsigned char *)p;
  size_t i;
  for (i = 0; i < n; ++i) {
    if (bytes[i] != value) return 0;
  }
  return 1;
}

static int last_error_has(const char *text) {
  return strstr(dt_last_error(), text) != NULL;
}

/* A struct of type followed by canary bytes; init is called with size
 * (shorter than, equal to or longer than the type): it must set
 * struct_size to size, zero what lies past this library's fields up to
 * size, and leave every byte past size as it was. */
#define CHECK_INIT_WRITES(type, init, size)                                   \
  do {                                                                        \
    struct {                                                                  \
      type s;                                                                 \
      unsigned char canary[32];                                               \
    } buf;                                                                    \
    const size_t n = (size);                                                  \
    memset(&buf, CANARY, sizeof buf);                                         \
    if (CHECK_OK(init(&buf.s, n))) {                                          \
      CHECK_EQ_U64(buf.s.struct_size, n);                                     \
      if (!CHECK(all_bytes((unsigned char *)&buf + n, sizeof buf - n,         \
                           CANARY))) {                                        \
        fprintf(stderr, "  %s wrote past %u bytes\n", #init, (unsigned)n);    \
      }                                                                       \
      if (n > sizeof(type)) {                                                 \
        CHECK(all_bytes((unsigned char *)&buf + sizeof(type),                 \
                        n - sizeof(type), 0));                                \
      }                                                                       \
    }                                                                         \
  } while (0)

#define CHECK_INIT_ALL_SIZES(type, init, older_size)                          \
  do {                                                                        \
    type whole;                                                               \
    CHECK_INIT_WRITES(type, init, sizeof(size_t));                            \
    CHECK_INIT_WRITES(type, init, older_size);                                \
    CHECK_INIT_WRITES(type, init, sizeof(type));                              \
    CHECK_INIT_WRITES(type, init, sizeof(type) + 16);                         \
    CHECK_STATUS(init(NULL, sizeof(type)), DT_ERR_INVALID_ARGUMENT);          \
    memset(&whole, CANARY, sizeof whole);                                     \
    CHECK_STATUS(init(&whole, 4), DT_ERR_INVALID_ARGUMENT);                   \
    CHECK_STATUS(init(&whole, sizeof(type) + 1), DT_ERR_INVALID_ARGUMENT);    \
    CHECK(all_bytes(&whole, sizeof whole, CANARY));                           \
  } while (0)

static void test_init_writes_the_callers_size(void) {
  CHECK_INIT_ALL_SIZES(dt_build_info, dt_build_info_init,
                       offsetof(dt_build_info, with_cudnn));
  CHECK_INIT_ALL_SIZES(dt_loss_scaling_options, dt_loss_scaling_options_init,
                       offsetof(dt_loss_scaling_options, init_scale));
  CHECK_INIT_ALL_SIZES(dt_data_loader_options, dt_data_loader_options_init,
                       offsetof(dt_data_loader_options, last_batch));
  CHECK_INIT_ALL_SIZES(dt_trainer_options, dt_trainer_options_init,
                       offsetof(dt_trainer_options, extra_contexts));
  CHECK_INIT_ALL_SIZES(dt_fit_options, dt_fit_options_init,
                       offsetof(dt_fit_options, metrics_path));
  CHECK_INIT_ALL_SIZES(dt_kvstore_options, dt_kvstore_options_init,
                       offsetof(dt_kvstore_options, role));
}

/* The defaults inside a shorter struct are the library's. */
static void test_init_of_a_shorter_struct(void) {
  struct {
    dt_fit_options s;
    unsigned char canary[32];
  } buf;
  const size_t older = offsetof(dt_fit_options, metrics_path);
  memset(&buf, CANARY, sizeof buf);
  CHECK_OK(dt_fit_options_init(&buf.s, older));
  CHECK_EQ_I64(buf.s.epochs, 5);
}

/* An older caller's struct: the fields past its struct_size are never read
 * (whatever the bytes there hold) and take the defaults. */
static void test_shorter_struct_gets_defaults(void) {
  dt_data_loader_options lo;
  dt_data_loader *loader = NULL;
  dt_kvstore_options ko;
  dt_kvstore *kv = NULL;
  size_t batches = 0;

  /* Only struct_size: every field defaults, so batches of 64. */
  CHECK_OK(dt_data_loader_options_init(&lo, sizeof lo));
  lo.struct_size = sizeof(size_t);
  lo.batch_size = 1000;
  lo.prefetch = -1; /* would be refused if it were read */
  if (CHECK_OK(dt_data_loader_create_mnist(&loader, NULL, "t10k", &lo))) {
    CHECK_OK(dt_data_loader_num_batches(&batches, loader));
    CHECK_EQ_U64(batches, (10000 + 63) / 64);
    dt_data_loader_free(loader);
  }
  /* The same fields read: refused, so the size above is what hid them. */
  lo.struct_size = sizeof lo;
  CHECK_STATUS(dt_data_loader_create_mnist(&loader, NULL, "t10k", &lo),
               DT_ERR_INVALID_ARGUMENT);

  CHECK_OK(dt_kvstore_options_init(&ko, sizeof ko));
  ko.role = 12345;
  CHECK_STATUS(dt_kvstore_create_ex(&kv, "local", &ko), DT_ERR_INVALID_ARGUMENT);
  ko.struct_size = offsetof(dt_kvstore_options, role);
  if (CHECK_OK(dt_kvstore_create_ex(&kv, "local", &ko))) dt_kvstore_free(kv);
}

/* A newer caller's struct: accepted when the bytes past this library's
 * sizeof are zero, refused (naming the byte) when one is set. This
 * library's own tail padding is never read: a copy need not keep it. */
static void test_longer_struct(void) {
  struct {
    dt_kvstore_options s;
    unsigned char newer_fields[16];
  } buf;
  dt_kvstore *kv = NULL;
  const size_t known =
      offsetof(dt_kvstore_options, scheduler_port) + sizeof(int32_t);
  CHECK_OK(dt_kvstore_options_init(&buf.s, sizeof buf));
  if (CHECK_OK(dt_kvstore_create_ex(&kv, "local", &buf.s))) dt_kvstore_free(kv);

  buf.newer_fields[3] = 1;
  CHECK_STATUS(dt_kvstore_create_ex(&kv, "local", &buf.s), DT_ERR_NOT_SUPPORTED);
  CHECK(last_error_has("byte"));
  CHECK_STATUS(dt_node_run(&buf.s), DT_ERR_NOT_SUPPORTED);
  buf.newer_fields[3] = 0;

  if (known < sizeof buf.s) {
    ((unsigned char *)&buf.s)[known] = 1;
    if (CHECK_OK(dt_kvstore_create_ex(&kv, "local", &buf.s))) dt_kvstore_free(kv);
    ((unsigned char *)&buf.s)[known] = 0;
  }
  if (CHECK_OK(dt_kvstore_create_ex(&kv, "local", &buf.s))) dt_kvstore_free(kv);
}

/* A fill writes only the caller's size; past this library's fields it
 * leaves what the caller's _init wrote. */
static void test_fill_writes_the_callers_size(void) {
  struct {
    dt_loss_scaling_options s;
    unsigned char canary[32];
  } buf;
  struct {
    dt_build_info s;
    unsigned char newer_fields[16];
  } info;
  dt_context *cpu = NULL;
  dt_net *net = NULL;
  const size_t older = offsetof(dt_loss_scaling_options, growth_factor);
  if (!CHECK_OK(dt_context_create(&cpu, DT_DEVICE_CPU, 0))) return;
  if (CHECK_OK(dt_net_create(&net, cpu, "mlp", NULL))) {
    memset(&buf, CANARY, sizeof buf);
    CHECK_OK(dt_loss_scaling_options_init(&buf.s, older));
    buf.s.enabled = 7;
    CHECK_OK(dt_net_loss_scaling(&buf.s, net));
    CHECK_EQ_I64(buf.s.enabled, 0);
    CHECK_EQ_DBL(buf.s.init_scale, 65536.0);
    CHECK(all_bytes((unsigned char *)&buf + older, sizeof buf - older, CANARY));
    dt_net_free(net);
  }
  dt_context_free(cpu);

  CHECK_OK(dt_build_info_init(&info.s, sizeof info));
  memset(info.newer_fields, CANARY, sizeof info.newer_fields);
  CHECK_OK(dt_build_info_get(&info.s));
  CHECK_EQ_I64(info.s.version_major, DT_VERSION_MAJOR);
  CHECK(all_bytes(info.newer_fields, sizeof info.newer_fields, CANARY));
}

/* NULL options mean the defaults where a call says so. */
static void test_null_means_defaults(void) {
  dt_data_loader *loader = NULL;
  dt_kvstore *kv = NULL;
  size_t batches = 0;
  if (CHECK_OK(dt_data_loader_create_mnist(&loader, NULL, "t10k", NULL))) {
    CHECK_OK(dt_data_loader_num_batches(&batches, loader));
    CHECK_EQ_U64(batches, (10000 + 63) / 64);
    dt_data_loader_free(loader);
  }
  if (CHECK_OK(dt_kvstore_create_ex(&kv, "local", NULL))) dt_kvstore_free(kv);
}

/* The deadlines and the big-array bound come from the environment, the same
 * for every node of a job (MXNet's MXNET_KVSTORE_BIGARRAY_BOUND counts
 * float32 elements); a malformed value is an error naming the variable. */
static void test_environment_supplies_the_defaults(void) {
  dt_kvstore_options ko;
  setenv("MXNET_KVSTORE_BIGARRAY_BOUND", "1000", 1);
  setenv("DT_REQUEST_TIMEOUT_S", "9.5", 1);
  CHECK_OK(dt_kvstore_options_init(&ko, sizeof ko));
  CHECK_EQ_I64((int64_t)ko.bigarray_bound_bytes, 4000);
  CHECK(ko.request_timeout_s == 9.5);
  setenv("DT_REQUEST_TIMEOUT_S", "soon", 1);
  CHECK_STATUS(dt_kvstore_options_init(&ko, sizeof ko), DT_ERR_INVALID_ARGUMENT);
  CHECK(strstr(dt_last_error(), "DT_REQUEST_TIMEOUT_S") != NULL);
  unsetenv("DT_REQUEST_TIMEOUT_S");
  unsetenv("MXNET_KVSTORE_BIGARRAY_BOUND");
}

int main(void) {
  test_init_writes_the_callers_size();
  test_init_of_a_shorter_struct();
  test_shorter_struct_gets_defaults();
  test_longer_struct();
  test_fill_writes_the_callers_size();
  test_null_means_defaults();
  test_environment_supplies_the_defaults();
  return capi_finish();
}
