// What one timeline span costs a thread (issue 40): with the timeline off
// (a relaxed load and a branch) and on (two clock reads and a slot in the
// ring). Prints one JSON line per setting, in nanoseconds per span.
//
//   timeline_span_bench [SPANS]
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "core/timeline/timeline.h"

namespace {

double ns_per_span(long spans) {
  const auto start = std::chrono::steady_clock::now();
  for (long i = 0; i < spans; ++i) {
    const dt::core::timeline::Span span("bench", "span", {"i", i});
  }
  const std::chrono::duration<double, std::nano> took = std::chrono::steady_clock::now() - start;
  return took.count() / static_cast<double>(spans);
}

}  // namespace

int main(int argc, char** argv) {
  const long spans = argc > 1 ? std::atol(argv[1]) : 2000000;
  dt::core::timeline::stop();
  const double off = ns_per_span(spans);
  dt::core::timeline::start();
  const double on = ns_per_span(spans);
  dt::core::timeline::stop();
  std::printf("{\"bench\":\"timeline_span\",\"timeline\":\"off\",\"ns_per_span\":%.2f,\"spans\":%ld}\n", off, spans);
  std::printf("{\"bench\":\"timeline_span\",\"timeline\":\"on\",\"ns_per_span\":%.2f,\"spans\":%ld}\n", on, spans);
  return 0;
}
