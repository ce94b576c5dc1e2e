/*
 * train_fashion_mnist: trains LeNet (or an MLP, or ResNet-18) on
 * Fashion-MNIST through the C API, the way MXNet Gluon users do with
 * gluon.Trainer and kv.create().
 *
 *   train_fashion_mnist [--model lenet|mlp|resnet18] [--epochs N] [--batch-size N]
 *                       [--lr X] [--momentum X] [--kvstore TYPE|none]
 *                       [--compression SPEC] [--sync-mode MODE]
 *                       [--data DIR] [--metrics FILE] [--checkpoint FILE]
 *                       [--checkpoint-dir DIR]
 *                       [--resume FILE] [--seed N] [--threads N]
 *                       [--gpus LIST] [--cpus N] [--precision fp32|fp16|bf16]
 *                       [--help]
 *
 * Prints per-epoch progress; the last line is test_accuracy=<fraction>.
 * --metrics writes each epoch's training seconds and test accuracy, from
 * which bench/time_to_accuracy.sh reads the seconds to a test accuracy.
 *
 * --model resnet18 is the model zoo's CIFAR ResNet-18 built for this data's
 * shape: its 3x3 stem convolution reads one channel of 28x28 (the stages and
 * global pooling take any size), so only the stem's weight differs from the
 * 3-channel net, 64x1x3x3 in place of 64x3x3x3.
 *
 * --gpus 0,1 trains on those GPUs, one replica each, every batch split
 * between them as Gluon's split_and_load does (--gpus 0,0: two replicas on
 * one GPU); --cpus N puts N replicas on the CPU (see device_flags.h). With
 * several replicas and no --kvstore the store is Gluon's default, "device"
 * (on GPUs; "local" for CPU replicas). --precision fp16|bf16 computes in
 * 16 bits on the GPU (fp16 with dynamic loss scaling).
 *
 * With --kvstore dist_sync or dist_async this process is one worker of a
 * parameter-server job described by the DMLC_* environment (scheduler and
 * servers run dt-node); with --kvstore allreduce, of a job without servers
 * whose workers all-reduce among themselves (dtrun -n N -s 0). Each worker
 * trains on its rank-th part of the training set with --batch-size samples
 * per step; only rank 0 evaluates, prints and writes checkpoints, and each
 * worker writes its own metrics log (rank r > 0 beside rank 0's, as
 * FILE-worker<r>.EXT), so its curve can be drawn next to the others.
 *
 * --lr is the rate single-machine training would use for the job's global
 * batch (workers x batch size). As in MXNet, every worker rescales its
 * gradient by 1/its batch and dist_sync servers sum the workers' gradients,
 * so with dist_sync (and the all-reduce stores, which sum too) the example
 * hands the trainer lr / num_workers. With
 * dist_async every push is its own update and the rate stays as given.
 *
 * --compression (dist types) compresses what the workers push, as MXNet's
 * kv.set_gradient_compression: e.g. 2bit (threshold 0.5), 1bit, fp16,
 * topk:fraction=0.01 (see dt_kvstore_set_gradient_compression). The
 * trainer puts a 2bit/1bit/threshold threshold on the scale of one
 * sample's gradient (its pushes are batch sums: gradient_scale
 * 1/sqrt(batch size)), so MXNet's 0.5 learns (README: batch 32 and 64).
 *
 * --sync-mode picks SINGA DistOpt's step (see dt_sync_mode):
 *   full                 the gradients reduced in full (the default)
 *   half                 the gradients travel as float16
 *   partial[:chunk=N]    every worker updates with its own gradients, then
 *                        one chunk of about N weights (default 2097152) is
 *                        averaged across the workers, a different one each
 *                        step; each worker steps with the full --lr, as it
 *                        applies its own batch's gradient alone, and rank 0
 *                        evaluates its own weights
 *   sparse[:topk=F|threshold=T][,accumulate=on|off]
 *                        only significant gradient elements travel: those
 *                        with |g| >= T (default 0.05) or the fraction F of
 *                        largest |g|; with accumulation (the default) what
 *                        was not sent joins the next step's gradient
 * Half and sparse set the store's compression themselves: with
 * --compression too, the two must agree.
 */
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device_flags.h"
#include "dt_c_api.h"

#define CHECK(call)                                                        \
  do {                                                                     \
    dt_status status_ = (call);                                            \
    if (status_ != DT_OK) {                                                \
      fprintf(stderr, "error: %s: %s\n", dt_status_string(status_),        \
              dt_last_error());                                            \
      goto done;                                                           \
    }                                                                      \
  } while (0)

typedef struct args {
  const char *model;
  int epochs;
  long batch_size;
  double lr;
  double momentum;
  const char *kvstore;
  const char *compression;
  const char *sync_mode;
  const char *data;
  const char *metrics;
  const char *checkpoint;
  const char *checkpoint_dir;
  const char *resume;
  unsigned long long seed;
  int threads;
  device_flags devices;
} args;

static void usage(FILE *to) {
  fprintf(to,
          "usage: train_fashion_mnist [options]\n"
          "  --model NAME          lenet (default), mlp, or resnet18 (one-channel stem)\n"
          "  --epochs N            epochs to train (default 5)\n"
          "  --batch-size N        samples per batch (default 64)\n"
          "  --lr X                SGD learning rate (default 0.02)\n"
          "  --momentum X          SGD momentum (default 0.9)\n"
          "  --kvstore TYPE|none   kvstore type, e.g. local (default local; device for\n"
          "                        several GPUs)\n"
          "  --compression SPEC    dist types: compress pushes, e.g. 2bit:threshold=0.5\n"
          "  --sync-mode MODE      SINGA's step: full (default), half, partial[:chunk=N],\n"
          "                        sparse[:topk=F|threshold=T][,accumulate=on|off]\n"
          "  --data DIR            Fashion-MNIST IDX files (default "
          "/usr/share/datasets/fashion-mnist)\n"
          "  --metrics FILE        JSON-lines metrics log, one line per epoch (rank r > 0\n"
          "                        of a job: FILE-worker<r>.EXT, without test accuracy)\n"
          "  --checkpoint FILE     checkpoint written after every epoch\n"
          "  --checkpoint-dir DIR  the job's checkpoints, every worker's after every epoch;\n"
          "                        the same command restarts from the last epoch all\n"
          "                        workers finished\n"
          "  --resume FILE         continue from a checkpoint\n"
          "  --seed N              seed for initialisation and shuffling (default 1)\n"
          "  --threads N           CPU threads (default: OMP_NUM_THREADS or all)\n");
  device_flags_usage(to);
}

/* --sync-mode's text into the trainer options' sync fields (o comes from
 * dt_trainer_options_init); 0 on success, -1 (with a message) on error.
 * Ranges (a fraction above 1, a threshold of 0) are the library's to check. */
static int parse_sync_mode(const char *text, dt_trainer_options *o) {
  const char *fields = strchr(text, ':');
  size_t name_length = fields != NULL ? (size_t)(fields - text) : strlen(text);
  char field[64];
  if (fields != NULL) ++fields;
  if (strncmp(text, "full", name_length) == 0 && name_length == 4) o->sync_mode = DT_SYNC_FULL;
  else if (strncmp(text, "half", name_length) == 0 && name_length == 4) o->sync_mode = DT_SYNC_HALF;
  else if (strncmp(text, "partial", name_length) == 0 && name_length == 7) o->sync_mode = DT_SYNC_PARTIAL;
  else if (strncmp(text, "sparse", name_length) == 0 && name_length == 6) o->sync_mode = DT_SYNC_SPARSE;
  else {
    fprintf(stderr, "error: --sync-mode '%s': the mode is none of full, half, partial, sparse\n", text);
    return -1;
  }
  while (fields != NULL && *fields != '\0') {
    const char *comma = strchr(fields, ',');
    size_t length = comma != NULL ? (size_t)(comma - fields) : strlen(fields);
    char *value, *end = NULL;
    if (length >= sizeof field) length = sizeof field - 1;
    memcpy(field, fields, length);
    field[length] = '\0';
    fields = comma != NULL ? comma + 1 : NULL;
    value = strchr(field, '=');
    if (value == NULL) {
      fprintf(stderr, "error: --sync-mode '%s': '%s' is not name=value\n", text, field);
      return -1;
    }
    *value++ = '\0';
    errno = 0;
    if (o->sync_mode == DT_SYNC_PARTIAL && strcmp(field, "chunk") == 0) {
      unsigned long long chunk = strtoull(value, &end, 10);
      if (value[0] == '-' || chunk == 0 || (unsigned long long)(size_t)chunk != chunk) end = NULL;
      o->partial_chunk_elements = (size_t)chunk;
    } else if (o->sync_mode == DT_SYNC_SPARSE && (strcmp(field, "topk") == 0 || strcmp(field, "threshold") == 0)) {
      o->sparse_topk = strcmp(field, "topk") == 0;
      o->sparse_value = strtod(value, &end);
    } else if (o->sync_mode == DT_SYNC_SPARSE && strcmp(field, "accumulate") == 0) {
      if (strcmp(value, "on") == 0 || strcmp(value, "off") == 0) {
        o->sparse_no_accumulation = strcmp(value, "off") == 0;
        end = value + strlen(value);
      }
    } else {
      fprintf(stderr, "error: --sync-mode '%s': mode %.*s takes no field '%s'\n", text, (int)name_length, text,
              field);
      return -1;
    }
    if (end == NULL || end == value || *end != '\0' || errno != 0) {
      fprintf(stderr, "error: --sync-mode '%s': bad value '%s' for %s\n", text, value, field);
      return -1;
    }
  }
  return 0;
}

/* Parses argv into a; returns 0 on success, 1 for --help, -1 on error. */
static int parse_args(int argc, char **argv, args *a) {
  int i;
  for (i = 1; i < argc; ++i) {
    const char *flag = argv[i];
    const char *value = i + 1 < argc ? argv[i + 1] : NULL;
    char *end = NULL;
    if (strcmp(flag, "--help") == 0 || strcmp(flag, "-h") == 0) return 1;
    if (value == NULL) {
      fprintf(stderr, "error: %s needs a value\n", flag);
      return -1;
    }
    errno = 0;
    if (device_flags_take(&a->devices, flag, value)) { /* --gpus, --cpus, --precision: checked below */
    } else if (strcmp(flag, "--model") == 0) a->model = value;
    else if (strcmp(flag, "--epochs") == 0) a->epochs = (int)strtol(value, &end, 10);
    else if (strcmp(flag, "--batch-size") == 0) a->batch_size = strtol(value, &end, 10);
    else if (strcmp(flag, "--lr") == 0) a->lr = strtod(value, &end);
    else if (strcmp(flag, "--momentum") == 0) a->momentum = strtod(value, &end);
    else if (strcmp(flag, "--kvstore") == 0) a->kvstore = value;
    else if (strcmp(flag, "--compression") == 0) a->compression = value;
    else if (strcmp(flag, "--sync-mode") == 0) a->sync_mode = value;
    else if (strcmp(flag, "--data") == 0) a->data = value;
    else if (strcmp(flag, "--metrics") == 0) a->metrics = value;
    else if (strcmp(flag, "--checkpoint") == 0) a->checkpoint = value;
    else if (strcmp(flag, "--checkpoint-dir") == 0) a->checkpoint_dir = value;
    else if (strcmp(flag, "--resume") == 0) a->resume = value;
    else if (strcmp(flag, "--seed") == 0) a->seed = strtoull(value, &end, 10);
    else if (strcmp(flag, "--threads") == 0) a->threads = (int)strtol(value, &end, 10);
    else {
      fprintf(stderr, "error: unknown option %s\n", flag);
      return -1;
    }
    if (end != NULL && (*end != '\0' || errno != 0)) {
      fprintf(stderr, "error: bad value '%s' for %s\n", value, flag);
      return -1;
    }
    ++i;
  }
  if (strcmp(a->model, "lenet") != 0 && strcmp(a->model, "mlp") != 0 && strcmp(a->model, "resnet18") != 0) {
    fprintf(stderr, "error: --model must be lenet, mlp or resnet18\n");
    return -1;
  }
  if (a->epochs < 0 || a->batch_size <= 0 || a->threads < 0) {
    fprintf(stderr, "error: --epochs, --batch-size and --threads must not be negative\n");
    return -1;
  }
  if (device_flags_check(&a->devices) != 0) return -1;
  if (a->sync_mode != NULL) {
    dt_trainer_options check;
    if (dt_trainer_options_init(&check, sizeof check) != DT_OK || parse_sync_mode(a->sync_mode, &check) != 0) {
      return -1;
    }
  }
  return 0;
}

/* path with "-worker<rank>" before its extension ("m.jsonl" ->
 * "m-worker1.jsonl"; "m" -> "m-worker1"): each worker's own metrics log.
 * 0 when it does not fit in out. */
static int worker_metrics_path(char *out, size_t size, const char *path, int rank) {
  const char *slash = strrchr(path, '/');
  const char *dot = strrchr(path, '.');
  size_t stem = strlen(path);
  if (dot != NULL && dot > (slash != NULL ? slash + 1 : path)) stem = (size_t)(dot - path);
  const int n = snprintf(out, size, "%.*s-worker%d%s", (int)stem, path, rank, path + stem);
  return n > 0 && (size_t)n < size;
}

int main(int argc, char **argv) {
  args a = {"lenet", 5, 64, 0.02, 0.9, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 1, 0, {NULL, NULL, NULL}};
  device_contexts devices;
  dt_net *net = NULL;
  dt_optimizer *opt = NULL;
  dt_kvstore *kv = NULL;
  dt_data_loader *train = NULL, *test = NULL;
  dt_trainer *trainer = NULL;
  dt_data_loader_options loader_options;
  dt_trainer_options trainer_options;
  dt_fit_options fit_options;
  double test_accuracy = 0.0;
  char worker_metrics[4096];
  int32_t rank = 0, num_workers = 1;
  double lr;
  int rc = 1;
  int parsed = parse_args(argc, argv, &a);
  memset(&devices, 0, sizeof devices);
  if (parsed != 0) {
    usage(parsed > 0 ? stdout : stderr);
    return parsed > 0 ? 0 : 2;
  }

  {
    /* As an MXNet program does on import: launched as the job's scheduler or
     * one of its servers (DMLC_ROLE, or the other sources the job layout
     * reads), this process serves the job until it ends, then exits. So
     * launchers that run one command line for every role (MXNet's
     * tools/launch.py) work unchanged. */
    dt_role role = DT_ROLE_WORKER;
    CHECK(dt_node_role(&role));
    if (role != DT_ROLE_WORKER) {
      /* A server receives every message into a fresh allocation: keep glibc
       * from mapping, unmapping and trimming each one (page faults would
       * dominate large transfers). The library leaves process-wide malloc
       * settings to the program; dt-node makes the same choice. */
      if (role == DT_ROLE_SERVER) {
        mallopt(M_MMAP_THRESHOLD, 32 << 20);
        mallopt(M_TRIM_THRESHOLD, 1 << 30);
      }
      CHECK(dt_node_run(NULL));
      return 0;
    }
  }
  /* The devices first: a GPU that is not there fails before anything else. */
  rc = device_contexts_create(&devices, &a.devices, a.threads);
  if (rc != 0) goto done;
  rc = 1;
  /* lenet and mlp default to Fashion-MNIST's 1x28x28; resnet18 to CIFAR's 3x32x32. */
  CHECK(dt_net_create(&net, devices.contexts[0], a.model,
                      strcmp(a.model, "resnet18") == 0 ? "{\"input_shape\": [1, 28, 28]}" : NULL));
  rc = device_contexts_set_precision(&devices, net);
  if (rc != 0) goto done;
  rc = 1;
  CHECK(dt_net_initialize(net, a.seed));

  if (a.kvstore == NULL) a.kvstore = device_contexts_default_kvstore(&devices);
  if (strcmp(a.kvstore, "none") != 0) {
    CHECK(dt_kvstore_create_ex(&kv, a.kvstore, NULL));
    CHECK(dt_kvstore_rank(&rank, kv));
    CHECK(dt_kvstore_num_workers(&num_workers, kv));
    if (a.compression != NULL) CHECK(dt_kvstore_set_gradient_compression(kv, a.compression));
  }
  CHECK(dt_trainer_options_init(&trainer_options, sizeof trainer_options));
  trainer_options.extra_contexts = device_contexts_extra(&devices);
  trainer_options.num_extra_contexts = devices.count - 1;
  if (a.sync_mode != NULL && parse_sync_mode(a.sync_mode, &trainer_options) != 0) goto done;
  {
    /* The canonical name: --kvstore takes MXNet's names too ("dist"). */
    const char *type = "none";
    if (kv != NULL) CHECK(dt_kvstore_type(&type, kv));
    /* The synchronous distributed stores sum the workers' gradients: the
     * rate per worker keeps the step of one worker's batch. A partial step
     * sums no gradients: each worker applies its own at the full rate. */
    lr = (trainer_options.sync_mode != DT_SYNC_PARTIAL &&
          (strcmp(type, "dist_sync") == 0 || strcmp(type, "dist_sync_device") == 0 ||
           strcmp(type, "allreduce") == 0 || strcmp(type, "dist_nccl") == 0))
             ? a.lr / num_workers
             : a.lr;
  }
  CHECK(dt_optimizer_create(&opt, "sgd"));
  CHECK(dt_optimizer_set_double(opt, "learning_rate", lr));
  CHECK(dt_optimizer_set_double(opt, "momentum", a.momentum));

  CHECK(dt_data_loader_options_init(&loader_options, sizeof loader_options));
  loader_options.batch_size = a.batch_size;
  loader_options.seed = a.seed;
  /* Split sampler: every worker trains on its own part of the data. */
  loader_options.num_parts = num_workers;
  loader_options.part_index = rank;
  CHECK(dt_data_loader_create_mnist(&train, a.data, "train", &loader_options));
  loader_options.shuffle = 0;
  loader_options.batch_size = 1000;
  loader_options.num_parts = 1;
  loader_options.part_index = 0;
  CHECK(dt_data_loader_create_mnist(&test, a.data, "t10k", &loader_options));

  CHECK(dt_trainer_create(&trainer, net, opt, kv, &trainer_options));
  if (a.resume != NULL) {
    int32_t epoch = 0;
    CHECK(dt_trainer_load_checkpoint(trainer, a.resume));
    CHECK(dt_trainer_epoch(&epoch, trainer));
    printf("resumed from %s after epoch %d\n", a.resume, (int)epoch);
  }

  if (rank == 0) {
    printf("training %s on Fashion-MNIST: %d epochs, %d worker(s) x batch %ld, SGD lr %g momentum %g, kvstore %s, "
           "sync mode %s, contexts %s, precision %s\n",
           a.model, a.epochs, (int)num_workers, a.batch_size, lr, a.momentum, a.kvstore,
           a.sync_mode != NULL ? a.sync_mode : "full", devices.names, device_contexts_precision_name(&devices));
  }
  CHECK(dt_fit_options_init(&fit_options, sizeof fit_options));
  fit_options.epochs = a.epochs;
  fit_options.checkpoint_dir = a.checkpoint_dir; /* every worker */
  if (rank == 0) {
    fit_options.metrics_path = a.metrics;
    fit_options.checkpoint_path = a.checkpoint;
  } else {
    fit_options.progress = 2; /* silent: rank 0 speaks for the job */
    if (a.metrics != NULL) {
      if (!worker_metrics_path(worker_metrics, sizeof worker_metrics, a.metrics, rank)) {
        fprintf(stderr, "--metrics %s: the path is too long\n", a.metrics);
        goto done;
      }
      fit_options.metrics_path = worker_metrics;
    }
  }
  {
    const dt_status fitted = dt_trainer_fit(trainer, train, rank == 0 ? test : NULL, &fit_options);
    int32_t joined = 0;
    int64_t rounds_before = 0;
    if (fitted == DT_ERR_CLOSED && kv != NULL) {
      /* Started again in a lost worker's place (dtrun --max-restarts), it
       * found the job finished before letting it in: the job's work is
       * done, so this worker ends cleanly (a failure would have dtrun start
       * it again if another worker has not exited yet). */
      char why[512];
      snprintf(why, sizeof why, "%s", dt_last_error());
      if (dt_kvstore_joined_running_job(&joined, &rounds_before, kv) == DT_OK && joined) {
        fprintf(stderr, "%s: the job finished without this worker\n", why);
        rc = 0;
        goto done;
      }
    }
    CHECK(fitted);
  }
  if (rank == 0) {
    CHECK(dt_trainer_evaluate(&test_accuracy, NULL, trainer, test));
    printf("test_accuracy=%.4f\n", test_accuracy);
  }
  rc = 0;

done:
  dt_trainer_free(trainer);
  dt_data_loader_free(test);
  dt_data_loader_free(train);
  dt_kvstore_free(kv);
  dt_optimizer_free(opt);
  dt_net_free(net);
  device_contexts_free(&devices);
  return rc;
}
