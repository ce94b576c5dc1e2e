/* An out-of-tree user of the installed library. The kvstore is there for the
 * static link: it pulls in the parameter-server code and with it nng, so
 * the link fails unless pkg-config names every library the archive needs. */
#include <stdio.h>

#include "dt_c_api.h"

int main(void) {
  dt_context *ctx = NULL;
  dt_ndarray *arr = NULL;
  dt_kvstore *kv = NULL;
  const uint64_t key = 3;
  const int64_t dims[1] = {4};
  float out[4];
  int rc = 1;
  if (dt_version() != DT_VERSION_NUMBER) {
    fprintf(stderr, "header %d, library %u\n", DT_VERSION_NUMBER, dt_version());
    return 1;
  }
  if (dt_context_create(&ctx, DT_DEVICE_CPU, 0) == DT_OK &&
      dt_ndarray_create(&arr, ctx, DT_FLOAT32, dims, 1) == DT_OK &&
      dt_ndarray_fill(arr, 2.5) == DT_OK &&
      dt_kvstore_create(&kv, "local") == DT_OK &&
      dt_kvstore_init(kv, &key, (const dt_ndarray *const *)&arr, 1) == DT_OK &&
      dt_ndarray_fill(arr, 0.0) == DT_OK &&
      dt_kvstore_pull(kv, &key, &arr, 1, 0) == DT_OK &&
      dt_ndarray_copy_to_host(out, sizeof out, arr) == DT_OK && out[3] == 2.5f) {
    printf("consumer OK: disttrain %s\n", dt_version_string());
    rc = 0;
  } else {
    fprintf(stderr, "consumer failed: %s\n", dt_last_error());
  }
  dt_kvstore_free(kv);
  dt_ndarray_free(arr);
  dt_context_free(ctx);
  return rc;
}
