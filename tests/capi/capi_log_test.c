/*
 * capi_log_test.c - dt_log_set_handler through the public header only: a
 * handler receives the library's real lines (a scheduler's job layout and
 * its warning that the job has no secret) with their level and facility,
 * none of them reach stderr meanwhile, levels above max_level are held back,
 * and a NULL handler gives the lines back to stderr.
 */
#define _POSIX_C_SOURCE 200112L /* setenv, fileno */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "capi_check.h"

typedef struct seen_lines {
  int calls;
  int above_max;                 /* lines more verbose than asked for   */
  int secret_warnings;           /* "no job secret" at DT_LOG_WARNING    */
  int secret_warning_level;      /* that line's level                    */
  char secret_facility[64];      /* and facility                         */
  int layout_lines;              /* the job's layout at DT_LOG_INFO      */
  dt_log_level max;
} seen_lines;

/* Runs on the library's threads, one call at a time. */
static void on_line(dt_log_level level, const char *facility, const char *message, void *user) {
  seen_lines *seen = (seen_lines *)user;
  seen->calls++;
  if (level > seen->max || level == DT_LOG_NONE) seen->above_max++;
  if (strstr(message, "no job secret") != NULL) {
    seen->secret_warnings++;
    seen->secret_warning_level = (int)level;
    strncpy(seen->secret_facility, facility, sizeof seen->secret_facility - 1);
  }
  if (level == DT_LOG_INFO && strstr(message, "job layout") != NULL) seen->layout_lines++;
}

/* A scheduler described by the options alone, with no secret: it logs its
 * layout and the warning, then times out waiting for nodes. */
static void run_lonely_scheduler(void) {
  dt_kvstore_options o;
  dt_kvstore_options_init(&o, sizeof o);
  o.startup_timeout_s = 0.3;
  o.heartbeat_interval_s = 0.1;
  o.heartbeat_timeout_s = 0.3;
  o.shutdown_timeout_s = 0.3;
  o.role = DT_ROLE_SCHEDULER;
  o.num_servers = 1;
  o.num_workers = 1;
  o.scheduler_host = "127.0.0.1";
  CHECK_STATUS(dt_node_run(&o), DT_ERR_TIMED_OUT);
}

/* The bytes written to stderr while fn runs. */
static size_t stderr_of(void (*fn)(void), char *out, size_t capacity) {
  FILE *capture = tmpfile();
  int saved;
  size_t n = 0;
  fflush(stderr);
  saved = dup(fileno(stderr));
  dup2(fileno(capture), fileno(stderr));
  fn();
  fflush(stderr);
  dup2(saved, fileno(stderr));
  close(saved);
  rewind(capture);
  n = fread(out, 1, capacity - 1, capture);
  out[n] = '\0';
  fclose(capture);
  return n;
}

static void test_invalid_level(void) {
  CHECK_STATUS(dt_log_set_handler((dt_log_level)6, NULL, NULL), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_log_set_handler((dt_log_level)-1, on_line, NULL), DT_ERR_INVALID_ARGUMENT);
}

static seen_lines seen;

static void test_handler_takes_the_lines(void) {
  static char printed[65536];
  memset(&seen, 0, sizeof seen);
  seen.max = DT_LOG_INFO;
  CHECK_STATUS(dt_log_set_handler(DT_LOG_INFO, on_line, &seen), DT_OK);
  stderr_of(run_lonely_scheduler, printed, sizeof printed);
  CHECK_STATUS(dt_log_set_handler(DT_LOG_INFO, NULL, NULL), DT_OK);

  CHECK(seen.calls >= 2);
  CHECK(seen.above_max == 0);
  CHECK(seen.secret_warnings == 1);
  CHECK(seen.secret_warning_level == DT_LOG_WARNING);
  /* The job's lines speak for the job as a whole: no facility. */
  CHECK(strcmp(seen.secret_facility, "") == 0);
  CHECK(seen.layout_lines == 1);
  /* Nothing of it went to stderr behind the handler's back. */
  CHECK(strstr(printed, "disttrain") == NULL);
  if (strstr(printed, "disttrain") != NULL) fprintf(stderr, "stderr had: %s\n", printed);
}

/* After the handler is unset, the lines go to stderr again, in the form
 * the library always printed, and the old handler (whose data may be gone)
 * is never called. */
static void test_null_handler_restores_stderr(void) {
  static char printed[65536];
  memset(&seen, 0, sizeof seen);
  seen.max = DT_LOG_TRACE;
  CHECK_STATUS(dt_log_set_handler(DT_LOG_TRACE, on_line, &seen), DT_OK);
  CHECK_STATUS(dt_log_set_handler(DT_LOG_INFO, NULL, NULL), DT_OK);
  stderr_of(run_lonely_scheduler, printed, sizeof printed);
  CHECK(seen.calls == 0);
  CHECK(strstr(printed, "disttrain: warning: no job secret") != NULL);
  CHECK(strstr(printed, "disttrain: job layout") != NULL);
  if (strstr(printed, "disttrain: job layout") == NULL) fprintf(stderr, "stderr had: %s\n", printed);
}

int main(void) {
  static const char *const job_variables[] = {
      "DMLC_ROLE", "DMLC_PS_ROOT_URI", "DMLC_PS_ROOT_PORT", "DMLC_NUM_SERVER", "DMLC_NUM_WORKER",
      "MX_CONFIG", "RANK", "WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
      "PMI_RANK", "PMI_SIZE", "SLURM_PROCID", "SLURM_NTASKS", "DT_PS_ROOT_URL",
      "DT_JOB_SECRET", "DT_JOB_SECRET_FILE", "DT_TLS_CERT_FILE", "DT_TLS_KEY_FILE", "DT_TLS_CA_FILE",
      "DT_LOG_LEVEL", "PS_VERBOSE"};
  size_t i;
  pid_t child;
  int child_status = 0;
  for (i = 0; i < sizeof job_variables / sizeof job_variables[0]; ++i) unsetenv(job_variables[i]);
  setenv("DMLC_PS_ROOT_PORT", "0", 1); /* the scheduler binds any free port */
  test_invalid_level();
  /* The job's lines come once per process: each case gets a process of its
   * own, forked before the library starts a thread. */
  child = fork();
  if (child == 0) {
    test_handler_takes_the_lines();
    exit(capi_finish());
  }
  CHECK(child > 0);
  test_null_handler_restores_stderr();
  CHECK(waitpid(child, &child_status, 0) == child);
  CHECK(WIFEXITED(child_status) && WEXITSTATUS(child_status) == 0);
  return capi_finish();
}
