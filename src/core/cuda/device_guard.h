// DeviceGuard: makes a device current for one scope and restores the previous
// one, because the CUDA runtime's current device is per host thread and the
// caller's thread may be working with another GPU.
#pragma once

namespace dt::core::cuda {

class DeviceGuard {
 public:
  // Throws Error(kNoDevice) without a usable driver, Error(kCuda) otherwise.
  explicit DeviceGuard(int device_id);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = 0;
  bool switched_ = false;
};

}  // namespace dt::core::cuda
