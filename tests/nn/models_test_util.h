#pragma once
// Plans-style architecture blocks and closed-form parameter counts for the U-Net tests. The counts are
// written from dynamic-network-architectures' layer definitions (conv weight + bias, affine instance
// norm = 2 per channel), independently of lib/models.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace medseg::test {

using Shapes = std::vector<std::vector<int64_t>>;

inline nlohmann::json unet_arch(const std::string& cls, int dims, const std::vector<int64_t>& features,
                                const Shapes& kernels, const Shapes& strides, const std::vector<int64_t>& per_stage,
                                const std::vector<int64_t>& decoder) {
  const std::string d = std::to_string(dims);
  nlohmann::json kw = {
      {"n_stages", features.size()},
      {"features_per_stage", features},
      {"conv_op", "torch.nn.modules.conv.Conv" + d + "d"},
      {"kernel_sizes", kernels},
      {"strides", strides},
      {"n_conv_per_stage_decoder", decoder},
      {"conv_bias", true},
      {"norm_op", "torch.nn.modules.instancenorm.InstanceNorm" + d + "d"},
      {"norm_op_kwargs", {{"eps", 1e-5}, {"affine", true}}},
      {"dropout_op", nullptr},
      {"dropout_op_kwargs", nullptr},
      {"nonlin", "torch.nn.LeakyReLU"},
      {"nonlin_kwargs", {{"inplace", true}}},
  };
  kw[cls == "ResidualEncoderUNet" ? "n_blocks_per_stage" : "n_conv_per_stage"] = per_stage;
  return {{"network_class_name", "dynamic_network_architectures.architectures.unet." + cls},
          {"arch_kwargs", kw},
          {"_kw_requires_import", {"conv_op", "norm_op", "dropout_op", "nonlin"}}};
}

inline int64_t prod(const std::vector<int64_t>& v) {
  int64_t p = 1;
  for (auto x : v) p *= x;
  return p;
}

// conv (weight + bias) followed by an affine norm.
inline int64_t conv_norm(int64_t in, int64_t out, int64_t kvol, bool bias = true) {
  return in * out * kvol + (bias ? out : 0) + 2 * out;
}

inline int64_t decoder_params(const std::vector<int64_t>& f, const Shapes& k, const Shapes& s,
                              const std::vector<int64_t>& dec, int64_t classes) {
  int64_t n = 0;
  const size_t S = f.size();
  for (size_t i = 1; i < S; ++i) {
    const int64_t below = f[S - i], skip = f[S - i - 1];
    n += below * skip * prod(s[S - i]) + skip;  // transposed conv, kernel = stride, bias
    for (int64_t c = 0; c < dec[i - 1]; ++c) n += conv_norm(c == 0 ? 2 * skip : skip, skip, prod(k[S - i - 1]));
    n += skip * classes + classes;  // 1x1 seg head (built for every scale)
  }
  return n;
}

inline int64_t plain_unet_params(int64_t in, const std::vector<int64_t>& f, const Shapes& k, const Shapes& s,
                                 const std::vector<int64_t>& n_conv, const std::vector<int64_t>& dec, int64_t classes) {
  int64_t n = 0, prev = in;
  for (size_t i = 0; i < f.size(); ++i) {
    for (int64_t c = 0; c < n_conv[i]; ++c) n += conv_norm(c == 0 ? prev : f[i], f[i], prod(k[i]));
    prev = f[i];
  }
  return n + decoder_params(f, k, s, dec, classes);
}

inline int64_t resenc_unet_params(int64_t in, const std::vector<int64_t>& f, const Shapes& k, const Shapes& s,
                                  const std::vector<int64_t>& blocks, const std::vector<int64_t>& dec,
                                  int64_t classes) {
  int64_t n = conv_norm(in, f[0], prod(k[0]));  // stem
  int64_t prev = f[0];
  for (size_t i = 0; i < f.size(); ++i) {
    for (int64_t b = 0; b < blocks[i]; ++b) {
      const int64_t cin = b == 0 ? prev : f[i];
      n += conv_norm(cin, f[i], prod(k[i])) + conv_norm(f[i], f[i], prod(k[i]));
      if (cin != f[i]) n += conv_norm(cin, f[i], 1, /*bias=*/false);  // projection skip
    }
    prev = f[i];
  }
  return n + decoder_params(f, k, s, dec, classes);
}

}  // namespace medseg::test
