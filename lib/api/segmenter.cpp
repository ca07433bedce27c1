#include "api/segmenter.h"

#include "core/error.h"
#include "inference/model_folder.h"
#include "inference/predict_folder.h"
#include "inference/predictor.h"
#include "io/case_loader.h"
#include "postprocessing/postprocessing.h"

namespace medseg::api {

struct Segmenter::Impl {
  std::unique_ptr<inference::Predictor> predictor;
  std::vector<postprocessing::KeepLargestComponent> postprocessing;
  std::string configuration;
};

Segmenter::Segmenter(const std::string& model_folder, const SegmenterOptions& o) : impl_(std::make_unique<Impl>()) {
  inference::check_step_size(o.step_size, "SegmenterOptions::step_size");
  inference::ModelFolder model = inference::load_model_folder(model_folder, o.folds, o.checkpoint);
  if (!model.plans.configuration(model.configuration).previous_stage.empty())
    throw Error(model_folder + " holds configuration '" + model.configuration +
                "', a cascade stage: it needs the previous stage's segmentation, which Segmenter does not take "
                "(use medseg_predict)");
  if (auto steps = o.postprocessing ? inference::folder_postprocessing(model_folder, model) : std::nullopt)
    impl_->postprocessing = std::move(*steps);
  impl_->configuration = model.configuration;
  inference::PredictorOptions po;
  po.step_size = o.step_size;
  po.mirroring = o.mirroring;
  po.device = o.device;
  po.torch_threads = o.threads;
  impl_->predictor = std::make_unique<inference::Predictor>(std::move(model), po);
}

Segmenter::~Segmenter() = default;

int64_t Segmenter::channels() const { return impl_->predictor->image_channels(); }

const std::string& Segmenter::configuration() const { return impl_->configuration; }

Segmentation Segmenter::segment(const std::vector<Volume>& image, const SegmentOptions& options) {
  const bool probabilities = options.probabilities;
  const Progress& progress = options.progress;
  inference::Predictor& p = *impl_->predictor;
  MEDSEG_CHECK(static_cast<int64_t>(image.size()) == channels(), "the image has ", image.size(),
               " channel(s), the model expects ", channels());
  preprocessing::PreprocessedCaseData data = p.preprocess(io::case_from_volumes("image", image, p.reorients_to_ras()));
  inference::ExportOptions eo = p.export_defaults();
  eo.save_probabilities = probabilities;
  eo.postprocessing = impl_->postprocessing;

  // The window reports tiles; the callback sees a fraction. Cleared however segment() ends.
  struct ClearCallback {
    inference::Predictor& p;
    ~ClearCallback() { p.set_tile_callback({}); }
  } clear{p};
  if (progress)
    p.set_tile_callback([&progress](int64_t done, int64_t total) {
      return progress(total > 0 ? static_cast<double>(done) / static_cast<double>(total) : 1.0);
    });
  Segmentation out;
  out.classes = p.labels().values;
  out.labels = p.segmentation(p.predict_case(data.arrays, data.properties, eo, "image"), data.properties, eo,
                              probabilities ? &out.probabilities : nullptr);
  if (!eo.postprocessing.empty()) out.labels = postprocessing::apply_postprocessing(out.labels, eo.postprocessing);
  return out;
}

}  // namespace medseg::api
