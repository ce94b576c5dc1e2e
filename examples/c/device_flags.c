/* See device_flags.h. */
#include "device_flags.h"

#include <string.h>

/* Larger ids are certainly no GPU of this machine; the bound keeps the
 * parse free of overflow, the check against dt_gpu_count says the rest. */
#define MAX_GPU_ID 1000000L

void device_flags_usage(FILE *to) {
  fprintf(to,
          "  --gpus LIST           GPU ids, e.g. 0 or 0,1 (0,0: two replicas on one GPU),\n"
          "                        one replica each, every batch split across them; local:\n"
          "                        the GPU of this worker's local rank; '' or absent: the CPU\n"
          "  --cpus N              N replicas on the CPU (default 1); not with a --gpus list\n"
          "  --precision P         fp32 (default), fp16 (with dynamic loss scaling) or bf16;\n"
          "                        16 bits need --gpus\n");
}

int device_flags_take(device_flags *flags, const char *flag, const char *value) {
  if (strcmp(flag, "--gpus") == 0) flags->gpus = value;
  else if (strcmp(flag, "--cpus") == 0) flags->cpus = value;
  else if (strcmp(flag, "--precision") == 0) flags->precision = value;
  else return 0;
  return 1;
}

/* A decimal number of digits only ("+1", " 1", "-1", "1x" are not), at
 * most max: its value, or -1. */
static long parse_count(const char *text, size_t length, long max) {
  long value = 0;
  size_t i;
  if (length == 0) return -1;
  for (i = 0; i < length; ++i) {
    if (text[i] < '0' || text[i] > '9') return -1;
    value = value * 10 + (text[i] - '0');
    if (value > max) return -1;
  }
  return value;
}

/* --gpus's text into ids (at most DEVICE_FLAGS_MAX_CONTEXTS); *count 0 for
 * the CPU, *local 1 for "local" (ids then unset). 0, or -1 after printing
 * why. */
static int parse_gpu_list(const char *text, long *ids, size_t *count, int *local) {
  const char *item = text;
  *count = 0;
  *local = strcmp(text, "local") == 0;
  if (*local || *text == '\0') return 0;
  for (;;) {
    const char *comma = strchr(item, ',');
    const size_t length = comma != NULL ? (size_t)(comma - item) : strlen(item);
    const long id = parse_count(item, length, MAX_GPU_ID);
    if (id < 0) {
      fprintf(stderr,
              "error: --gpus '%s': '%.*s' is not a GPU id; give ids 0, 1, ... separated by commas (e.g. 0,1), "
              "local, or '' for the CPU\n",
              text, (int)length, item);
      return -1;
    }
    if (*count == DEVICE_FLAGS_MAX_CONTEXTS) {
      fprintf(stderr, "error: --gpus '%s': more than %d GPUs\n", text, DEVICE_FLAGS_MAX_CONTEXTS);
      return -1;
    }
    ids[(*count)++] = id;
    if (comma == NULL) return 0;
    item = comma + 1;
  }
}

static dt_dtype precision_of(const char *text) {
  if (text == NULL || strcmp(text, "fp32") == 0) return DT_FLOAT32;
  return strcmp(text, "fp16") == 0 ? DT_FLOAT16 : DT_BFLOAT16;
}

int device_flags_check(const device_flags *flags) {
  long ids[DEVICE_FLAGS_MAX_CONTEXTS];
  size_t count = 0;
  int local = 0;
  /* --gpus '' is the CPU, as no --gpus is, so it goes with --cpus (as in
   * the Java, Scala and Go examples). */
  if (flags->gpus != NULL && flags->gpus[0] != '\0' && flags->cpus != NULL) {
    fprintf(stderr, "error: --cpus and --gpus do not go together: replicas on the CPU, or on GPUs\n");
    return -1;
  }
  if (flags->gpus != NULL && parse_gpu_list(flags->gpus, ids, &count, &local) != 0) return -1;
  if (flags->cpus != NULL && parse_count(flags->cpus, strlen(flags->cpus), DEVICE_FLAGS_MAX_CONTEXTS) < 1) {
    fprintf(stderr, "error: --cpus '%s': give a number of CPU replicas from 1 to %d\n", flags->cpus,
            DEVICE_FLAGS_MAX_CONTEXTS);
    return -1;
  }
  if (flags->precision != NULL && strcmp(flags->precision, "fp32") != 0 && strcmp(flags->precision, "fp16") != 0 &&
      strcmp(flags->precision, "bf16") != 0) {
    fprintf(stderr, "error: --precision '%s': give fp32, fp16 or bf16\n", flags->precision);
    return -1;
  }
  return 0;
}

/* Appends "gpu(3)" or "cpu(0)" (comma-separated) to contexts->names. */
static void name_context(device_contexts *contexts, int on_gpu, long id) {
  const size_t used = strlen(contexts->names);
  snprintf(contexts->names + used, sizeof contexts->names - used, "%s%s(%ld)", used > 0 ? "," : "",
           on_gpu ? "gpu" : "cpu", id);
}

int device_contexts_create(device_contexts *out, const device_flags *flags, int num_threads) {
  long ids[DEVICE_FLAGS_MAX_CONTEXTS];
  size_t count = 0, i;
  int local = 0;
  memset(out, 0, sizeof *out);
  out->precision = precision_of(flags->precision);
  if (flags->gpus != NULL && parse_gpu_list(flags->gpus, ids, &count, &local) != 0) return 2;
  if (local) {
    int32_t local_rank = 0;
    if (dt_node_local_rank(&local_rank, NULL) != DT_OK) {
      fprintf(stderr, "error: --gpus local: %s\n", dt_last_error());
      return 1;
    }
    ids[0] = local_rank;
    count = 1;
  }
  out->on_gpu = count > 0;
  if (out->on_gpu) {
    int32_t available = 0;
    if (dt_gpu_count(&available) != DT_OK) {
      fprintf(stderr, "error: counting the GPUs: %s\n", dt_last_error());
      return 1;
    }
    for (i = 0; i < count; ++i) {
      if (ids[i] >= available) {
        fprintf(stderr, "--gpus: GPU %ld was asked for, but this machine has %d GPU(s)\n", ids[i], (int)available);
        if (local) fprintf(stderr, "(--gpus local: GPU %ld is this worker's local rank)\n", ids[i]);
        return 2;
      }
    }
  } else {
    const long replicas =
        flags->cpus != NULL ? parse_count(flags->cpus, strlen(flags->cpus), DEVICE_FLAGS_MAX_CONTEXTS) : 1;
    if (replicas < 1) { /* device_flags_check refused it already; never a wrapped count */
      fprintf(stderr, "error: --cpus '%s': give a number of CPU replicas from 1 to %d\n", flags->cpus,
              DEVICE_FLAGS_MAX_CONTEXTS);
      return 2;
    }
    count = (size_t)replicas;
    for (i = 0; i < count; ++i) ids[i] = 0; /* one CPU, as MXNet's cpu(i) all are */
  }
  for (i = 0; i < count; ++i) {
    dt_status status = dt_context_create(&out->contexts[i], out->on_gpu ? DT_DEVICE_GPU : DT_DEVICE_CPU,
                                         (int32_t)ids[i]);
    if (status == DT_OK && !out->on_gpu) status = dt_context_set_num_threads(out->contexts[i], num_threads);
    if (status != DT_OK) {
      fprintf(stderr, "error: %s: %s\n", dt_status_string(status), dt_last_error());
      out->count = out->contexts[i] != NULL ? i + 1 : i;
      return 1;
    }
    out->count = i + 1;
    name_context(out, out->on_gpu, ids[i]);
  }
  return 0;
}

void device_contexts_free(device_contexts *contexts) {
  size_t i;
  for (i = 0; i < contexts->count; ++i) dt_context_free(contexts->contexts[i]);
  contexts->count = 0;
}

const dt_context *const *device_contexts_extra(const device_contexts *contexts) {
  return contexts->count > 1 ? (const dt_context *const *)&contexts->contexts[1] : NULL;
}

const char *device_contexts_default_kvstore(const device_contexts *contexts) {
  return contexts->count > 1 && contexts->on_gpu ? "device" : "local";
}

int device_contexts_set_precision(const device_contexts *contexts, dt_net *net) {
  dt_status status;
  if (contexts->precision == DT_FLOAT32) return 0;
  status = dt_net_set_compute_dtype(net, contexts->precision);
  if (status == DT_ERR_NOT_SUPPORTED) {
    fprintf(stderr, "error: --precision %s: %s; 16-bit training needs --gpus\n",
            device_contexts_precision_name(contexts), dt_last_error());
    return 2;
  }
  if (status != DT_OK) {
    fprintf(stderr, "error: %s: %s\n", dt_status_string(status), dt_last_error());
    return 1;
  }
  return 0;
}

const char *device_contexts_precision_name(const device_contexts *contexts) {
  switch (contexts->precision) {
    case DT_FLOAT16: return "fp16";
    case DT_BFLOAT16: return "bf16";
    default: return "fp32";
  }
}
