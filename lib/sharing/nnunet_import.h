#pragma once
// An nnU-Net v2 model folder (plans.json, dataset.json, fold_K/checkpoint_final.pth) as a medseg model folder,
// without Python: each .pth is read by sharing/torch_pickle.h, which runs no code. As
// scripts/import_nnunet_model.py does, each network tensor is kept once: nnU-Net's aliases (decoder.encoder.*,
// .all_modules.<i>) are dropped after checking that a kept tensor holds their values, and the prefixes DDP
// ("module.") and torch.compile ("_orig_mod.") add are removed (docs/predict.md, "nnU-Net models").
#include <string>
#include <vector>

namespace medseg::sharing {

struct NnunetImportOptions {
  std::string nnunet_folder;       // nnU-Net's model folder
  std::string output;              // the medseg model folder to write
  std::vector<std::string> folds;  // {} = every fold_K holding the checkpoint
  std::string checkpoint = "checkpoint_final";
  bool overwrite = false;
};

struct NnunetImportResult {
  std::vector<std::string> folds;
  int64_t tensors = 0;          // per fold
  int64_t aliases_dropped = 0;  // per fold
};

NnunetImportResult import_nnunet(const NnunetImportOptions& o);

}  // namespace medseg::sharing
