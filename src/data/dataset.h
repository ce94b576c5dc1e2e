// What the batch loader reads from: a fixed number of labelled samples whose
// pixels are uint8 and share one shape. An interface, as Gluon's Dataset is,
// so that the loader serves any such source (an IDX pair, a synthetic set in
// a test) the same way.
#pragma once

#include <cstdint>
#include <functional>

#include "core/error.h"
#include "core/shape.h"
#include "data/image_resize.h"

namespace dt::data {

class Dataset {
 public:
  virtual ~Dataset() = default;

  virtual int64_t size() const = 0;
  // One sample's pixel dims, e.g. (1, 28, 28) for a grey MNIST image.
  virtual core::Shape sample_shape() const = 0;
  // Copies sample `index`'s sample_shape().numel() pixel bytes to `pixels`
  // and returns its label. Error(kInvalidArgument) for an index outside
  // [0, size()). The batch loader calls this from its worker threads at
  // once while the owner may call other const members, so const calls must
  // be safe to run concurrently.
  virtual int32_t read_sample(int64_t index, uint8_t* pixels) const = 0;

  // Whether the samples are resized from source images of their own sizes
  // (an image folder), so that read_region serves them: torchvision's
  // RandomResizedCrop takes its box from the source image, which only the
  // dataset holds, not from the sample it has already resized.
  virtual bool has_source_images() const { return false; }
  // As read_sample, but the pixels are the box `choose(height, width)` of
  // the source image, whose size it is given, resized to sample_shape().
  // Called on the same thread and under the same rules as read_sample;
  // Error(kNotSupported) where has_source_images() is false.
  using ChooseBox = std::function<CropBox(int64_t height, int64_t width)>;
  virtual int32_t read_region(int64_t /*index*/, const ChooseBox& /*choose*/, uint8_t* /*pixels*/) const {
    throw core::Error(core::ErrorCode::kNotSupported, "this dataset has no source images to crop from");
  }
};

}  // namespace dt::data
