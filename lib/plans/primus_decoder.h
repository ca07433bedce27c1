#pragma once
// dynamic-network-architectures' PatchDecode (Primus's decoder), as shapes: the one formula the network
// (models/primus.h) and the memory model (memory_primus_ops.cpp) both build from.
#include <cstdint>
#include <vector>

namespace medseg::planning {

// The transposed convolutions' channels (embed_dim, ..., num_classes) and each one's stride per axis.
struct PrimusDecoderStages {
  std::vector<int64_t> channels;
  std::vector<std::vector<int64_t>> strides;
};

// log2 of the largest patch side stages; stage n (counted from the tokens' side, reversed) upsamples an axis by
// 2 where patch / 2^n is even; channels shrink geometrically to 2 * classes, rounded to multiples of 8 (numpy
// rounds halves to even, as nearbyint does), and the last one is the classes.
PrimusDecoderStages primus_decoder_stages(const std::vector<int64_t>& patch_embed_size, int64_t embed_dim,
                                          int64_t num_classes);

}  // namespace medseg::planning
