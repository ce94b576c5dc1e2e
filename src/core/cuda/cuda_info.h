// Facts about the CUDA runtime this build links, for the C API's build info.
#pragma once

namespace dt::core::cuda {

// cudaRuntimeGetVersion (1000 * major + 10 * minor, e.g. 13000); 0 on error.
// Needs no driver: the runtime is linked statically.
int runtime_version() noexcept;

}  // namespace dt::core::cuda
