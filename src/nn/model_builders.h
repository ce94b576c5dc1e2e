// Ready-made networks, as descriptions (so dt_net_to_json shows them and
// they can be edited and rebuilt):
//  - "mlp": Flatten, then Dense + activation per hidden size, Dense classes.
//    Options: input_shape [1, 28, 28], hidden [256, 128], classes 10,
//    activation "relu" ("tanh", "sigmoid").
//  - "lenet": LeNet-5 as in the MXNet and SINGA distributed-training
//    tutorials: Conv2D 20@5x5, act, MaxPool 2x2/2, Conv2D 50@5x5, act,
//    MaxPool 2x2/2, Flatten, Dense 500, act, Dense classes. The activation is
//    ReLU by default (MXNet's tutorial shows tanh and relu; ReLU does not
//    saturate and trains faster). Options: input_shape [1, 28, 28],
//    classes 10, activation "relu" ("tanh", "sigmoid").
//  - "resnet18": the CIFAR ResNet-18 as CIFAR recipes tune it (d2l's layout
//    with BatchNorm-friendly convolutions; "resnet18_d2l" is d2l's own): a 3x3
//    stride-1 64-channel stem + BatchNorm + ReLU and no max pool, four stages
//    of two basic blocks (64, 128, 256, 512 channels; stages 2-4 start with
//    stride 2 and a 1x1 conv + BatchNorm projection on the shortcut),
//    global average pooling, Dense classes. Convolutions feeding BatchNorm
//    carry no bias (BatchNorm's beta makes it redundant), which gives the
//    usual 11,173,962 learnable parameters for 10 classes. Options:
//    input_shape [3, 32, 32], classes 10.
//  - "resnet18_imagenet": torchvision's resnet18 for 224x224 images: a 7x7
//    stride-2 64-channel stem (padding 3, no bias) + BatchNorm + ReLU, a 3x3
//    stride-2 MaxPool (padding 1), then the same stages, pooling and Dense
//    as "resnet18": 11,689,512 learnable parameters for 1000 classes, as
//    torchvision counts. Any input of at least 1x1 works (global pooling);
//    each side shrinks 32x. Options: input_shape [3, 224, 224], classes 1000.
//  - "resnet18_d2l": d2l's resnet18 exactly as its multi-GPU chapter builds
//    it (d2l.Residual): the same stem and stages as "resnet18", but every
//    convolution has a bias and the shortcut of a block that changes width
//    or stride is a 1x1 convolution without BatchNorm: 11,176,970 learnable
//    parameters for 10 classes. Options: input_shape [3, 32, 32], classes 10.
//  - "vgg11": Gluon's model-zoo VGG-11 (mxnet.gluon.model_zoo.vision.vgg11):
//    eight 3x3 convolutions with biases (64, 128, 256, 256, 512, 512, 512,
//    512 channels), each + ReLU, MaxPool 2x2/2 after the 1st, 2nd, 4th, 6th
//    and 8th, then Flatten, Dense 4096 + ReLU + Dropout 0.5 twice and Dense
//    classes: 28,144,010 learnable parameters for 10 classes on 32x32 images.
//    Options: input_shape [3, 32, 32] (at least 32x32), classes 10.
//  - "vgg11_bn_cifar": VGG-11 with BatchNorm for 32x32 images, as CIFAR
//    recipes build it: the same convolutions without bias, each + BatchNorm
//    + ReLU, and one Dense classes on the 512 features in place of the two
//    4096-wide layers: 9,228,362 learnable parameters for 10 classes.
//    Options: input_shape [3, 32, 32] (at least 32x32), classes 10.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "nn/net_description.h"

namespace dt::nn {

// The known builder names, for messages and documentation.
std::vector<std::string> model_builder_names();

// options: null or a JSON object of the builder's options. An unknown
// builder, an unknown option key, or a value of the wrong type or range is
// Error(kInvalidArgument) saying which.
NetDescription build_model_description(const std::string& builder, const nlohmann::json& options);
// The same with the options as JSON text; empty text means defaults.
NetDescription build_model_description_from_text(const std::string& builder, const std::string& options_json);

}  // namespace dt::nn
