// medseg_bench_models: times forward + backward of a training step for ResEnc M (3D) or SwinUNETR
// (feature 24) on random input, the same protocol as scripts/bench/ref_models.py (first iteration
// discarded, median of the rest). scripts/bench/bench_models.sh runs both side by side. On CUDA it
// also reports fp16/bf16 step time and the caching allocator's peak (docs/gpu-validation.md).
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <memory>
#include <cstdio>

#include "cli_common.h"
#include "core_torch/autocast.h"
#include "core/error.h"
#include "core/torch_compat.h"
#include "core_torch/torch_memory.h"
#include "models/network.h"

using namespace medseg;

namespace {

nlohmann::json resenc_m_arch() {
  using V = std::vector<int64_t>;
  using S = std::vector<V>;
  return {{"network_class_name", "dynamic_network_architectures.architectures.unet.ResidualEncoderUNet"},
          {"arch_kwargs",
           {{"n_stages", 6},
            {"features_per_stage", V{32, 64, 128, 256, 320, 320}},
            {"conv_op", "torch.nn.modules.conv.Conv3d"},
            {"kernel_sizes", S(6, V{3, 3, 3})},
            {"strides", S{{1, 1, 1}, {2, 2, 2}, {2, 2, 2}, {2, 2, 2}, {2, 2, 2}, {2, 2, 2}}},
            {"n_blocks_per_stage", V{1, 3, 4, 6, 6, 6}},
            {"n_conv_per_stage_decoder", V{1, 1, 1, 1, 1}},
            {"conv_bias", true},
            {"norm_op", "torch.nn.modules.instancenorm.InstanceNorm3d"},
            {"norm_op_kwargs", {{"eps", 1e-5}, {"affine", true}}},
            {"dropout_op", nullptr},
            {"nonlin", "torch.nn.LeakyReLU"},
            {"nonlin_kwargs", {{"inplace", true}}}}}};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Time forward+backward of ResEnc M / SwinUNETR", "medseg_bench_models"};
  std::string model = "resenc";
  int64_t patch = 128, batch = 1, iters = 3;
  int threads = 2;
  bool channels_last = false, no_inplace = false, checkpoint = false, memory = false;
  std::string device = "cpu", amp = "off", cudnn_benchmark = "on";
  app.add_option("--model", model, "resenc (ResEnc M, 1 -> 3) or swin (SwinUNETR F24, 1 -> 14)")
      ->check(CLI::IsMember({"resenc", "swin"}));
  app.add_option("--patch", patch, "cubic patch edge");
  app.add_option("--batch", batch, "batch size");
  app.add_option("--threads", threads, "torch intra-op threads (at::set_num_threads)");
  app.add_option("--iters", iters, "timed iterations (after one warm-up)");
  app.add_flag("--channels-last", channels_last, "channels-last 3D memory format for weights and input");
  app.add_flag("--no-inplace", no_inplace, "out-of-place LeakyReLU / residual additions");
  app.add_flag("--checkpoint", checkpoint, "activation checkpointing (ResEnc: encoder stages; Swin: blocks)");
  app.add_flag("--memory", memory,
               "report the peak bytes of a step (CPU: counting allocator; CUDA: caching allocator)");
  app.add_option("--device", device, "cpu or cuda")->check(CLI::IsMember({"cpu", "cuda"}))->capture_default_str();
  app.add_option("--amp", amp, "autocast: off, fp16 (CUDA), bf16 or auto (fp16 on CUDA)")->capture_default_str();
  app.add_option("--cudnn-benchmark", cudnn_benchmark, "cuDNN autotuning: on|off")
      ->check(CLI::IsMember({"on", "off"}))
      ->capture_default_str();
  return cli::run(argc, argv, app, [&] {
    at::set_num_threads(threads);
    torch::manual_seed(0);
    const bool cuda = device == "cuda";
    if (cuda && !torch::cuda::is_available())
      throw Error("--device cuda: no CUDA device (" + compat::torch_version() + ")");
    const AutocastSetting autocast = autocast_setting(parse_amp(amp, "--amp"), cuda);
    compat::set_cudnn(cudnn_benchmark == "on", false);
    if (memory && !cuda) install_counting_cpu_allocator();
    const torch::Device dev(cuda ? torch::kCUDA : torch::kCPU);
    models::NetworkBuildOptions o;
    o.inplace = !no_inplace;
    o.checkpoint_encoder = checkpoint;
    o.use_checkpoint_override = checkpoint;
    const nlohmann::json arch = model == "resenc" ? resenc_m_arch()
                                                  : nlohmann::json{{"network_class_name", "medseg.SwinUNETR"},
                                                                   {"arch_kwargs", {{"feature_size", 24}}}};
    auto net = models::build_network(arch, 1, model == "resenc" ? 3 : 14, o);
    net->to(dev);
    net->train();
    auto x = torch::randn({batch, 1, patch, patch, patch}, torch::TensorOptions().device(dev));
    if (channels_last) {
      torch::NoGradGuard ng;
      for (auto& p : net->parameters())
        if (p.dim() == 5) p.set_data(p.contiguous(at::MemoryFormat::ChannelsLast3d));
      x = x.contiguous(at::MemoryFormat::ChannelsLast3d);
    }
    std::vector<double> times, cpu_times;
    int64_t peak = 0;
    for (int64_t i = 0; i <= iters; ++i) {
      std::unique_ptr<CpuPeakScope> scope;
      if (memory && !cuda) scope = std::make_unique<CpuPeakScope>();
      if (memory && cuda) {
        torch::cuda::synchronize();
        compat::cuda_reset_peak();
      }
      const int64_t cuda_start = cuda ? compat::cuda_allocated().current : 0;
      const auto t0 = std::chrono::steady_clock::now();
      const std::clock_t c0 = std::clock();  // process CPU time: robust on a shared, loaded machine
      {
        torch::Tensor loss = torch::zeros({}, torch::TensorOptions().device(dev));
        {
          AutocastGuard ac(cuda, autocast.enabled, autocast.dtype);
          for (auto& y : net->forward(x)) loss = loss + y.to(torch::kFloat32).mean();
        }
        loss.backward();
      }
      net->zero_grad(/*set_to_none=*/true);
      if (cuda) torch::cuda::synchronize();
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (scope) peak = std::max(peak, scope->peak_above_start());
      if (memory && cuda) peak = std::max(peak, compat::cuda_allocated().peak - cuda_start);
      const double cpu = static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC;
      if (i > 0) {
        times.push_back(s);
        cpu_times.push_back(cpu);
      }
    }
    std::sort(times.begin(), times.end());
    std::sort(cpu_times.begin(), cpu_times.end());
    std::printf("params=%lld\n", static_cast<long long>(net->parameter_count()));
    if (memory) std::printf("step_peak_bytes=%lld\n", static_cast<long long>(peak));
    std::printf("median_s=%.4f\n", times.empty() ? 0.0 : times[times.size() / 2]);
    std::printf("median_cpu_s=%.4f\n", cpu_times.empty() ? 0.0 : cpu_times[cpu_times.size() / 2]);
    return 0;
  });
}
