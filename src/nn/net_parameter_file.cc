#include "nn/net.h"

// Net: parameters to and from a safetensors file.

#include <map>

#include "core/safetensors.h"
#include "nn/net_internals.h"

namespace dt::nn {

using core::Error;
using core::ErrorCode;

void Net::save_params(const std::string& path) const {
  core::NamedArrays arrays;
  arrays.reserve(params_.size());
  for (const Parameter& param : params_) arrays.emplace_back(param.name, param.value);
  core::save_safetensors(path, arrays);
}

void Net::load_params(const std::string& path) {
  const core::SafetensorsContents contents = core::load_safetensors(path, ctx_);
  std::map<std::string, const core::NDArray*> by_name;
  for (const auto& [name, array] : contents.arrays) by_name.emplace(name, &array);
  // Everything is checked before anything is copied, so a bad file leaves
  // the net as it was.
  std::vector<const core::NDArray*> sources;
  for (const Parameter& param : params_) {
    const auto found = by_name.find(param.name);
    if (found == by_name.end()) {
      throw Error(ErrorCode::kNotFound, path + " has no parameter " + in_quotes(param.name));
    }
    const core::NDArray& source = *found->second;
    if (source.shape() != param.value.shape() || source.dtype() != param.value.dtype()) {
      throw Error(ErrorCode::kShapeMismatch,
                  path + ": parameter " + in_quotes(param.name) + " is " + core::dtype_name(source.dtype()) + " " +
                      source.shape().to_string() + ", the net's is " + core::dtype_name(param.value.dtype()) +
                      " " + param.value.shape().to_string());
    }
    sources.push_back(&source);
  }
  for (size_t i = 0; i < params_.size(); ++i) params_[i].value.copy_from(*sources[i]);
}

}  // namespace dt::nn
