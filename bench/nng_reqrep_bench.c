// nng_reqrep_bench: the floor nng itself sets under the parameter server's
// small-message latency: plain req0/rep0 round trips over tcp with the
// socket options the request transport uses (ps/transport/request_client.cc
// and request_server.cc), with nothing of ours between the socket and the
// answer. bench/two_hosts.sh runs it beside tcp_echo over the same path.
//
//   nng_reqrep_bench --serve ADDR PORT
//       a rep0 socket whose contexts answer each request with its own bytes
//       from the aio callback that received it (the least any rep0 server
//       can do); several contexts, so that one is receiving while another
//       finishes its send, as the request server keeps `receivers` waiting;
//       runs until killed.
//   nng_reqrep_bench --connect ADDR PORT [--path NAME] [--sizes 4096]
//       per size and per way of waiting, timed round trips after one
//       untimed one:
//         {"op":"nng_reqrep","client":"wait","path":"veth","bytes":4096,
//          "reps":2000,"rtt_us":<median>,"mean_us":...,"gbps":<2 N / median>}
//       client "wait": the calling thread sends on a context and waits for
//       the send, then receives and waits (nng_aio_wait: nng's own
//       synchronous path); "callback": the send's completion arms the
//       receive and the receive's completion wakes the caller, as the
//       request client does.
//
// Every send and receive gives up after 60 s (the aios' timeouts).
#include <nng/nng.h>
#include <nng/protocol/reqrep0/rep.h>
#include <nng/protocol/reqrep0/req.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "echo_bench.h"

enum { kTimeoutMs = 60000, kServerContexts = 4 };

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int fail(const char* what, int rv) {
  fprintf(stderr, "nng_reqrep_bench: %s: %s\n", what, nng_strerror(rv));
  return 1;
}

// ---- the server ---------------------------------------------------------------

struct Echo {
  nng_ctx ctx;
  nng_aio* aio;
  int receiving;
};

// Received: send the same message back. Sent (or failed): receive again.
static void echo_cb(void* arg) {
  struct Echo* e = arg;
  const int rv = nng_aio_result(e->aio);
  if (rv == NNG_ECLOSED) return;
  if (e->receiving && rv == 0) {
    e->receiving = 0;
    nng_ctx_send(e->ctx, e->aio);  // the message stays on the aio
    return;
  }
  if (rv != 0 && !e->receiving) {
    nng_msg* msg = nng_aio_get_msg(e->aio);
    if (msg != NULL) nng_msg_free(msg);
    nng_aio_set_msg(e->aio, NULL);
  }
  e->receiving = 1;
  nng_ctx_recv(e->ctx, e->aio);
}

static int serve(const char* host, const char* port) {
  char url[128];
  snprintf(url, sizeof url, "tcp://%s:%s", host, port);
  nng_socket sock;
  int rv;
  if ((rv = nng_rep0_open(&sock)) != 0) return fail("rep0", rv);
  if ((rv = nng_socket_set_size(sock, NNG_OPT_RECVMAXSZ, (size_t)1 << 30)) != 0) return fail("recvmaxsz", rv);
  if ((rv = nng_listen(sock, url, NULL, 0)) != 0) return fail(url, rv);
  static struct Echo contexts[kServerContexts];
  for (int i = 0; i < kServerContexts; ++i) {
    struct Echo* e = &contexts[i];
    if ((rv = nng_ctx_open(&e->ctx, sock)) != 0) return fail("context", rv);
    if ((rv = nng_aio_alloc(&e->aio, echo_cb, e)) != 0) return fail("aio", rv);
    e->receiving = 1;
    nng_ctx_recv(e->ctx, e->aio);
  }
  for (;;) pause();
}

// ---- the client ---------------------------------------------------------------

// The callback client: the send's completion arms the receive, the
// receive's completion wakes the caller.
struct Chain {
  nng_ctx ctx;
  nng_aio* aio;
  int receiving;
  int done;
  int rv;
  pthread_mutex_t mutex;
  pthread_cond_t cv;
};

static void chain_cb(void* arg) {
  struct Chain* c = arg;
  const int rv = nng_aio_result(c->aio);
  if (rv == 0 && !c->receiving) {
    c->receiving = 1;
    nng_ctx_recv(c->ctx, c->aio);
    return;
  }
  pthread_mutex_lock(&c->mutex);
  c->rv = rv;
  c->done = 1;
  pthread_cond_signal(&c->cv);
  pthread_mutex_unlock(&c->mutex);
}

static int round_trip_chained(struct Chain* c, nng_msg* msg, nng_msg** reply) {
  c->receiving = 0;
  c->done = 0;
  nng_aio_set_msg(c->aio, msg);
  nng_ctx_send(c->ctx, c->aio);
  pthread_mutex_lock(&c->mutex);
  while (!c->done) pthread_cond_wait(&c->cv, &c->mutex);
  pthread_mutex_unlock(&c->mutex);
  if (c->rv != 0) return c->rv;
  *reply = nng_aio_get_msg(c->aio);
  nng_aio_set_msg(c->aio, NULL);
  return 0;
}

static int round_trip_waiting(nng_ctx ctx, nng_aio* aio, nng_msg* msg, nng_msg** reply) {
  nng_aio_set_msg(aio, msg);
  nng_ctx_send(ctx, aio);
  nng_aio_wait(aio);
  int rv = nng_aio_result(aio);
  if (rv != 0) {
    nng_msg_free(nng_aio_get_msg(aio));
    return rv;
  }
  nng_ctx_recv(ctx, aio);
  nng_aio_wait(aio);
  if ((rv = nng_aio_result(aio)) != 0) return rv;
  *reply = nng_aio_get_msg(aio);
  return 0;
}

static int measure(nng_socket sock, const char* path, size_t bytes, int chained) {
  const int reps = echo_rounds_for(bytes);
  double* rtt = malloc(sizeof(double) * (size_t)reps);
  if (rtt == NULL) return 1;
  struct Chain c;
  memset(&c, 0, sizeof c);
  pthread_mutex_init(&c.mutex, NULL);
  pthread_cond_init(&c.cv, NULL);
  int rv;
  if ((rv = nng_ctx_open(&c.ctx, sock)) != 0) return fail("context", rv);
  if ((rv = nng_aio_alloc(&c.aio, chained ? chain_cb : NULL, &c)) != 0) return fail("aio", rv);
  nng_aio_set_timeout(c.aio, kTimeoutMs);
  for (int r = -1; r < reps; ++r) {
    nng_msg* msg;
    if ((rv = nng_msg_alloc(&msg, bytes)) != 0) return fail("message", rv);
    memset(nng_msg_body(msg), 1, bytes);
    nng_msg* reply = NULL;
    const double start = now_s();
    rv = chained ? round_trip_chained(&c, msg, &reply) : round_trip_waiting(c.ctx, c.aio, msg, &reply);
    if (rv != 0) return fail("round trip", rv);
    if (r >= 0) rtt[r] = now_s() - start;
    if (nng_msg_len(reply) != bytes) {
      fprintf(stderr, "nng_reqrep_bench: %zu bytes came back for %zu\n", nng_msg_len(reply), bytes);
      return 1;
    }
    nng_msg_free(reply);
  }
  double mean;
  const double median = echo_median(rtt, reps, &mean);
  printf("{\"op\":\"nng_reqrep\",\"client\":\"%s\",\"path\":\"%s\",\"bytes\":%zu,\"reps\":%d,\"rtt_us\":%.1f,"
         "\"mean_us\":%.1f,\"gbps\":%.3f}\n",
         chained ? "callback" : "wait", path, bytes, reps, median * 1e6, mean * 1e6,
         2.0 * (double)bytes / median / 1e9);
  fflush(stdout);
  nng_aio_free(c.aio);
  nng_ctx_close(c.ctx);
  pthread_cond_destroy(&c.cv);
  pthread_mutex_destroy(&c.mutex);
  free(rtt);
  return 0;
}

static int client(const char* host, const char* port, const char* path, const char* sizes) {
  char url[128];
  snprintf(url, sizeof url, "tcp://%s:%s", host, port);
  nng_socket sock;
  int rv;
  if ((rv = nng_req0_open(&sock)) != 0) return fail("req0", rv);
  // As the request client: no resends, quick reconnects, large messages.
  nng_socket_set_size(sock, NNG_OPT_RECVMAXSZ, (size_t)1 << 30);
  nng_socket_set_ms(sock, NNG_OPT_REQ_RESENDTIME, NNG_DURATION_INFINITE);
  nng_socket_set_ms(sock, NNG_OPT_RECONNMINT, 20);
  nng_socket_set_ms(sock, NNG_OPT_RECONNMAXT, 500);
  // The server may still be starting: retry for up to 10 s.
  for (int attempt = 0; (rv = nng_dial(sock, url, NULL, 0)) != 0; ++attempt) {
    if (attempt == 200) return fail(url, rv);
    usleep(50000);
  }
  char* list = strdup(sizes);
  for (char* item = strtok(list, ","); item != NULL; item = strtok(NULL, ",")) {
    const unsigned long long bytes = strtoull(item, NULL, 10);
    if (bytes == 0 || bytes > ((unsigned long long)1 << 30) - 64) {
      fprintf(stderr, "nng_reqrep_bench: bad size %s\n", item);
      return 2;
    }
    for (int chained = 0; chained <= 1; ++chained) {
      if (measure(sock, path, (size_t)bytes, chained) != 0) return 1;
    }
  }
  free(list);
  nng_close(sock);
  return 0;
}

int main(int argc, char** argv) { return echo_main(argc, argv, "nng_reqrep_bench", "4096", serve, client); }
