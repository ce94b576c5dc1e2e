// tcp_echo: the raw TCP figures that bench/two_hosts.sh sets our all-reduce
// and parameter server against, over the same path (veth between network
// namespaces, or loopback): plain blocking sockets, TCP_NODELAY, the kernel's
// own buffer sizing, no framing beyond one header per test.
//
//   tcp_echo --serve ADDR PORT
//       accepts one connection at a time and answers each test it is sent;
//       runs until killed (two_hosts.sh kills it with its namespace).
//   tcp_echo --connect ADDR PORT [--path NAME] [--sizes 4096,67108864]
//       per size, the echo that a push then a pull moves (send N bytes, get
//       N back), timed per round trip after one untimed round:
//         {"op":"raw_tcp","path":"veth","bytes":4096,"reps":2000,
//          "rtt_us":<median>,"mean_us":...,"gbps":<2 N / median>}
//       then one way (N bytes sent `reps` times, one byte back at the end):
//         {"op":"raw_tcp_stream","path":"veth","bytes":...,"gbps":...}
//
// Every send and receive gives up after 60 s (SO_SNDTIMEO / SO_RCVTIMEO).
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "echo_bench.h"

enum { kEcho = 1, kStream = 2 };

// What the client asks for: mode, bytes per message, rounds (the untimed
// one included).
struct Header {
  uint64_t mode;
  uint64_t bytes;
  uint64_t rounds;
};

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int io_all(int fd, void* buf, size_t n, int sending) {
  char* p = buf;
  while (n > 0) {
    const ssize_t k = sending ? send(fd, p, n, MSG_NOSIGNAL) : recv(fd, p, n, 0);
    if (k <= 0) return -1;
    p += k;
    n -= (size_t)k;
  }
  return 0;
}

static void configure(int fd) {
  const int one = 1;
  const struct timeval limit = {60, 0};
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof limit);
}

static int parse_address(const char* host, const char* port, struct sockaddr_in* addr) {
  memset(addr, 0, sizeof *addr);
  addr->sin_family = AF_INET;
  addr->sin_port = htons((uint16_t)atoi(port));
  return inet_pton(AF_INET, host, &addr->sin_addr) == 1 ? 0 : -1;
}

// One connection: tests until the client closes it.
static void serve_connection(int fd) {
  struct Header h;
  char* buf = NULL;
  size_t capacity = 0;
  char ack = 1;
  while (io_all(fd, &h, sizeof h, 0) == 0) {
    if (h.bytes == 0 || h.bytes > ((uint64_t)1 << 32)) break;
    if (h.bytes > capacity) {
      free(buf);
      buf = malloc(h.bytes);
      if (buf == NULL) break;
      capacity = h.bytes;
    }
    int ok = 1;
    for (uint64_t r = 0; r < h.rounds && ok; ++r) {
      ok = io_all(fd, buf, h.bytes, 0) == 0 && (h.mode != kEcho || io_all(fd, buf, h.bytes, 1) == 0);
    }
    if (!ok || (h.mode == kStream && io_all(fd, &ack, 1, 1) != 0)) break;
  }
  free(buf);
  close(fd);
}

static int serve(const char* host, const char* port) {
  struct sockaddr_in addr;
  if (parse_address(host, port, &addr) != 0) {
    fprintf(stderr, "tcp_echo: bad address %s\n", host);
    return 2;
  }
  const int listener = socket(AF_INET, SOCK_STREAM, 0);
  const int one = 1;
  setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (bind(listener, (struct sockaddr*)&addr, sizeof addr) != 0 || listen(listener, 4) != 0) {
    perror("tcp_echo: bind/listen");
    return 1;
  }
  for (;;) {
    const int fd = accept(listener, NULL, NULL);
    if (fd < 0) continue;
    configure(fd);
    serve_connection(fd);
  }
}

static int measure(int fd, const char* path, uint64_t bytes) {
  const int reps = echo_rounds_for(bytes);
  char* buf = malloc(bytes);
  double* rtt = malloc(sizeof(double) * (size_t)reps);
  if (buf == NULL || rtt == NULL) return -1;
  memset(buf, 1, bytes);
  struct Header h = {kEcho, bytes, (uint64_t)reps + 1};
  if (io_all(fd, &h, sizeof h, 1) != 0) return -1;
  for (int r = -1; r < reps; ++r) {
    const double start = now_s();
    if (io_all(fd, buf, bytes, 1) != 0 || io_all(fd, buf, bytes, 0) != 0) return -1;
    if (r >= 0) rtt[r] = now_s() - start;
  }
  double mean;
  const double median = echo_median(rtt, reps, &mean);
  printf("{\"op\":\"raw_tcp\",\"path\":\"%s\",\"bytes\":%llu,\"reps\":%d,\"rtt_us\":%.1f,\"mean_us\":%.1f,"
         "\"gbps\":%.3f}\n",
         path, (unsigned long long)bytes, reps, median * 1e6, mean * 1e6, 2.0 * (double)bytes / median / 1e9);
  // One way: the stream's rate, what a ring step's link carries.
  h.mode = kStream;
  h.rounds = (uint64_t)reps;
  char ack = 0;
  const double start = now_s();
  if (io_all(fd, &h, sizeof h, 1) != 0) return -1;
  for (int r = 0; r < reps; ++r) {
    if (io_all(fd, buf, bytes, 1) != 0) return -1;
  }
  if (io_all(fd, &ack, 1, 0) != 0) return -1;
  const double seconds = now_s() - start;
  printf("{\"op\":\"raw_tcp_stream\",\"path\":\"%s\",\"bytes\":%llu,\"reps\":%d,\"gbps\":%.3f}\n", path,
         (unsigned long long)bytes, reps, (double)bytes * reps / seconds / 1e9);
  fflush(stdout);
  free(rtt);
  free(buf);
  return 0;
}

static int client(const char* host, const char* port, const char* path, const char* sizes) {
  struct sockaddr_in addr;
  if (parse_address(host, port, &addr) != 0) {
    fprintf(stderr, "tcp_echo: bad address %s\n", host);
    return 2;
  }
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  // The server may still be starting: retry for up to 10 s.
  int connected = -1;
  for (int attempt = 0; attempt < 200 && connected != 0; ++attempt) {
    connected = connect(fd, (struct sockaddr*)&addr, sizeof addr);
    if (connected != 0) usleep(50000);
  }
  if (connected != 0) {
    perror("tcp_echo: connect");
    return 1;
  }
  configure(fd);
  char* list = strdup(sizes);
  for (char* item = strtok(list, ","); item != NULL; item = strtok(NULL, ",")) {
    const uint64_t bytes = strtoull(item, NULL, 10);
    if (bytes == 0 || bytes > ((uint64_t)1 << 32)) {
      fprintf(stderr, "tcp_echo: bad size %s\n", item);
      return 2;
    }
    if (measure(fd, path, bytes) != 0) {
      fprintf(stderr, "tcp_echo: the connection failed at %llu bytes\n", (unsigned long long)bytes);
      return 1;
    }
  }
  free(list);
  close(fd);
  return 0;
}

int main(int argc, char** argv) { return echo_main(argc, argv, "tcp_echo", "4096,67108864", serve, client); }
