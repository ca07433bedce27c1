#include "planning/feature_map_size.h"

#include <stdexcept>

namespace medseg::planning {
namespace {

int64_t prod(const IntVec& v) {
  int64_t p = 1;
  for (auto x : v) p *= x;
  return p;
}

IntVec divide(const IntVec& size, const IntVec& stride) {
  IntVec out(size.size());
  for (std::size_t i = 0; i < size.size(); ++i) out[i] = size[i] / stride[i];  // "same" padding
  return out;
}

bool is_unit(const IntVec& s) {
  for (auto x : s)
    if (x != 1) return false;
  return true;
}

int64_t plain_encoder(const UNetShape& n, IntVec size) {
  int64_t out = 0;
  for (std::size_t s = 0; s < n.features.size(); ++s) {
    size = divide(size, n.strides[s]);  // the first conv of a stage carries the stride
    out += n.encoder_blocks[s] * n.features[s] * prod(size);
  }
  return out;
}

int64_t residual_encoder(const UNetShape& n, IntVec size) {
  int64_t out = n.features[0] * prod(size);  // stem: one conv, no stride
  int64_t in_ch = n.features[0];
  for (std::size_t s = 0; s < n.features.size(); ++s) {
    const IntVec after = divide(size, n.strides[s]);
    const int64_t vox = prod(after), c = n.features[s];
    for (int64_t b = 0; b < n.encoder_blocks[s]; ++b) {
      out += 2 * c * vox;  // conv1 and conv2 of BasicBlockD
      // The first block's skip path (avg-pool and/or 1x1 conv) counts when stride or channels change.
      if (b == 0 && (in_ch != c || !is_unit(n.strides[s]))) out += c * vox;
    }
    in_ch = c;
    size = after;
  }
  return out;
}

int64_t decoder(const UNetShape& n, IntVec size) {
  const std::size_t S = n.features.size();
  std::vector<IntVec> skip;  // resolution of encoder stages 0..S-2
  for (std::size_t s = 0; s + 1 < S; ++s) {
    size = divide(size, n.strides[s]);
    skip.push_back(size);
  }
  int64_t out = 0;
  for (std::size_t d = 0; d + 1 < S; ++d) {
    const std::size_t e = S - 2 - d;  // encoder stage this decoder stage joins
    const int64_t vox = prod(skip[e]), c = n.features[e];
    out += n.decoder_convs[d] * c * vox;                               // conv blocks
    out += c * vox;                                                    // transposed conv
    if (n.deep_supervision || d + 2 == S) out += n.num_classes * vox;  // segmentation head(s)
  }
  return out;
}

}  // namespace

int64_t conv_feature_map_size(const UNetShape& net, const IntVec& patch) {
  const std::size_t S = net.features.size();
  if (S == 0 || net.strides.size() != S || net.encoder_blocks.size() < S || net.decoder_convs.size() + 1 < S)
    throw std::invalid_argument("conv_feature_map_size: inconsistent stage counts");
  for (const auto& st : net.strides)
    if (st.size() != patch.size()) throw std::invalid_argument("conv_feature_map_size: stride rank != patch rank");
  return (net.residual_encoder ? residual_encoder(net, patch) : plain_encoder(net, patch)) + decoder(net, patch);
}

}  // namespace medseg::planning
