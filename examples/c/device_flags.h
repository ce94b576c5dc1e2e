/*
 * device_flags: the devices a C training example runs on, with MXNet's
 * meaning, shared by train_fashion_mnist and train_image_classifier.
 *
 *   --gpus LIST        GPU ids, comma-separated, duplicates allowed ("0,1",
 *                      "0,0": two replicas on one GPU); "" or absent: the
 *                      CPU; "local": the GPU numbered by this worker's local
 *                      rank (dt_node_local_rank: dtrun's DT_LOCAL_RANK, 0
 *                      outside a launcher)
 *   --cpus N           N replicas on the CPU (default 1), MXNet's
 *                      ctx=[mx.cpu(i) for i in range(N)]; not with --gpus
 *   --precision P      fp32 (default), fp16 (dynamic loss scaling) or bf16
 *
 * Several contexts: the net lives on the first, the others are the
 * trainer's extra_contexts, which split every batch as split_and_load does.
 * Errors in these flags are usage errors: the examples exit with status 2.
 */
#ifndef DT_EXAMPLES_DEVICE_FLAGS_H
#define DT_EXAMPLES_DEVICE_FLAGS_H

#include <stddef.h>
#include <stdio.h>

#include "dt_c_api.h"

/* Replicas one process may ask for (--gpus items or --cpus). */
#define DEVICE_FLAGS_MAX_CONTEXTS 64

/* The text of the three flags as given (NULL: not given). */
typedef struct device_flags {
  const char *gpus;
  const char *cpus;
  const char *precision;
} device_flags;

/* The usage lines of the three flags, for an example's --help. */
void device_flags_usage(FILE *to);

/* If flag is --gpus, --cpus or --precision, keeps value and returns 1;
 * returns 0 for any other flag. */
int device_flags_take(device_flags *flags, const char *flag, const char *value);

/* Checks the flags' syntax once argv is parsed (before any device is
 * touched, so a scheduler or server started with the same command line
 * never looks for a GPU): 0, or -1 after printing why. */
int device_flags_check(const device_flags *flags);

/* The contexts a worker trains on, and the dtype its net computes in. */
typedef struct device_contexts {
  dt_context *contexts[DEVICE_FLAGS_MAX_CONTEXTS];
  size_t count;
  int on_gpu;          /* 1: GPUs, 0: the CPU */
  dt_dtype precision;  /* DT_FLOAT32, DT_FLOAT16 or DT_BFLOAT16 */
  char names[DEVICE_FLAGS_MAX_CONTEXTS * 12]; /* "gpu(0),gpu(0)", "cpu(0)" */
} device_contexts;

/* Creates the contexts of checked flags: resolves "local", checks every
 * GPU id against dt_gpu_count, sets num_threads (0: the library's default)
 * on CPU contexts. Returns 0; 2 after printing
 * "--gpus: GPU 3 was asked for, but this machine has 1 GPU(s)" (nothing
 * is created); 1 after printing a library error. *out is always safe to
 * pass to device_contexts_free. */
int device_contexts_create(device_contexts *out, const device_flags *flags, int num_threads);
void device_contexts_free(device_contexts *contexts);

/* The replicas besides the first, as dt_trainer_options.extra_contexts. */
const dt_context *const *device_contexts_extra(const device_contexts *contexts);

/* The kvstore when --kvstore is not given: Gluon's "device" for several
 * GPU replicas, "local" for one replica or several on the CPU (the
 * library's "device" store reduces on a GPU and has none there; the
 * trainer's own store makes the same choice). */
const char *device_contexts_default_kvstore(const device_contexts *contexts);

/* Sets the net's compute dtype to the precision asked for (fp16 turns on
 * the library's dynamic loss scaling). Returns 0; 2 after printing why the
 * library refused it (fp16 or bf16 on the CPU); 1 on another error. */
int device_contexts_set_precision(const device_contexts *contexts, dt_net *net);

/* "fp32", "fp16" or "bf16". */
const char *device_contexts_precision_name(const device_contexts *contexts);

#endif /* DT_EXAMPLES_DEVICE_FLAGS_H */
