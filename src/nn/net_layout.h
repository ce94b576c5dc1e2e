// A net-wide activation layout: the description of the same net whose 4-d
// part runs in NHWC. Every layer that takes MXNet's `layout` (Conv2D, the
// poolings, BatchNorm on 4-d input) gets "NHWC"; element-wise layers (the
// activations, Dropout, Add) follow their input; a LayoutConvert layer goes
// after each 4-d graph input and before the first layer that reads a 4-d
// value in NCHW (Flatten, Dense), each value converted once however many
// layers read it. Flatten and Dense skip the conversion where both layouts
// hold the same bytes (one channel, or 1 x 1 planes: after global pooling).
//
// Parameters are untouched (Conv2D weights stay OIHW, Dense sees the NCHW
// flattening), so checkpoints, kvstores and the parameter order are the
// same as the NCHW net's, and so are its results up to float rounding.
#pragma once

#include "nn/net_description.h"
#include "ops/tensor_layout.h"

namespace dt::nn {

// The description as above for NHWC; for NCHW, d itself. Layers whose
// description already sets `layout` keep it, and an already converted
// description comes back unchanged, so the rewrite may be applied again
// (to a net's own description, by clone()). A description whose shapes
// cannot be inferred comes back as is: building the Net reports its errors.
NetDescription with_activation_layout(const NetDescription& d, ops::TensorLayout layout);

// DT_CONV_LAYOUT: "NCHW" (also when unset) or "NHWC"; Error(kInvalidArgument)
// naming the variable for anything else.
ops::TensorLayout activation_layout_from_environment();

}  // namespace dt::nn
