/*
 * hello_ndarray: the C API in one page. Creates a CPU context and arrays,
 * does arithmetic, saves the arrays to a safetensors file, reads them back
 * and prints what this build of disttrain was compiled with.
 *
 *   hello_ndarray [FILE]     (default: hello_ndarray.safetensors)
 */
#include <stdio.h>
#include <string.h>

#include "dt_c_api.h"

/* Prints the failing call with the library's message and leaves main. */
#define CHECK(call)                                                        \
  do {                                                                     \
    dt_status status_ = (call);                                            \
    if (status_ != DT_OK) {                                                \
      fprintf(stderr, "%s failed: %s: %s\n", #call,                        \
              dt_status_string(status_), dt_last_error());                 \
      goto done;                                                           \
    }                                                                      \
  } while (0)

static void print_row(const char *label, const float *values, size_t count) {
  size_t i;
  printf("%-10s", label);
  for (i = 0; i < count; ++i) printf(" %6.2f", values[i]);
  printf("\n");
}

int main(int argc, char **argv) {
  const char *path = argc > 1 ? argv[1] : "hello_ndarray.safetensors";
  const int64_t dims[2] = {2, 3};
  const float x_values[6] = {1, 2, 3, 4, 5, 6};
  float out[6];
  dt_build_info info;
  dt_context *cpu = NULL;
  dt_ndarray *x = NULL, *y = NULL, *half = NULL, *row = NULL;
  dt_named_arrays *loaded = NULL;
  dt_ndarray *loaded_y = NULL;
  const char *names[2] = {"x", "y"};
  const dt_ndarray *arrays[2];
  size_t count = 0;
  int rc = 1;

  printf("disttrain %s\n", dt_version_string());
  CHECK(dt_build_info_init(&info, sizeof info));
  CHECK(dt_build_info_get(&info));
  printf("built with: CUDA %s (runtime %d), cuDNN %s (%d), NCCL %s (%d), oneDNN %s (%d); GPUs visible: %d\n",
         info.with_cuda ? "yes" : "no", (int)info.cuda_runtime_version,
         info.with_cudnn ? "yes" : "no", (int)info.cudnn_version,
         info.with_nccl ? "yes" : "no", (int)info.nccl_version,
         info.with_onednn ? "yes" : "no", (int)info.onednn_version,
         (int)info.gpu_count);

  CHECK(dt_context_create(&cpu, DT_DEVICE_CPU, 0));
  CHECK(dt_ndarray_create(&x, cpu, DT_FLOAT32, dims, 2));
  CHECK(dt_ndarray_create(&y, cpu, DT_FLOAT32, dims, 2));
  CHECK(dt_ndarray_copy_from_host(x, x_values, sizeof x_values));
  CHECK(dt_ndarray_fill(y, 0.5));

  CHECK(dt_ndarray_axpy(y, 2.0, x)); /* y = 0.5 + 2x */
  CHECK(dt_ndarray_scale(y, 0.5));   /* y = 0.25 + x */
  CHECK(dt_ndarray_add(y, y, x));    /* y = 0.25 + 2x */
  CHECK(dt_ndarray_copy_to_host(out, sizeof out, y));
  print_row("x", x_values, 6);
  print_row("0.25+2x", out, 6);

  /* A float16 copy, and the second row of y as a view. */
  CHECK(dt_ndarray_create(&half, cpu, DT_FLOAT16, dims, 2));
  CHECK(dt_ndarray_cast(half, y));
  CHECK(dt_ndarray_slice(&row, y, 1, 2));
  CHECK(dt_ndarray_copy_to_host(out, 3 * sizeof(float), row));
  print_row("y[1]", out, 3);

  arrays[0] = x;
  arrays[1] = y;
  CHECK(dt_ndarray_save(path, names, arrays, 2));
  CHECK(dt_named_arrays_load(&loaded, cpu, path));
  CHECK(dt_named_arrays_count(&count, loaded));
  CHECK(dt_named_arrays_find(&loaded_y, loaded, "y"));
  CHECK(dt_ndarray_copy_to_host(out, sizeof out, loaded_y));
  printf("saved %s and read back %u arrays; y[5] = %.2f\n", path, (unsigned)count, out[5]);

  /* A mistake is a status and a message, not a crash. */
  if (dt_ndarray_copy_to_host(out, 4, y) != DT_OK) printf("expected error: %s\n", dt_last_error());
  rc = 0;

done:
  dt_ndarray_free(loaded_y);
  dt_named_arrays_free(loaded);
  dt_ndarray_free(row);
  dt_ndarray_free(half);
  dt_ndarray_free(y);
  dt_ndarray_free(x);
  dt_context_free(cpu);
  return rc;
}
