/*
 * capi_node_test.c - dt_kvstore_options and the explicit job layout through
 * the public header only: defaults, validation of each layout field, older
 * (shorter) structs, and dt_node_run honouring an explicit layout when the
 * environment describes no job at all.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "capi_check.h"

/* No job in the environment: any layout must come from the options. */
static void clear_job_environment(void) {
  static const char *const names[] = {
      "DMLC_ROLE", "DMLC_PS_ROOT_URI", "DMLC_PS_ROOT_PORT", "DMLC_NUM_SERVER",
      "DMLC_NUM_WORKER", "DMLC_WORKER_ID", "MX_CONFIG", "RANK", "WORLD_SIZE",
      "MASTER_ADDR", "MASTER_PORT", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
      "PMI_RANK", "PMI_SIZE", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_JOB_NODELIST",
      "DT_PS_ROOT_URL", "DT_NUM_SERVER", "DT_TLS_CERT_FILE", "DT_TLS_KEY_FILE",
      "DT_TLS_CA_FILE", "DT_LOCAL_RANK", "DT_LOCAL_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE",
      "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALRANKID",
      "MPI_LOCALNRANKS", "SLURM_LOCALID"};
  size_t i;
  for (i = 0; i < sizeof names / sizeof names[0]; ++i) unsetenv(names[i]);
}

static dt_kvstore_options short_deadlines(void) {
  dt_kvstore_options o;
  dt_kvstore_options_init(&o, sizeof o);
  o.startup_timeout_s = 0.5;
  o.heartbeat_interval_s = 0.1;
  o.heartbeat_timeout_s = 0.5;
  o.shutdown_timeout_s = 0.5;
  return o;
}

static void test_defaults(void) {
  dt_kvstore_options o;
  memset(&o, 0x5a, sizeof o);
  dt_kvstore_options_init(&o, sizeof o);
  CHECK_EQ_U64(o.struct_size, sizeof(dt_kvstore_options));
  CHECK_EQ_I64(o.role, -1);
  CHECK_EQ_I64(o.worker_id, -1);
  CHECK_EQ_I64(o.num_servers, 0);
  CHECK_EQ_I64(o.num_workers, 0);
  CHECK(o.scheduler_host == NULL);
  CHECK_EQ_I64(o.scheduler_port, 0);
  CHECK(o.tls_cert_file == NULL);
  CHECK(o.tls_key_file == NULL);
  CHECK(o.tls_ca_file == NULL);
  CHECK_STATUS(dt_kvstore_options_init(NULL, sizeof o), DT_ERR_INVALID_ARGUMENT);
}

static void test_invalid_layout_fields(void) {
  dt_kvstore *kv = CAPI_SENTINEL(dt_kvstore);
  dt_kvstore_options o = short_deadlines();
  o.role = 7;
  CHECK_STATUS(dt_kvstore_create_ex(&kv, "dist_sync", &o), DT_ERR_INVALID_ARGUMENT);
  CHECK(strstr(dt_last_error(), "role") != NULL);
  CHECK_STATUS(dt_node_run(&o), DT_ERR_INVALID_ARGUMENT);

  o = short_deadlines();
  o.scheduler_port = 70000;
  CHECK_STATUS(dt_node_run(&o), DT_ERR_INVALID_ARGUMENT);
  CHECK(strstr(dt_last_error(), "scheduler_port") != NULL);

  o = short_deadlines();
  o.num_workers = -2;
  CHECK_STATUS(dt_node_run(&o), DT_ERR_INVALID_ARGUMENT);
  CHECK(strstr(dt_last_error(), "num_workers") != NULL);

  o = short_deadlines();
  o.scheduler_host = "";
  CHECK_STATUS(dt_node_run(&o), DT_ERR_INVALID_ARGUMENT);
  CHECK(strstr(dt_last_error(), "scheduler_host") != NULL);

  o = short_deadlines();
  o.struct_size = 3; /* never initialised */
  CHECK_STATUS(dt_node_run(&o), DT_ERR_INVALID_ARGUMENT);
  CHECK(strstr(dt_last_error(), "struct_size") != NULL);
}

/* The TLS files: all three or none, each one readable PEM, checked before
 * the node starts and named in the error. */
static void test_tls_fields(void) {
  dt_kvstore_options o = short_deadlines();
  o.role = DT_ROLE_SCHEDULER;
  o.num_servers = 1;
  o.num_workers = 1;
  o.scheduler_host = "127.0.0.1";
  o.scheduler_port = 1;
  o.tls_cert_file = "/nonexistent/node.pem";
  CHECK_STATUS(dt_node_run(&o), DT_ERR_INVALID_ARGUMENT);
  CHECK(strstr(dt_last_error(), "tls_key_file") != NULL);
  CHECK(strstr(dt_last_error(), "tls_ca_file") != NULL);
  o.tls_key_file = "/nonexistent/node.key";
  o.tls_ca_file = "/nonexistent/ca.pem";
  CHECK_STATUS(dt_node_run(&o), DT_ERR_INVALID_ARGUMENT);
  CHECK(strstr(dt_last_error(), "/nonexistent/node.pem") != NULL);
}

/* A worker's role cannot run as a node, whichever source gives it. */
static void test_worker_role_is_refused(void) {
  dt_kvstore_options o = short_deadlines();
  o.role = DT_ROLE_WORKER;
  o.num_servers = 1;
  o.num_workers = 1;
  o.scheduler_host = "127.0.0.1";
  o.scheduler_port = 1;
  CHECK_STATUS(dt_node_run(&o), DT_ERR_INVALID_ARGUMENT);
  CHECK(strstr(dt_last_error(), "worker") != NULL);
}

/* With no job in the environment, a scheduler described only by the
 * options starts (port 0: it picks one), waits startup_timeout_s for
 * nodes that never come, and says so. Without the layout fields it could
 * not even start (no port, no counts). */
static void test_explicit_scheduler_layout(void) {
  dt_kvstore_options o = short_deadlines();
  CHECK_STATUS(dt_node_run(&o), DT_ERR_INVALID_ARGUMENT); /* no layout anywhere */
  o.role = DT_ROLE_SCHEDULER;
  o.num_servers = 1;
  o.num_workers = 1;
  o.scheduler_host = "127.0.0.1";
  CHECK_STATUS(dt_node_run(&o), DT_ERR_INVALID_ARGUMENT); /* still no port */
  CHECK(strstr(dt_last_error(), "PORT") != NULL);
  o.scheduler_port = 0; /* environment: none */
  setenv("DMLC_PS_ROOT_PORT", "0", 1); /* the scheduler may bind port 0 */
  CHECK_STATUS(dt_node_run(&o), DT_ERR_TIMED_OUT);
  unsetenv("DMLC_PS_ROOT_PORT");
}

/* A caller built against an older header whose struct ended before the
 * layout fields: accepted, the environment decides the layout. */
static void test_older_struct(void) {
  dt_kvstore_options o = short_deadlines();
  o.struct_size = offsetof(dt_kvstore_options, role);
  o.role = 12345; /* beyond the caller's struct: never read */
  CHECK_STATUS(dt_node_run(&o), DT_ERR_INVALID_ARGUMENT);
  CHECK(strstr(dt_last_error(), "role") == NULL);
}

/* The place among the workers of this host, from whichever launcher set it. */
static void test_local_rank(void) {
  int32_t rank = -1, size = -1;
  CHECK_OK(dt_node_local_rank(&rank, &size));
  CHECK_EQ_I64(rank, 0);
  CHECK_EQ_I64(size, 1);
  setenv("LOCAL_RANK", "1", 1); /* torchrun's */
  setenv("LOCAL_WORLD_SIZE", "2", 1);
  CHECK_OK(dt_node_local_rank(&rank, &size));
  CHECK_EQ_I64(rank, 1);
  CHECK_EQ_I64(size, 2);
  setenv("DT_LOCAL_RANK", "3", 1); /* dtrun's wins */
  setenv("DT_LOCAL_SIZE", "4", 1);
  CHECK_OK(dt_node_local_rank(&rank, NULL));
  CHECK_EQ_I64(rank, 3);
  setenv("DT_LOCAL_RANK", "x", 1);
  CHECK_STATUS(dt_node_local_rank(&rank, &size), DT_ERR_INVALID_ARGUMENT);
  CHECK(strstr(dt_last_error(), "DT_LOCAL_RANK") != NULL);
  clear_job_environment();
}

int main(void) {
  clear_job_environment();
  test_defaults();
  test_invalid_layout_fields();
  test_worker_role_is_refused();
  test_tls_fields();
  test_explicit_scheduler_layout();
  test_older_struct();
  test_local_rank();
  return capi_finish();
}
