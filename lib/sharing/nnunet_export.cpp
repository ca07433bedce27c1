#include "sharing/nnunet_export.h"

#include <torch/serialize.h>

#include <filesystem>
#include <fstream>
#include <regex>

#include "core/error.h"
#include "core/path_overlap.h"
#include "core/json_io.h"
#include "core/output_folder.h"
#include "inference/model_folder.h"
#include "sharing/torch_save.h"
#include "training/trainer_config.h"

namespace fs = std::filesystem;

namespace medseg::sharing {
namespace {

// nnU-Net's networks from dynamic-network-architectures: the only ones its predictor builds from plans.
bool nnunet_builds(const nlohmann::json& plans, const std::string& configuration, bool* dropout) {
  const auto& cfg = plans.at("configurations").at(configuration);
  if (!cfg.contains("architecture")) return false;
  const auto& arch = cfg.at("architecture");
  const std::string cls = arch.value("network_class_name", "");
  *dropout = arch.contains("arch_kwargs") && arch.at("arch_kwargs").contains("dropout_op") &&
             !arch.at("arch_kwargs").at("dropout_op").is_null();
  return cls == "dynamic_network_architectures.architectures.unet.PlainConvUNet" ||
         cls == "dynamic_network_architectures.architectures.unet.ResidualEncoderUNet";
}

// A Primus configuration: nnU-Net builds it in its Primus trainers (build_network_architecture), not from the
// plans, so it is exported under the trainer whose own network it is (the medseg run wrote that trainer's
// architecture into the plans: training/run_folder.h), or refused.
bool primus_of_its_trainer(const nlohmann::json& plans, const std::string& configuration, const std::string& trainer) {
  const auto& arch = plans.at("configurations").at(configuration).value("architecture", nlohmann::json());
  static const std::regex primus("^nnUNet_Primus(_|V[23])[SBML]_Trainer$");
  if (!arch.is_object() || !std::regex_match(trainer, primus)) return false;
  try {
    return training::find_trainer_config(trainer).architecture == arch;
  } catch (const Error&) { return false; }
}

// medseg trainer names that are nnU-Net classes (docs/trainer_variants.md); anything else trains the same
// network and is exported as nnUNetTrainer, whose build_network_architecture reads the plans alone.
std::string nnunet_trainer(const std::string& own) {
  static const std::regex known(
      "^nnUNetTrainer(_\\d+epochs?(_NoMirroring)?|NoMirroring|_onlyMirror01|NoDeepSupervision)?$");
  return std::regex_match(own, known) ? own : "nnUNetTrainer";
}

c10::IValue mirror_axes_value(const std::vector<int64_t>& axes) {
  if (axes.empty()) return c10::IValue();  // None: nnU-Net predicts without mirroring
  std::vector<c10::IValue> items(axes.begin(), axes.end());
  return c10::ivalue::Tuple::create(std::move(items));
}

}  // namespace

std::vector<std::string> nnunet_state_dict_names(const std::string& name, bool dropout) {
  std::vector<std::string> views{name};
  if (name.rfind("encoder.", 0) == 0) views.push_back("decoder." + name);
  static const std::regex block("^(.*)\\.(conv|norm)\\.([A-Za-z_]+)$");
  const size_t n = views.size();
  for (size_t i = 0; i < n; ++i) {
    std::smatch m;
    if (!std::regex_match(views[i], m, block)) continue;
    const std::string index = m[2] == "conv" ? "0" : (dropout ? "2" : "1");
    views.push_back(m[1].str() + ".all_modules." + index + "." + m[3].str());
  }
  return views;
}

NnunetExportResult export_nnunet(const NnunetExportOptions& o) {
  check_output_apart(o.output, o.model_folder, "model folder being exported");
  const inference::ModelFolder m = inference::load_model_folder(o.model_folder, o.folds, o.checkpoint);
  bool dropout = false;
  const bool primus = primus_of_its_trainer(m.plans_json, m.configuration, m.trainer_name);
  MEDSEG_CHECK_FILE(
      primus || nnunet_builds(m.plans_json, m.configuration, &dropout), o.model_folder, "configuration '",
      m.configuration,
      "' is not a network nnU-Net builds from plans (PlainConvUNet or "
      "ResidualEncoderUNet) nor the Primus of the nnU-Net trainer it was trained "
      "with (nnUNet_Primus_{S,B,M,L}_Trainer, nnUNet_PrimusV{2,3}{S,B,M,L}_Trainer); it cannot be exported to nnU-Net");
  NnunetExportResult r;
  r.trainer_name = primus ? m.trainer_name : o.trainer_name.empty() ? nnunet_trainer(m.trainer_name) : o.trainer_name;
  StagedFolder out(o.output);
  write_json(out.path() + "/plans.json", m.plans_json);
  write_file_atomic(out.path() + "/dataset.json", m.dataset_json.dump(4));
  const fs::path fingerprint = fs::path(o.model_folder) / "dataset_fingerprint.json";
  if (fs::is_regular_file(fingerprint)) fs::copy_file(fingerprint, out.path() + "/dataset_fingerprint.json");
  for (const auto& f : m.folds) {
    c10::Dict<std::string, at::Tensor> weights;
    r.tensors = 0;
    r.aliases = 0;
    for (const auto& [name, t] : f.weights) {
      const at::Tensor cpu = t.detach().to(at::kCPU).contiguous();
      // Primus's names are dynamic-network-architectures' already, but for the conv blocks of V2's and V3's
      // residual patch embedding, which have all_modules aliases there too; the U-Nets' get nnU-Net's aliases.
      const bool aliased = !primus || name.rfind("down_projection.", 0) == 0;
      const std::vector<std::string> views =
          aliased ? nnunet_state_dict_names(name, dropout) : std::vector<std::string>{name};
      for (const std::string& view : views) weights.insert(view, cpu);
      r.tensors += 1;
      r.aliases += static_cast<int64_t>(views.size()) - 1;
    }
    c10::impl::GenericDict init_args(c10::StringType::get(), c10::AnyType::get());
    init_args.insert("configuration", m.configuration);
    init_args.insert("fold", f.fold == "all" ? c10::IValue(std::string("all"))
                                             : c10::IValue(static_cast<int64_t>(std::stoll(f.fold))));
    c10::impl::GenericDict ck(c10::StringType::get(), c10::AnyType::get());
    ck.insert("network_weights", weights);
    ck.insert("trainer_name", r.trainer_name);
    ck.insert("init_args", init_args);
    ck.insert("inference_allowed_mirroring_axes", mirror_axes_value(m.mirror_axes));
    ck.insert("current_epoch", static_cast<int64_t>(0));
    const fs::path dir = fs::path(out.path()) / ("fold_" + f.fold);
    fs::create_directories(dir);
    torch_save(c10::IValue(ck), (dir / "checkpoint_final.pth").string());
    r.folds.push_back(f.fold);
  }
  out.commit(o.overwrite);
  return r;
}

}  // namespace medseg::sharing
