// What the batch loader reads from: a fixed number of labelled samples whose
// pixels are uint8 and share one shape. An interface, as Gluon's Dataset is,
// so that the loader serves any such source (an IDX pair, a synthetic set in
// a test) the same way.
#pragma once

#include <cstdint>

#include "core/shape.h"

namespace dt::data {

class Dataset {
 public:
  virtual ~Dataset() = default;

  virtual int64_t size() const = 0;
  // One sample's pixel dims, e.g. (1, 28, 28) for a grey MNIST image.
  virtual core::Shape sample_shape() const = 0;
  // Copies sample `index`'s sample_shape().numel() pixel bytes to `pixels`
  // and returns its label. Error(kInvalidArgument) for an index outside
  // [0, size()). The batch loader calls this from its prefetch thread while
  // the owner may call other const members, so const calls must be safe to
  // run concurrently.
  virtual int32_t read_sample(int64_t index, uint8_t* pixels) const = 0;
};

}  // namespace dt::data
