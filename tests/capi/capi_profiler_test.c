/*
 * The timeline through the public header: dt_profiler_start/stop/dump.
 * A data loader's waits are recorded while the profiler runs and not after
 * it stopped; the dump is trace-event JSON; bad paths are clear errors.
 */
#define _POSIX_C_SOURCE 200112L /* unsetenv, getpid */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capi_check.h"

#define MNIST_DIR "/usr/share/datasets/fashion-mnist"

/* How many complete "data wait" spans the file at path holds (-1: unreadable). */
static long data_waits(const char *path) {
  static const char needle[] = "\"name\":\"data wait\",\"cat\":\"train\",\"ph\":\"X\"";
  char *text;
  long size, n = 0;
  const char *at;
  FILE *f = fopen(path, "rb");
  if (f == NULL) return -1;
  fseek(f, 0, SEEK_END);
  size = ftell(f);
  fseek(f, 0, SEEK_SET);
  text = (char *)malloc((size_t)size + 1);
  if (text == NULL || fread(text, 1, (size_t)size, f) != (size_t)size) {
    free(text);
    fclose(f);
    return -1;
  }
  fclose(f);
  text[size] = '\0';
  CHECK(strncmp(text, "{\"traceEvents\":[", 16) == 0);
  for (at = strstr(text, needle); at != NULL; at = strstr(at + 1, needle)) ++n;
  free(text);
  return n;
}

static void next_batches(dt_data_loader *loader, int batches) {
  int i;
  for (i = 0; i < batches; ++i) {
    dt_ndarray *data = NULL, *labels = NULL;
    int has = 0;
    CHECK_OK(dt_data_loader_next(&data, &labels, &has, loader));
    CHECK(has == 1);
    dt_ndarray_free(data);
    dt_ndarray_free(labels);
  }
}

int main(void) {
  char before[512], after[512];
  dt_data_loader *loader = NULL;
  long already;
  const char *tmp = getenv("TMPDIR");
  if (tmp == NULL || *tmp == '\0') tmp = "/tmp";
  snprintf(before, sizeof before, "%s/capi_profiler_%ld_a.json", tmp, (long)getpid());
  snprintf(after, sizeof after, "%s/capi_profiler_%ld_b.json", tmp, (long)getpid());
  unsetenv("DT_TIMELINE");

  if (CHECK_OK(dt_data_loader_create_mnist(&loader, MNIST_DIR, "t10k", NULL))) {
    CHECK_OK(dt_data_loader_start_epoch(loader, 0));
    CHECK_OK(dt_profiler_dump(before));
    already = data_waits(before);
    CHECK(already >= 0);
    CHECK_OK(dt_profiler_start());
    next_batches(loader, 3);
    CHECK_OK(dt_profiler_stop());
    next_batches(loader, 2);
    CHECK_OK(dt_profiler_dump(after));
    CHECK_EQ_I64(data_waits(after), already + 3);
    dt_data_loader_free(loader);
  }
  CHECK_STATUS(dt_profiler_dump(NULL), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_profiler_dump(""), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_profiler_dump("/nonexistent-dir/timeline.json"), DT_ERR_IO);
  remove(before);
  remove(after);
  return capi_finish();
}
