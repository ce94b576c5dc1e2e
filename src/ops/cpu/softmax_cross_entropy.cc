#include "ops/cpu/softmax_cross_entropy.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace dt::ops::cpu {

SoftmaxCrossEntropy::SoftmaxCrossEntropy(int64_t N, int64_t classes, Reduction reduction)
    : n_(N), classes_(classes), reduction_(reduction) {
  if (N <= 0 || classes <= 0) {
    throw std::invalid_argument("SoftmaxCrossEntropy: N and classes must be positive");
  }
  if (reduction != Reduction::kMean && reduction != Reduction::kSum) {
    throw std::invalid_argument("SoftmaxCrossEntropy: unknown reduction");
  }
  prob_.resize(static_cast<size_t>(N * classes));
  labels_.resize(static_cast<size_t>(N));
}

float SoftmaxCrossEntropy::forward(const float* logits, const int32_t* labels) {
  return forward_impl(logits, labels);
}

float SoftmaxCrossEntropy::forward(const float* logits, const int64_t* labels) {
  return forward_impl(logits, labels);
}

template <typename Label>
float SoftmaxCrossEntropy::forward_impl(const float* logits, const Label* labels) {
  if (logits == nullptr || labels == nullptr) {
    throw std::invalid_argument("SoftmaxCrossEntropy: logits and labels must not be null");
  }
  // Checked before anything is written, so a bad batch leaves the state of
  // the previous forward intact.
  for (int64_t i = 0; i < n_; ++i) {
    if (labels[i] < 0 || static_cast<int64_t>(labels[i]) >= classes_) {
      throw std::invalid_argument("SoftmaxCrossEntropy: label " + std::to_string(labels[i]) +
                                  " at row " + std::to_string(i) + " is outside [0, " +
                                  std::to_string(classes_) + ")");
    }
  }
  // Accumulated in double: a sum over a large batch of float losses would
  // otherwise lose digits the mean needs.
  double total = 0.0;
  for (int64_t i = 0; i < n_; ++i) {
    const float* row = logits + i * classes_;
    float* p = prob_.data() + i * classes_;
    const float max = *std::max_element(row, row + classes_);
    float sum = 0.0f;
    for (int64_t j = 0; j < classes_; ++j) {
      p[j] = std::exp(row[j] - max);
      sum += p[j];
    }
    const float inv = 1.0f / sum;
    for (int64_t j = 0; j < classes_; ++j) p[j] *= inv;
    const int64_t label = static_cast<int64_t>(labels[i]);
    labels_[i] = label;
    // log-softmax from the shifted logits, not log(p): p may underflow to 0.
    total += static_cast<double>(std::log(sum)) - static_cast<double>(row[label] - max);
  }
  have_forward_ = true;
  return static_cast<float>(reduction_ == Reduction::kMean ? total / static_cast<double>(n_)
                                                           : total);
}

void SoftmaxCrossEntropy::backward(float* dlogits, float dloss) const {
  if (!have_forward_) throw std::logic_error("SoftmaxCrossEntropy: backward before forward");
  if (dlogits == nullptr) throw std::invalid_argument("SoftmaxCrossEntropy: dlogits is null");
  const float scale =
      reduction_ == Reduction::kMean ? dloss / static_cast<float>(n_) : dloss;
  for (int64_t i = 0; i < n_; ++i) {
    const float* p = prob_.data() + i * classes_;
    float* d = dlogits + i * classes_;
    for (int64_t j = 0; j < classes_; ++j) d[j] = p[j] * scale;
    d[labels_[i]] -= scale;
  }
}

}  // namespace dt::ops::cpu
