// Helpers shared by the parameter-server unit tests.
#pragma once

#include <unistd.h>

#include <atomic>
#include <cstring>
#include <string>

#include "ps/transport/message.h"

namespace dt::ps::test {

// A URL no other test (or process) uses: transport + pid + counter.
inline std::string unique_url(const std::string& transport) {
  static std::atomic<int> counter{0};
  const std::string tag = std::to_string(::getpid()) + "-" + std::to_string(counter++);
  if (transport == "inproc") return "inproc://ps-test-" + tag;
  if (transport == "ipc") return "ipc:///tmp/dt-ps-test-" + tag + ".ipc";
  return "tcp://127.0.0.1:0";
}

// A message whose body is text, and the text of a message's body.
inline Message text_message(const std::string& text) {
  Message m;
  std::memcpy(m.grow(text.size()), text.data(), text.size());
  return m;
}
inline std::string text_of(const Message& m) {
  return std::string(reinterpret_cast<const char*>(m.data()), m.size());
}

}  // namespace dt::ps::test
