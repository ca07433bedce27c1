// medseg_model_info: builds the network of a plans configuration (or a SwinUNETR) and prints its class,
// unique trainable parameter count, the output shapes of a zero-input forward pass and the byte memory
// model's estimate of one GPU training step (planning/memory_model.h) and the FLOPs of one prediction forward
// pass of the patch (planning/network_flops.h) as JSON.
#include <torch/torch.h>

#include <iostream>

#include "cli_common.h"
#include "core/error.h"
#include "core/json_io.h"
#include "io/dataset.h"
#include "models/network.h"
#include "models/plans_architecture.h"
#include "planning/memory_model.h"
#include "planning/network_flops.h"
#include "plans/plan_limits.h"
#include "plans/plans.h"
#include "core_torch/torch_memory.h"
#include "planning/memory_check.h"

using namespace medseg;

namespace {

// The training step the plan describes: its batch (1 for SwinUNETR, MONAI's recipe), AMP as recorded
// in the plan's "medseg" block (on by default, like training), SGD, deep supervision, the plan's own
// checkpointing. null when the model does not cover the network (SwinUNETR v2's extra res blocks).
nlohmann::json memory_estimate(const nlohmann::json& arch, const std::vector<int64_t>& patch, int64_t batch, int64_t in,
                               int64_t classes, bool amp, const std::string& source) {
  const planning::ArchitecturePlan a = planning::architecture_from_json(arch, source);
  if (a.swin && a.swin->use_v2) return nullptr;
  planning::MemoryOptions o;
  o.amp = amp;
  const std::vector<int> p(patch.begin(), patch.end());
  try {
    const auto e = planning::estimate_training_memory(a, p, static_cast<int>(batch), static_cast<int>(in),
                                                      static_cast<int>(classes), o);
    return nlohmann::json::parse(e.to_json().dump());
  } catch (const Error& err) {  // a network the model does not cover: the rest of the report still stands
    std::cerr << "memory estimate: " << err.what() << "\n";
    return nullptr;
  }
}

// FLOPs of one prediction forward pass of one patch (planning/network_flops.h); null for the networks it does
// not count (SwinUNETR, Primus).
nlohmann::json forward_flops(const nlohmann::json& arch, const std::vector<int64_t>& patch, int64_t in, int64_t classes,
                             const std::string& source) {
  const planning::ArchitecturePlan a = planning::architecture_from_json(arch, source);
  if (!a.is_plain_unet() && !a.is_residual_encoder_unet()) return nullptr;
  return 2 * planning::forward_macs(a, std::vector<int>(patch.begin(), patch.end()), static_cast<int>(in),
                                    static_cast<int>(classes));
}

bool plan_amp(const nlohmann::json& medseg) {
  if (medseg.is_object() && medseg.contains("memory") && medseg.at("memory").is_object()) {
    const auto& m = medseg.at("memory");
    if (m.contains("amp") && m.at("amp").is_boolean()) return m.at("amp").get<bool>();
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Print a network's class, parameter count and output shapes as JSON", "medseg_model_info"};
  std::string plans_path, dataset_path, config;
  bool swinunetr = false, use_v2 = false, no_forward = false;
  int64_t in_channels = 1, out_channels = 2, feature_size = 48;
  std::vector<int64_t> patch;
  app.add_option("--plans", plans_path, "plans.json");
  app.add_option("--dataset-json", dataset_path, "dataset.json (channel and label counts)");
  app.add_option("-c,--configuration", config, "configuration name in plans.json, e.g. 3d_fullres");
  app.add_flag("--swinunetr", swinunetr, "describe a SwinUNETR instead of a plans configuration");
  app.add_option("--in-channels", in_channels, "SwinUNETR input channels");
  app.add_option("--out-channels", out_channels, "SwinUNETR output channels");
  app.add_option("--feature-size", feature_size, "SwinUNETR feature size (multiple of 12)");
  app.add_flag("--use-v2", use_v2, "SwinUNETR v2 (residual conv block before each Swin stage)");
  app.add_option("--patch", patch, "spatial patch for the forward pass (default: the plan's patch, 96^3 for Swin)");
  app.add_flag("--no-forward", no_forward, "skip the forward pass (output_shapes null)");
  int64_t batch = 0;
  std::string amp;
  app.add_option("--batch", batch, "batch size of the memory estimate (default: the plan's, 1 for --swinunetr)")
      ->check(CLI::PositiveNumber);
  app.add_option("--amp", amp, "mixed precision in the memory estimate (default: the plan's medseg block, else on)")
      ->check(CLI::IsMember({"on", "off"}));
  return cli::run(argc, argv, app, [&] {
    nlohmann::json arch, medseg_block;
    int64_t in = in_channels, classes = out_channels, plan_batch = 1;
    if (swinunetr) {
      arch = {{"network_class_name", "medseg.SwinUNETR"},
              {"arch_kwargs", {{"feature_size", feature_size}, {"use_v2", use_v2}}}};
      if (patch.empty()) patch = {96, 96, 96};
      arch["arch_kwargs"]["spatial_dims"] = static_cast<int>(patch.size());
    } else {
      if (plans_path.empty() || dataset_path.empty() || config.empty())
        throw Error("give --plans, --dataset-json and -c, or --swinunetr");
      const nlohmann::json plans_json = read_json(plans_path);
      // The plans reader's checks first (every value in range, names), so that a bad value is named
      // here rather than failing inside torch or in a huge allocation.
      planning::plans_from_json(plans_json, plans_path).configuration(config);
      const auto spec = models::plan_network_spec(plans_json, config, plans_path);
      const auto dataset = read_ordered_json(dataset_path);
      arch = spec.architecture;
      in = static_cast<int64_t>(io::channel_names_from_json(dataset, dataset_path).size());
      classes = io::network_outputs(io::labels_from_json(dataset, dataset_path));
      if (patch.empty()) patch = spec.patch_size;
      // Primus is built for one tile size, the configuration's patch (or --patch), which its block leaves out.
      if (planning::architecture_from_json(arch, plans_path).primus && !arch.at("arch_kwargs").contains("input_shape"))
        arch["arch_kwargs"]["input_shape"] = patch;
      if (spec.batch_size > 0) plan_batch = spec.batch_size;
      medseg_block = spec.medseg;
    }
    const std::string source = swinunetr ? "--swinunetr" : plans_path;
    for (int64_t p : patch)
      MEDSEG_CHECK(p >= 1 && p <= planning::PlanLimits::max_patch_edge, "--patch ", p, " is out of range (1..",
                   planning::PlanLimits::max_patch_edge, ")");
    // Refuse sizes that cannot fit before anything is allocated (planning/memory_check.h).
    planning::check_forward_fits(planning::architecture_from_json(arch, source),
                                 no_forward ? std::vector<int>{} : std::vector<int>(patch.begin(), patch.end()), 1,
                                 static_cast<int>(in), device_memory_limit("cpu"), source,
                                 swinunetr ? "" : "configuration '" + config + "'");
    models::NetworkBuildOptions opts;
    opts.deep_supervision = true;
    auto net = models::build_network(arch, in, classes, opts, swinunetr ? "--swinunetr" : plans_path);
    nlohmann::json out = {{"network_class_name", arch.at("network_class_name")},
                          {"class", net->class_name()},
                          {"spatial_dims", net->spatial_dims()},
                          {"in_channels", in},
                          {"num_classes", classes},
                          {"parameter_count", net->parameter_count()},
                          {"patch_size", patch},
                          {"deep_supervision", net->deep_supervision()},
                          {"output_shapes", nullptr},
                          {"estimated_peak_bytes", nullptr},
                          {"memory", nullptr},
                          {"forward_flops", nullptr}};
    if (static_cast<int>(patch.size()) == net->spatial_dims()) {
      const bool amp_on = amp.empty() ? plan_amp(medseg_block) : amp == "on";
      out["memory"] = memory_estimate(arch, patch, batch > 0 ? batch : plan_batch, in, classes, amp_on, source);
      if (!out["memory"].is_null()) out["estimated_peak_bytes"] = out["memory"]["estimated_peak_bytes"];
      out["forward_flops"] = forward_flops(arch, patch, in, classes, source);
    }
    if (!no_forward) {
      MEDSEG_CHECK(static_cast<int>(patch.size()) == net->spatial_dims(), "patch has ", patch.size(),
                   " axes, the network is ", net->spatial_dims(), "D");
      torch::NoGradGuard no_grad;
      net->eval();
      std::vector<int64_t> shape{1, in};
      shape.insert(shape.end(), patch.begin(), patch.end());
      nlohmann::json shapes = nlohmann::json::array();
      for (const auto& y : net->forward(torch::zeros(shape))) shapes.push_back(y.sizes().vec());
      out["output_shapes"] = shapes;
    }
    std::cout << out.dump(2) << std::endl;
    return 0;
  });
}
