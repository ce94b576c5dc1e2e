#include "kvstore/elastic.h"

namespace dt::kvstore {

core::Error no_hand_over(const std::string& type) {
  return core::Error(core::ErrorCode::kNotSupported,
                     "hand_over_state: kvstore '" + type +
                         "' lets no worker join a running job by handing it the workers' state");
}

}  // namespace dt::kvstore
