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

// Writes the model folder o.output (staged, then moved into place; o.overwrite replaces one). Refuses an
// output that is, contains or lies inside the nnU-Net folder, fold and checkpoint names that are not single
// path components, and any checkpoint whose weights do not fit the network the plans describe.
NnunetImportResult import_nnunet(const NnunetImportOptions& o);

// import_nnunet's conversion into `folder`, an empty folder the caller stages and commits (o.output and
// o.overwrite are not used): for installs of several models that must land all or none.
NnunetImportResult import_nnunet_into(const NnunetImportOptions& o, const std::string& folder);

}  // namespace medseg::sharing
