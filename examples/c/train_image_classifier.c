/*
 * train_image_classifier: the seeds' image-classification walkthrough (the
 * d2l multi-machine chapter, MXNet's image_classification.py): ResNet-18 or
 * VGG-11 on a CIFAR-10 (or CIFAR-100) binary directory, or on an MXNet
 * RecordIO image set (--data x.rec, from im2rec). By default: the
 * CIFAR ResNet-18 ("resnet18"), SGD with momentum and weight decay, the rate
 * cut by --lr-factor at the epochs listed in --lr-steps (a multi-step
 * schedule), random crop (padding 4) and horizontal flip on the training
 * set, CIFAR's per-channel normalisation. d2l's own recipe is
 *   --model resnet18_d2l --lr-period 4 --lr-decay 0.9
 * (its Residual blocks and its lr_period/lr_decay step schedule).
 *
 *   train_image_classifier --data DIR|FILE.rec [--val FILE.rec] [--variant 10|100] [--model NAME]
 *       [--epochs N] [--batch-size N] [--lr X] [--momentum X] [--wd X]
 *       [--lr-steps E1,E2,...] [--lr-factor X] [--lr-period E] [--lr-decay X]
 *       [--kvstore TYPE|none]
 *       [--threads N] [--loader-threads N] [--seed N] [--metrics FILE]
 *       [--no-augment] [--gpus LIST] [--cpus N] [--precision fp32|fp16|bf16]
 *
 * --gpus 0,1 trains on those GPUs, one replica each, every batch split
 * between them (--gpus 0,0: two replicas on one GPU; local: the GPU of
 * dtrun's local rank); --cpus N puts N replicas on the CPU; several
 * replicas without --kvstore reduce through Gluon's default store,
 * "device" ("local" for CPU replicas). --precision bf16 or fp16 (with
 * dynamic loss scaling) computes in 16 bits on the GPU (see device_flags.h).
 *
 * DIR holds data_batch_1.bin ... data_batch_5.bin and test_batch.bin (or
 * train.bin and test.bin for CIFAR-100), e.g. the cifar-10-batches-bin
 * folder of https://www.cs.toronto.edu/~kriz/cifar-10-binary.tar.gz.
 * A path ending in .rec is a RecordIO set instead (with the .idx beside it
 * when there is one): its images resized to 32x32, the class each record's
 * label, --variant the number of classes; --val FILE.rec the set to
 * evaluate on (without it, the training set itself).
 * Across machines, as parameter-server workers:
 *   dtrun -n 2 -s 2 -H hosts --launcher ssh -- train_image_classifier --data DIR --kvstore dist_sync
 * or without servers: dtrun -n 2 -s 0 -- ... --kvstore allreduce.
 * As in the Fashion-MNIST example, each worker trains on its part of the
 * data, --lr is the rate for the global batch (divided by the workers for
 * the synchronous stores, which sum), and only rank 0 evaluates and prints
 * test_accuracy=<fraction> last.
 */
#include <errno.h>
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

#define MAX_STEPS 16

typedef struct args {
  const char *data;
  int variant;
  const char *model;
  int epochs;
  long batch_size;
  double lr;
  double momentum;
  double wd;
  long lr_steps[MAX_STEPS];
  int num_lr_steps;
  double lr_factor;
  long lr_period;
  double lr_decay;
  const char *kvstore;
  int threads;
  long loader_threads;
  unsigned long long seed;
  const char *metrics;
  int augment;
  const char *val;
  device_flags devices;
} args;

static void usage(FILE *to) {
  fprintf(to,
          "usage: train_image_classifier --data DIR|FILE.rec [options]\n"
          "  --data DIR            CIFAR binary files (data_batch_*.bin, test_batch.bin)\n"
          "  --data FILE.rec       or an MXNet RecordIO image set (im2rec's .rec, and its .idx\n"
          "                        beside it when there is one), resized to 32x32\n"
          "  --val FILE.rec        with a .rec: the set to evaluate on (default: --data's)\n"
          "  --variant 10|100      CIFAR-10 (default) or CIFAR-100 (train.bin, test.bin);\n"
          "                        with a .rec, the number of classes\n"
          "  --model NAME          network (default resnet18): resnet18 (the CIFAR ResNet-18,\n"
          "                        bias-free convolutions, BatchNorm on the projections),\n"
          "                        resnet18_d2l (d2l's own, convolutions with bias and a\n"
          "                        plain 1x1 convolution shortcut), vgg11 (Gluon's model\n"
          "                        zoo), vgg11_bn_cifar (VGG-11 + BatchNorm, one Dense)\n"
          "  --epochs N            epochs (default 30)\n"
          "  --batch-size N        samples per batch per worker (default 128)\n"
          "  --lr X                SGD rate for the global batch (default 0.1)\n"
          "  --momentum X          SGD momentum (default 0.9)\n"
          "  --wd X                weight decay (default 5e-4)\n"
          "  --lr-steps E1,E2,...  epochs after which the rate is cut (default 15,25)\n"
          "  --lr-factor X         the cut (default 0.1)\n"
          "  --lr-period E         d2l's schedule instead: the rate is multiplied by\n"
          "                        --lr-decay every E epochs (d2l: 4)\n"
          "  --lr-decay X          with --lr-period (default 0.9, as d2l's)\n"
          "  --kvstore TYPE|none   local (default; device for several GPUs), dist_sync,\n"
          "                        allreduce, ...\n"
          "  --threads N           CPU threads (default: OMP_NUM_THREADS or all)\n"
          "  --loader-threads N    threads that decode and augment (default 0: the library's choice)\n"
          "  --seed N              initialisation, shuffling, augmentation (default 1)\n"
          "  --metrics FILE        JSON-lines metrics log, one line per epoch\n"
          "  --no-augment          no random crop or flip\n");
  device_flags_usage(to);
}

/* "15,25" into a->lr_steps; 0 on success. */
static int parse_steps(const char *text, args *a) {
  const char *p = text;
  a->num_lr_steps = 0;
  while (*p != '\0') {
    char *end = NULL;
    long v;
    errno = 0;
    v = strtol(p, &end, 10);
    if (end == p || errno != 0 || v <= 0 || a->num_lr_steps == MAX_STEPS) return -1;
    if (a->num_lr_steps > 0 && v <= a->lr_steps[a->num_lr_steps - 1]) return -1;
    a->lr_steps[a->num_lr_steps++] = v;
    if (*end == ',') ++end;
    else if (*end != '\0') return -1;
    p = end;
  }
  return 0;
}

/* Whether --data names a RecordIO file (its name ends in .rec). */
static int is_recordio(const char *path) {
  size_t n = strlen(path);
  return n > 4 && strcmp(path + n - 4, ".rec") == 0;
}

/* Parses argv into a; returns 0 on success, 1 for --help, -1 on error. */
static int parse_args(int argc, char **argv, args *a) {
  int i;
  for (i = 1; i < argc; ++i) {
    const char *flag = argv[i];
    const char *value = i + 1 < argc ? argv[i + 1] : NULL;
    char *end = NULL;
    if (strcmp(flag, "--help") == 0 || strcmp(flag, "-h") == 0) return 1;
    if (strcmp(flag, "--no-augment") == 0) {
      a->augment = 0;
      continue;
    }
    if (value == NULL) {
      fprintf(stderr, "error: %s needs a value\n", flag);
      return -1;
    }
    errno = 0;
    if (device_flags_take(&a->devices, flag, value)) { /* --gpus, --cpus, --precision: checked below */
    } else if (strcmp(flag, "--data") == 0) a->data = value;
    else if (strcmp(flag, "--val") == 0) a->val = value;
    else if (strcmp(flag, "--variant") == 0) a->variant = (int)strtol(value, &end, 10);
    else if (strcmp(flag, "--model") == 0) a->model = value;
    else if (strcmp(flag, "--epochs") == 0) a->epochs = (int)strtol(value, &end, 10);
    else if (strcmp(flag, "--batch-size") == 0) a->batch_size = strtol(value, &end, 10);
    else if (strcmp(flag, "--lr") == 0) a->lr = strtod(value, &end);
    else if (strcmp(flag, "--momentum") == 0) a->momentum = strtod(value, &end);
    else if (strcmp(flag, "--wd") == 0) a->wd = strtod(value, &end);
    else if (strcmp(flag, "--lr-factor") == 0) a->lr_factor = strtod(value, &end);
    else if (strcmp(flag, "--lr-period") == 0) a->lr_period = strtol(value, &end, 10);
    else if (strcmp(flag, "--lr-decay") == 0) a->lr_decay = strtod(value, &end);
    else if (strcmp(flag, "--kvstore") == 0) a->kvstore = value;
    else if (strcmp(flag, "--threads") == 0) a->threads = (int)strtol(value, &end, 10);
    else if (strcmp(flag, "--loader-threads") == 0) a->loader_threads = strtol(value, &end, 10);
    else if (strcmp(flag, "--seed") == 0) a->seed = strtoull(value, &end, 10);
    else if (strcmp(flag, "--metrics") == 0) a->metrics = value;
    else if (strcmp(flag, "--lr-steps") == 0) {
      if (parse_steps(value, a) != 0) {
        fprintf(stderr, "error: --lr-steps needs increasing positive epochs, e.g. 15,25\n");
        return -1;
      }
    } else {
      fprintf(stderr, "error: unknown option %s\n", flag);
      return -1;
    }
    if (end != NULL && (*end != '\0' || errno != 0)) {
      fprintf(stderr, "error: bad value '%s' for %s\n", value, flag);
      return -1;
    }
    ++i;
  }
  if (device_flags_check(&a->devices) != 0) return -1;
  if (a->data == NULL) {
    fprintf(stderr, "error: --data DIR is required (a CIFAR binary directory, or a RecordIO FILE.rec)\n");
    return -1;
  }
  if (a->val != NULL && !is_recordio(a->data)) {
    fprintf(stderr, "error: --val goes with a RecordIO --data FILE.rec\n");
    return -1;
  }
  if (a->variant != 10 && a->variant != 100) {
    fprintf(stderr, "error: --variant must be 10 or 100\n");
    return -1;
  }
  if (strcmp(a->model, "resnet18") != 0 && strcmp(a->model, "resnet18_d2l") != 0 &&
      strcmp(a->model, "vgg11") != 0 && strcmp(a->model, "vgg11_bn_cifar") != 0) {
    fprintf(stderr, "error: --model must be resnet18, resnet18_d2l, vgg11 or vgg11_bn_cifar\n");
    return -1;
  }
  if (a->lr_period < 0 || a->lr_decay <= 0 || a->lr_decay > 1) {
    fprintf(stderr, "error: --lr-period must not be negative, --lr-decay in (0, 1]\n");
    return -1;
  }
  if (a->epochs < 0 || a->batch_size <= 0 || a->threads < 0 || a->loader_threads < 0 || a->lr_factor <= 0 ||
      a->lr_factor > 1) {
    fprintf(stderr, "error: --epochs, --threads and --loader-threads must not be negative, --batch-size positive, "
                    "--lr-factor in (0, 1]\n");
    return -1;
  }
  return 0;
}

int main(int argc, char **argv) {
  args a = {NULL, 10, "resnet18", 30, 128, 0.1, 0.9, 5e-4, {15, 25}, 2, 0.1, 0, 0.9, NULL, 0, 0, 1, NULL, 1, NULL,
            {NULL, NULL, NULL}};
  device_contexts devices;
  dt_net *net = NULL;
  dt_optimizer *opt = NULL;
  dt_kvstore *kv = NULL;
  dt_data_loader *train = NULL, *test = NULL;
  dt_trainer *trainer = NULL;
  dt_data_loader_options loader_options;
  dt_trainer_options trainer_options;
  dt_fit_options fit_options;
  char net_options[96];
  double test_accuracy = 0.0, lr;
  int32_t rank = 0, num_workers = 1;
  size_t batches = 0;
  int64_t steps[MAX_STEPS];
  int i, rc = 1;
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
      CHECK(dt_node_run(NULL));
      return 0;
    }
  }
  /* The devices first: a GPU that is not there fails before anything else. */
  rc = device_contexts_create(&devices, &a.devices, a.threads);
  if (rc != 0) goto done;
  rc = 1;
  snprintf(net_options, sizeof net_options, "{\"input_shape\": [3, 32, 32], \"classes\": %d}", a.variant);
  CHECK(dt_net_create(&net, devices.contexts[0], a.model, net_options));
  rc = device_contexts_set_precision(&devices, net);
  if (rc != 0) goto done;
  rc = 1;
  CHECK(dt_net_initialize(net, a.seed));

  if (a.kvstore == NULL) a.kvstore = device_contexts_default_kvstore(&devices);
  if (strcmp(a.kvstore, "none") != 0) {
    const char *type = NULL;
    CHECK(dt_kvstore_create_ex(&kv, a.kvstore, NULL));
    CHECK(dt_kvstore_rank(&rank, kv));
    CHECK(dt_kvstore_num_workers(&num_workers, kv));
    CHECK(dt_kvstore_type(&type, kv));
    /* The synchronous distributed stores sum the workers' gradients. */
    lr = (strcmp(type, "dist_sync") == 0 || strcmp(type, "dist_sync_device") == 0 ||
          strcmp(type, "allreduce") == 0 || strcmp(type, "dist_nccl") == 0)
             ? a.lr / num_workers
             : a.lr;
  } else {
    lr = a.lr;
  }

  CHECK(dt_data_loader_options_init(&loader_options, sizeof loader_options));
  loader_options.batch_size = a.batch_size;
  loader_options.seed = a.seed;
  loader_options.num_parts = num_workers;
  loader_options.part_index = rank;
  loader_options.num_workers = a.loader_threads;
  loader_options.random_crop_padding = a.augment ? 4 : 0;
  loader_options.random_flip = a.augment;
  if (is_recordio(a.data)) {
    CHECK(dt_data_loader_create_recordio(&train, a.data, NULL, 32, 32, &loader_options));
  } else {
    CHECK(dt_data_loader_create_cifar(&train, a.data, "train", a.variant, &loader_options));
  }
  loader_options.shuffle = 0;
  loader_options.num_parts = 1;
  loader_options.part_index = 0;
  loader_options.random_crop_padding = 0;
  loader_options.random_flip = 0;
  if (is_recordio(a.data)) {
    CHECK(dt_data_loader_create_recordio(&test, a.val != NULL ? a.val : a.data, NULL, 32, 32, &loader_options));
  } else {
    CHECK(dt_data_loader_create_cifar(&test, a.data, "test", a.variant, &loader_options));
  }

  /* The rate drops by lr_factor after each listed epoch, or with --lr-period
   * by lr_decay every lr_period epochs (d2l's lr_period/lr_decay, MXNet's
   * FactorScheduler). The schedule counts updates, so epochs become steps of
   * this worker. */
  CHECK(dt_data_loader_num_batches(&batches, train));
  CHECK(dt_optimizer_create(&opt, "sgd"));
  CHECK(dt_optimizer_set_double(opt, "learning_rate", lr));
  CHECK(dt_optimizer_set_double(opt, "momentum", a.momentum));
  CHECK(dt_optimizer_set_double(opt, "wd", a.wd));
  if (a.lr_period > 0) {
    CHECK(dt_optimizer_set_string(opt, "lr_scheduler", "factor"));
    CHECK(dt_optimizer_set_int(opt, "step", (int64_t)a.lr_period * (int64_t)batches));
    CHECK(dt_optimizer_set_double(opt, "factor", a.lr_decay));
  } else if (a.num_lr_steps > 0) {
    for (i = 0; i < a.num_lr_steps; ++i) steps[i] = (int64_t)a.lr_steps[i] * (int64_t)batches;
    CHECK(dt_optimizer_set_string(opt, "lr_scheduler", "multifactor"));
    CHECK(dt_optimizer_set_int_list(opt, "steps", steps, (size_t)a.num_lr_steps));
    CHECK(dt_optimizer_set_double(opt, "factor", a.lr_factor));
  }

  CHECK(dt_trainer_options_init(&trainer_options, sizeof trainer_options));
  trainer_options.extra_contexts = device_contexts_extra(&devices);
  trainer_options.num_extra_contexts = devices.count - 1;
  CHECK(dt_trainer_create(&trainer, net, opt, kv, &trainer_options));
  if (rank == 0) {
    char source[512];
    if (is_recordio(a.data)) {
      snprintf(source, sizeof source, "%s (%d classes%s)", a.data, a.variant,
               a.val != NULL ? "" : ", evaluated on itself");
    } else {
      snprintf(source, sizeof source, "CIFAR-%d", a.variant);
    }
    printf("training %s on %s: %d epochs, %d worker(s) x batch %ld (%zu steps each), SGD lr %g momentum %g "
           "wd %g, kvstore %s%s, contexts %s, precision %s\n",
           a.model, source, a.epochs, (int)num_workers, a.batch_size, batches, lr, a.momentum, a.wd, a.kvstore,
           a.augment ? ", crop+flip" : "", devices.names, device_contexts_precision_name(&devices));
  }
  CHECK(dt_fit_options_init(&fit_options, sizeof fit_options));
  fit_options.epochs = a.epochs;
  if (rank == 0) {
    fit_options.metrics_path = a.metrics;
  } else {
    fit_options.progress = 2; /* silent: rank 0 speaks for the job */
  }
  CHECK(dt_trainer_fit(trainer, train, rank == 0 ? test : NULL, &fit_options));
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
