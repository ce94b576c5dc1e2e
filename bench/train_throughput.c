/*
 * train_throughput: images/s of whole training epochs on Fashion-MNIST
 * (data loading, forward/backward, kvstore and optimizer included) and the
 * share of the epoch spent outside forward/backward, read from the metrics
 * log that dt_trainer_fit writes. One JSON line per epoch:
 *   {"model":"lenet","batch":64,"kvstore":"local","epoch":1,"images_per_s":...,
 *    "outside_compute_fraction":...}
 *
 *   train_throughput [--model lenet|mlp] [--epochs N] [--batch-size N]
 *                    [--kvstore TYPE|none] [--threads N] [--data DIR]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dt_c_api.h"

#define CHECK(call)                                                                         \
  do {                                                                                      \
    dt_status s_ = (call);                                                                  \
    if (s_ != DT_OK) {                                                                      \
      fprintf(stderr, "%s: %s: %s\n", #call, dt_status_string(s_), dt_last_error());        \
      exit(1);                                                                              \
    }                                                                                       \
  } while (0)

/* The number after "key": in a JSON line, or -1. */
static double json_number(const char *line, const char *key) {
  char pattern[64];
  const char *at;
  snprintf(pattern, sizeof pattern, "\"%s\":", key);
  at = strstr(line, pattern);
  return at ? atof(at + strlen(pattern)) : -1.0;
}

int main(int argc, char **argv) {
  const char *model = "lenet", *kvstore = "local", *data_dir = NULL;
  int epochs = 1, threads = 2, i;
  long batch = 64;
  char metrics_path[] = "/tmp/dt-train-throughput-XXXXXX";
  char line[1024];
  dt_context *cpu;
  dt_net *net;
  dt_optimizer *opt;
  dt_kvstore *kv = NULL;
  dt_data_loader *train;
  dt_trainer *trainer;
  dt_data_loader_options lo;
  dt_fit_options fo;
  FILE *metrics;
  int fd;
  for (i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--model") == 0) model = argv[i + 1];
    else if (strcmp(argv[i], "--epochs") == 0) epochs = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--batch-size") == 0) batch = atol(argv[i + 1]);
    else if (strcmp(argv[i], "--kvstore") == 0) kvstore = argv[i + 1];
    else if (strcmp(argv[i], "--threads") == 0) threads = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--data") == 0) data_dir = argv[i + 1];
    else {
      fprintf(stderr, "unknown option %s\n", argv[i]);
      return 2;
    }
  }
  fd = mkstemp(metrics_path);
  if (fd < 0) {
    perror("mkstemp");
    return 1;
  }
  close(fd);

  CHECK(dt_context_create(&cpu, DT_DEVICE_CPU, 0));
  CHECK(dt_context_set_num_threads(cpu, threads));
  CHECK(dt_net_create(&net, cpu, model, NULL));
  CHECK(dt_net_initialize(net, 1));
  CHECK(dt_optimizer_create(&opt, "sgd"));
  CHECK(dt_optimizer_set_double(opt, "learning_rate", 0.05));
  CHECK(dt_optimizer_set_double(opt, "momentum", 0.9));
  if (strcmp(kvstore, "none") != 0) CHECK(dt_kvstore_create(&kv, kvstore));
  CHECK(dt_data_loader_options_init(&lo, sizeof lo));
  lo.batch_size = batch;
  CHECK(dt_data_loader_create_mnist(&train, data_dir, "train", &lo));
  CHECK(dt_trainer_create(&trainer, net, opt, kv, NULL));
  CHECK(dt_fit_options_init(&fo, sizeof fo));
  fo.epochs = epochs;
  fo.metrics_path = metrics_path;
  fo.progress = 2;
  CHECK(dt_trainer_fit(trainer, train, NULL, &fo));

  metrics = fopen(metrics_path, "r");
  while (metrics != NULL && fgets(line, sizeof line, metrics) != NULL) {
    printf("{\"model\":\"%s\",\"batch\":%ld,\"threads\":%d,\"kvstore\":\"%s\",\"epoch\":%d,"
           "\"images_per_s\":%.1f,\"seconds\":%.2f,\"outside_compute_fraction\":%.4f}\n",
           model, batch, threads, kvstore, (int)json_number(line, "epoch"), json_number(line, "images_per_s"),
           json_number(line, "seconds"), 1.0 - json_number(line, "compute_fraction"));
  }
  if (metrics != NULL) fclose(metrics);
  unlink(metrics_path);
  dt_trainer_free(trainer);
  dt_data_loader_free(train);
  dt_kvstore_free(kv);
  dt_optimizer_free(opt);
  dt_net_free(net);
  dt_context_free(cpu);
  return 0;
}
