// What dtrun's live job summary costs a server per request (issue 40): a
// WorkClock Section off (a null clock: the hooks' default) and on (two
// clock reads and two mutex turns), on one thread and on four at once (a
// server's handler threads share one clock). Prints one JSON line per
// setting, in nanoseconds per Section.
//
//   work_clock_bench [SECTIONS]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "ps/server/work_clock.h"

namespace {

using dt::ps::WorkClock;

// Per Section of one thread, with threads threads running them at once.
double ns_per_section(WorkClock* clock, long sections, int threads) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> running;
  for (int t = 0; t < threads; ++t) {
    running.emplace_back([clock, sections] {
      for (long i = 0; i < sections; ++i) {
        const WorkClock::Section handling(clock, WorkClock::Activity::kHandling);
      }
    });
  }
  for (std::thread& t : running) t.join();
  const std::chrono::duration<double, std::nano> took = std::chrono::steady_clock::now() - start;
  return took.count() / static_cast<double>(sections);
}

}  // namespace

int main(int argc, char** argv) {
  const long sections = argc > 1 ? std::atol(argv[1]) : 2000000;
  for (const int threads : {1, 4}) {
    WorkClock clock;
    const double off = ns_per_section(nullptr, sections, threads);
    const double on = ns_per_section(&clock, sections, threads);
    std::printf("{\"bench\":\"work_clock\",\"status\":\"off\",\"threads\":%d,\"ns_per_section\":%.2f,\"sections\":%ld}\n",
                threads, off, sections);
    std::printf("{\"bench\":\"work_clock\",\"status\":\"on\",\"threads\":%d,\"ns_per_section\":%.2f,\"sections\":%ld}\n",
                threads, on, sections);
  }
  return 0;
}
