/*
 * nn_throughput: images/s of a full training step (forward, backward, SGD
 * momentum update) through the C API, one JSON line per model:
 *   {"model":"lenet","device":"cpu","precision":"fp32","batch":64,"threads":2,
 *    "input":"synthetic","images_per_s":...,"peak_bytes":...,"cached_bytes":...}
 *
 *   nn_throughput [--device cpu|gpu] [--precision fp32|fp16|bf16]
 *                 [--threads N] [--steps N] [--warmup N] [--batch N]
 *                 [--model lenet|resnet18|all] [--json FILE] [--kvstore TYPE]
 *                 [--cifar DIR]
 *
 * Batches: LeNet 64; ResNet-18 32 on the CPU and 128 (the figure) on
 * the GPU; --batch N sets both. The GPU runs more steps by default (500
 * LeNet, 100 ResNet-18, after 10 warm-up steps), since its steps are short;
 * the CPU warms up with 3 LeNet and 2 ResNet-18 steps. --warmup N sets both.
 *
 * --device gpu trains on GPU 0, with the batch already on the device (as the
 * CPU run has it in host memory), so both measure the training step alone.
 * --precision fp16 / bf16 (GPU only) is mixed precision: the net computes in
 * float16 (with dynamic loss scaling) or bfloat16 over float32 master
 * weights (dt_net_set_compute_dtype), as PyTorch's autocast + GradScaler do
 * in bench/peers/torch_nn_throughput.py --precision. Without a usable GPU it
 * says why and exits 1.
 *
 * --kvstore TYPE (one --model) trains through that store: under dtrun, a
 * distributed one joins the job, e.g. the step time of data-parallel
 * ResNet-18 with its gradients all-reduced, with communication overlapping
 * backward or not (DT_KVSTORE_OVERLAP=1 or 0):
 *   dtrun -n 2 -s 0 -- nn_throughput --model resnet18 --kvstore allreduce --threads 1
 * Each worker prints its line, with "kvstore", "workers" and "overlap".
 *
 * --cifar DIR (with --model resnet18) feeds the steps from the CIFAR loader
 * instead (DIR's training files, as tests/examples/write_synthetic_cifar.py
 * DIR RECORDS writes them; random crop with padding 4 and flips, on the
 * loader's threads) through dt_trainer_fit, which stages each batch onto
 * the device while the step before computes: one warm-up epoch, then whole
 * epochs covering at least --steps steps. Its line says "input":"cifar-loader"
 * (else "synthetic"); the ratio of the two lines is how much of the step
 * rate the input pipeline keeps.
 *
 * peak_bytes is the most the context's allocator held at once over the run
 * (parameters, optimizer state, the batch, a step's activations and
 * scratch), from dt_context_memory_stats: the figure torch.cuda.
 * max_memory_allocated gives for the peer's run. cached_bytes is what the
 * allocator kept for reuse at the end (0 on the CPU).
 *
 * Compare with bench/peers/torch_nn_throughput.py run in the same session:
 * these machines drift +-25% between runs, ratios are what count.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dt_c_api.h"

#define CHECK(call)                                                                         \
  do {                                                                                      \
    dt_status s_ = (call);                                                                  \
    if (s_ != DT_OK) {                                                                      \
      fprintf(stderr, "%s: %s: %s\n", #call, dt_status_string(s_), dt_last_error());        \
      exit(1);                                                                              \
    }                                                                                       \
  } while (0)

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Deterministic pseudo-random inputs: the speed does not depend on values. */
static void fill_random(float *data, size_t n, unsigned seed) {
  size_t i;
  for (i = 0; i < n; ++i) {
    seed = seed * 1664525u + 1013904223u;
    data[i] = (float)((seed >> 8) & 0xffff) / 65536.0f - 0.5f;
  }
}

/* The last step's updates may still be queued on a GPU's stream: a copy of
 * a parameter to the host waits for them, so the timing covers them. */
static void wait_for_net(const dt_net *net) {
  dt_ndarray *param;
  size_t bytes;
  void *host;
  CHECK(dt_net_param(&param, net, 0));
  CHECK(dt_ndarray_nbytes(&bytes, param));
  host = malloc(bytes);
  CHECK(dt_ndarray_copy_to_host(host, bytes, param));
  free(host);
  dt_ndarray_free(param);
}

/* Trains from the CIFAR loader in DIR: one warm-up epoch, then whole epochs
 * of at least `steps` steps; images per second of those. */
static double run_from_loader(dt_trainer *trainer, const dt_net *net, const char *dir, int64_t batch, int steps) {
  dt_data_loader *loader;
  dt_data_loader_options lo;
  dt_fit_options fo;
  size_t batches;
  int epochs;
  double start;
  CHECK(dt_data_loader_options_init(&lo, sizeof lo));
  lo.batch_size = batch;
  lo.last_batch = DT_LAST_BATCH_DISCARD;
  lo.random_crop_padding = 4;
  lo.random_flip = 1;
  CHECK(dt_data_loader_create_cifar(&loader, dir, "train", 10, &lo));
  CHECK(dt_data_loader_num_batches(&batches, loader));
  if (batches == 0) {
    fprintf(stderr, "nn_throughput: %s holds less than one batch of %d\n", dir, (int)batch);
    exit(1);
  }
  epochs = (int)(((size_t)steps + batches - 1) / batches);
  CHECK(dt_fit_options_init(&fo, sizeof fo));
  fo.progress = 2;
  fo.epochs = 1;
  CHECK(dt_trainer_fit(trainer, loader, NULL, &fo));
  wait_for_net(net);
  start = now_seconds();
  fo.epochs = 1 + epochs;
  CHECK(dt_trainer_fit(trainer, loader, NULL, &fo));
  wait_for_net(net);
  start = now_seconds() - start;
  dt_data_loader_free(loader);
  return (double)((int64_t)batches * epochs * batch) / start;
}

/* Steps on one synthetic batch already on the device; images per second. */
static double run_synthetic(dt_trainer *trainer, const dt_net *net, dt_context *ctx, int64_t batch,
                            const int64_t *sample, int warmup, int steps) {
  dt_ndarray *data, *labels;
  int64_t dims[4] = {batch, sample[0], sample[1], sample[2]};
  size_t n = (size_t)(batch * sample[0] * sample[1] * sample[2]);
  float *host = malloc(n * sizeof(float));
  int32_t *host_labels = malloc((size_t)batch * sizeof(int32_t));
  double start, seconds;
  int64_t i;
  fill_random(host, n, 7);
  for (i = 0; i < batch; ++i) host_labels[i] = (int32_t)(i % 10);
  CHECK(dt_ndarray_create(&data, ctx, DT_FLOAT32, dims, 4));
  CHECK(dt_ndarray_create(&labels, ctx, DT_INT32, &batch, 1));
  CHECK(dt_ndarray_copy_from_host(data, host, n * sizeof(float)));
  CHECK(dt_ndarray_copy_from_host(labels, host_labels, (size_t)batch * sizeof(int32_t)));

  for (i = 0; i < warmup; ++i) CHECK(dt_trainer_train_batch(NULL, NULL, trainer, data, labels));
  wait_for_net(net);
  start = now_seconds();
  for (i = 0; i < steps; ++i) CHECK(dt_trainer_train_batch(NULL, NULL, trainer, data, labels));
  wait_for_net(net);
  seconds = now_seconds() - start;

  dt_ndarray_free(labels);
  dt_ndarray_free(data);
  free(host_labels);
  free(host);
  return (double)(batch * steps) / seconds;
}

/* One model's run: its speed and its allocator's memory at the end. */
typedef struct run_result {
  double images_per_s;
  dt_memory_stats memory;
} run_result;

static run_result run(dt_device_type device, dt_dtype compute, const char *model, const char *options, int64_t batch,
                      const int64_t *sample, int threads, int warmup, int steps, dt_kvstore *kv, const char *cifar) {
  dt_context *ctx;
  dt_net *net;
  dt_optimizer *opt;
  dt_trainer *trainer;
  run_result result;
  CHECK(dt_context_create(&ctx, device, 0));
  CHECK(dt_context_set_num_threads(ctx, threads));
  CHECK(dt_net_create(&net, ctx, model, options));
  CHECK(dt_net_set_compute_dtype(net, compute));
  CHECK(dt_net_initialize(net, 1));
  CHECK(dt_optimizer_create(&opt, "sgd"));
  CHECK(dt_optimizer_set_double(opt, "learning_rate", 0.01));
  CHECK(dt_optimizer_set_double(opt, "momentum", 0.9));
  CHECK(dt_trainer_create(&trainer, net, opt, kv, NULL));
  result.images_per_s = cifar != NULL ? run_from_loader(trainer, net, cifar, batch, steps)
                                       : run_synthetic(trainer, net, ctx, batch, sample, warmup, steps);
  CHECK(dt_memory_stats_init(&result.memory, sizeof result.memory));
  CHECK(dt_context_memory_stats(&result.memory, ctx));
  dt_trainer_free(trainer);
  dt_optimizer_free(opt);
  dt_net_free(net);
  dt_context_free(ctx);
  return result;
}

/* Whether the device can be used, saying why not on stderr. */
static int device_usable(dt_device_type device) {
  dt_context *ctx;
  dt_status status;
  if (device == DT_DEVICE_CPU) return 1;
  status = dt_context_create(&ctx, device, 0);
  if (status != DT_OK) {
    fprintf(stderr, "nn_throughput: --device gpu needs GPU 0: %s: %s\n", dt_status_string(status), dt_last_error());
    return 0;
  }
  dt_context_free(ctx);
  return 1;
}

static void report(FILE *json, const char *model, const char *device, const char *precision, int64_t batch,
                   int threads, run_result result, dt_kvstore *kv, const char *input) {
  char line[512], store[192] = "";
  /* The activation layout the library's nets ran in (DT_CONV_LAYOUT). */
  const char *layout_env = getenv("DT_CONV_LAYOUT");
  const char *layout = layout_env != NULL && strcmp(layout_env, "NHWC") == 0 ? "NHWC" : "NCHW";
  if (kv != NULL) {
    const char *type = "";
    int32_t rank = 0, workers = 1;
    const char *overlap = getenv("DT_KVSTORE_OVERLAP");
    CHECK(dt_kvstore_type(&type, kv));
    CHECK(dt_kvstore_rank(&rank, kv));
    CHECK(dt_kvstore_num_workers(&workers, kv));
    snprintf(store, sizeof store, ",\"kvstore\":\"%s\",\"rank\":%d,\"workers\":%d,\"overlap\":%s", type,
             (int)rank, (int)workers, overlap != NULL && strcmp(overlap, "0") == 0 ? "0" : "1");
  }
  snprintf(line, sizeof line,
           "{\"model\":\"%s\",\"device\":\"%s\",\"precision\":\"%s\",\"batch\":%d,\"threads\":%d,"
           "\"input\":\"%s\",\"layout\":\"%s\",\"images_per_s\":%.3f,\"peak_bytes\":%llu,\"cached_bytes\":%llu%s}\n",
           model, device, precision, (int)batch, threads, input, layout, result.images_per_s,
           (unsigned long long)result.memory.peak_bytes, (unsigned long long)result.memory.cached_bytes, store);
  fputs(line, stdout);
  if (json) fputs(line, json);
}

int main(int argc, char **argv) {
  int threads = 2, steps = 0, warmup = -1, i, on_gpu; /* warmup < 0: the device's default */
  long long batch = 0;
  const char *which = "all";
  const char *device_name = "cpu";
  dt_device_type device = DT_DEVICE_CPU;
  const char *precision = "fp32";
  dt_dtype compute = DT_FLOAT32;
  const char *json_path = NULL;
  const char *kvstore = NULL;
  const char *cifar_dir = NULL;
  dt_kvstore *kv = NULL;
  FILE *json = NULL;
  static const int64_t mnist[3] = {1, 28, 28};
  static const int64_t cifar[3] = {3, 32, 32};
  for (i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--threads") == 0) threads = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--steps") == 0) steps = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--warmup") == 0) warmup = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--model") == 0) which = argv[i + 1];
    else if (strcmp(argv[i], "--json") == 0) json_path = argv[i + 1];
    else if (strcmp(argv[i], "--device") == 0) device_name = argv[i + 1];
    else if (strcmp(argv[i], "--precision") == 0) precision = argv[i + 1];
    else if (strcmp(argv[i], "--batch") == 0) batch = atoll(argv[i + 1]);
    else if (strcmp(argv[i], "--kvstore") == 0) kvstore = argv[i + 1];
    else if (strcmp(argv[i], "--cifar") == 0) cifar_dir = argv[i + 1];
    else {
      fprintf(stderr, "unknown option %s\n", argv[i]);
      return 2;
    }
  }
  if (strcmp(device_name, "cpu") == 0) {
    device = DT_DEVICE_CPU;
  } else if (strcmp(device_name, "gpu") == 0) {
    device = DT_DEVICE_GPU;
  } else {
    fprintf(stderr, "--device must be cpu or gpu, not %s\n", device_name);
    return 2;
  }
  if (strcmp(precision, "fp32") == 0) {
    compute = DT_FLOAT32;
  } else if (strcmp(precision, "fp16") == 0) {
    compute = DT_FLOAT16;
  } else if (strcmp(precision, "bf16") == 0) {
    compute = DT_BFLOAT16;
  } else {
    fprintf(stderr, "--precision must be fp32, fp16 or bf16, not %s\n", precision);
    return 2;
  }
  if (compute != DT_FLOAT32 && device != DT_DEVICE_GPU) {
    fprintf(stderr, "--precision %s is mixed precision, a GPU feature: add --device gpu\n", precision);
    return 2;
  }
  if (batch < 0) {
    fprintf(stderr, "--batch must be positive\n");
    return 2;
  }
  if (kvstore != NULL && strcmp(which, "all") == 0) {
    /* Both nets would init the same keys (parameter indices) in one store. */
    fprintf(stderr, "--kvstore needs one --model (lenet or resnet18)\n");
    return 2;
  }
  if (cifar_dir != NULL && strcmp(which, "resnet18") != 0) {
    fprintf(stderr, "--cifar feeds ResNet-18's 3x32x32 input: add --model resnet18\n");
    return 2;
  }
  if (!device_usable(device)) return 1;
  if (kvstore != NULL) CHECK(dt_kvstore_create_ex(&kv, kvstore, NULL));
  if (json_path != NULL && (json = fopen(json_path, "a")) == NULL) {
    perror(json_path);
    return 1;
  }
  on_gpu = device == DT_DEVICE_GPU;
  if (strcmp(which, "all") == 0 || strcmp(which, "lenet") == 0) {
    int64_t b = batch > 0 ? batch : 64;
    run_result r = run(device, compute, "lenet", NULL, b, mnist, threads, warmup >= 0 ? warmup : (on_gpu ? 10 : 3),
                     steps > 0 ? steps : (on_gpu ? 500 : 100), kv, NULL);
    report(json, "lenet", device_name, precision, b, threads, r, kv, "synthetic");
  }
  if (strcmp(which, "all") == 0 || strcmp(which, "resnet18") == 0) {
    int64_t b = batch > 0 ? batch : (on_gpu ? 128 : 32);
    run_result r = run(device, compute, "resnet18", "{\"input_shape\":[3,32,32],\"classes\":10}", b, cifar,
                     threads, warmup >= 0 ? warmup : (on_gpu ? 10 : 2), steps > 0 ? steps : (on_gpu ? 100 : 10), kv, cifar_dir);
    report(json, "resnet18", device_name, precision, b, threads, r, kv, cifar_dir ? "cifar-loader" : "synthetic");
  }
  if (json) fclose(json);
  dt_kvstore_free(kv);
  return 0;
}
