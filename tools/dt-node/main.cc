// dt-node: runs this process as the scheduler or a server of a disttrain
// parameter-server job described by the DMLC_* environment (DMLC_ROLE=
// scheduler|server). Exit code 0 after a clean shutdown; otherwise 1 with the
// reason on stderr (e.g. a lost peer, a port in use, an unreachable scheduler).
//
// Deadlines come from dt_kvstore_options_init, overridden by DT_STARTUP_TIMEOUT_S,
// DT_REQUEST_TIMEOUT_S, DT_HEARTBEAT_INTERVAL_S, DT_HEARTBEAT_TIMEOUT_S,
// DT_SHUTDOWN_TIMEOUT_S (seconds) and DT_BIGARRAY_BOUND_BYTES.
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "dt_c_api.h"

static int read_seconds(const char* name, double* out) {
  const char* text = getenv(name);
  if (text == NULL || *text == '\0') return 1;
  char* end = NULL;
  errno = 0;
  const double v = strtod(text, &end);
  if (errno != 0 || *end != '\0' || !(v > 0)) {
    fprintf(stderr, "dt-node: %s=\"%s\" is not a positive number of seconds\n", name, text);
    return 0;
  }
  *out = v;
  return 1;
}

int main(void) {
  dt_kvstore_options options;
  dt_kvstore_options_init(&options);
  if (!read_seconds("DT_STARTUP_TIMEOUT_S", &options.startup_timeout_s) ||
      !read_seconds("DT_REQUEST_TIMEOUT_S", &options.request_timeout_s) ||
      !read_seconds("DT_HEARTBEAT_INTERVAL_S", &options.heartbeat_interval_s) ||
      !read_seconds("DT_HEARTBEAT_TIMEOUT_S", &options.heartbeat_timeout_s) ||
      !read_seconds("DT_SHUTDOWN_TIMEOUT_S", &options.shutdown_timeout_s)) {
    return 2;
  }
  const char* bound = getenv("DT_BIGARRAY_BOUND_BYTES");
  if (bound != NULL && *bound != '\0') {
    char* end = NULL;
    errno = 0;
    const unsigned long long v = strtoull(bound, &end, 10);
    if (errno != 0 || *end != '\0' || v == 0) {
      fprintf(stderr, "dt-node: DT_BIGARRAY_BOUND_BYTES=\"%s\" is not a positive byte count\n", bound);
      return 2;
    }
    options.bigarray_bound_bytes = v;
  }
  const dt_status status = dt_node_run(&options);
  if (status != DT_OK) {
    fprintf(stderr, "dt-node: %s: %s\n", dt_status_string(status), dt_last_error());
    return 1;
  }
  return 0;
}
