// What bench/tcp_echo.c and bench/nng_reqrep_bench.c share: their command
// line (a server that runs until killed, a client that times round trips per
// size) and the figures they print from the round trips' times.
#pragma once

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// Round trips per size: enough that a scheduler hiccup does not decide the
// median, few enough for 64 MiB.
static inline int echo_rounds_for(unsigned long long bytes) {
  return bytes <= (64u << 10) ? 2000 : bytes <= (1u << 20) ? 200 : 8;
}

static int echo_compare(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

// Sorts the n times (seconds) and returns their median; *mean gets the mean.
static inline double echo_median(double* seconds, int n, double* mean) {
  double total = 0;
  for (int i = 0; i < n; ++i) total += seconds[i];
  *mean = total / n;
  qsort(seconds, (size_t)n, sizeof(double), echo_compare);
  return n % 2 ? seconds[n / 2] : 0.5 * (seconds[n / 2 - 1] + seconds[n / 2]);
}

typedef int (*EchoServe)(const char* host, const char* port);
typedef int (*EchoClient)(const char* host, const char* port, const char* path, const char* sizes);

//   NAME --serve ADDR PORT
//   NAME --connect ADDR PORT [--path NAME] [--sizes N,...]
static inline int echo_main(int argc, char** argv, const char* name, const char* default_sizes, EchoServe serve,
                            EchoClient client) {
  if (argc == 4 && strcmp(argv[1], "--serve") == 0) return serve(argv[2], argv[3]);
  if (argc >= 4 && strcmp(argv[1], "--connect") == 0) {
    const char* path = "tcp";
    const char* sizes = default_sizes;
    for (int i = 4; i + 1 < argc; i += 2) {
      if (strcmp(argv[i], "--path") == 0) path = argv[i + 1];
      else if (strcmp(argv[i], "--sizes") == 0) sizes = argv[i + 1];
      else argc = 0;
    }
    if (argc != 0 && argc % 2 == 0) return client(argv[2], argv[3], path, sizes);
  }
  fprintf(stderr,
          "usage: %s --serve ADDR PORT\n"
          "       %s --connect ADDR PORT [--path NAME] [--sizes N,...]\n",
          name, name);
  return 2;
}
