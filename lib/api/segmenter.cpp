#include "api/segmenter.h"

#include <algorithm>
#include <filesystem>

#include "core/error.h"
#include "inference/case_inputs.h"
#include "inference/dicom_output.h"
#include "inference/model_folder.h"
#include "inference/predict_cases.h"
#include "inference/predict_folder.h"
#include "inference/predictor.h"
#include "io/case_loader.h"
#include "inference/zipped_cases.h"
#include "postprocessing/postprocessing.h"
#include "sharing/manifest.h"

namespace medseg::api {

struct Segmenter::Impl {
  std::unique_ptr<inference::Predictor> predictor;
  std::vector<postprocessing::KeepLargestComponent> postprocessing;
  std::string configuration;
};

Segmenter::Segmenter(const std::string& model_folder, const SegmenterOptions& o) : impl_(std::make_unique<Impl>()) {
  inference::check_step_size(o.step_size, "SegmenterOptions::step_size");
  inference::ModelFolder model = inference::load_model_folder(model_folder, o.folds, o.checkpoint);
  MEDSEG_CHECK(model.plans.configuration(model.configuration).previous_stage.empty(), model_folder,
               " holds configuration '", model.configuration,
               "', a cascade stage: it needs the previous stage's segmentation, which Segmenter does not take "
               "(use medseg_predict)");
  if (auto steps = o.postprocessing ? inference::folder_postprocessing(model_folder, model) : std::nullopt)
    impl_->postprocessing = std::move(*steps);
  impl_->configuration = model.configuration;
  inference::PredictorOptions po;
  po.step_size = o.step_size;
  po.mirroring = o.mirroring;
  po.device = o.device;
  po.amp = o.amp;
  po.torch_threads = o.threads;
  impl_->predictor = std::make_unique<inference::Predictor>(std::move(model), po);
}

Segmenter::~Segmenter() = default;

int64_t Segmenter::channels() const { return impl_->predictor->image_channels(); }

const std::string& Segmenter::configuration() const { return impl_->configuration; }

ModelDescription Segmenter::description() const {
  const inference::ModelFolder& m = impl_->predictor->model();
  ModelDescription d;
  d.configuration = m.configuration;
  for (const inference::FoldWeights& f : m.folds) d.folds.push_back(f.fold);
  d.channels = m.dataset.channel_names;
  for (const io::LabelDef& l : m.dataset.labels) d.labels.emplace_back(l.name, l.values);
  d.file_ending = m.dataset.file_ending;
  return d;
}

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

namespace {

// The predictor reports tiles to `progress` while it lives and notes whether the callback asked to stop.
class TileReports {
 public:
  TileReports(inference::Predictor& p, const Progress& progress) : p_(p) {
    if (!progress) return;
    p.set_tile_callback([this, &progress](int64_t done, int64_t total) {
      cancelled_ = !progress(total > 0 ? static_cast<double>(done) / static_cast<double>(total) : 1.0);
      return !cancelled_;
    });
  }
  ~TileReports() { p_.set_tile_callback({}); }
  TileReports(const TileReports&) = delete;
  TileReports& operator=(const TileReports&) = delete;
  bool cancelled() const { return cancelled_; }

 private:
  inference::Predictor& p_;
  bool cancelled_ = false;
};

}  // namespace

std::vector<std::string> Segmenter::segment_files(const std::vector<std::string>& inputs,
                                                  const std::string& output_folder, const FileOptions& options) {
  inference::Predictor& p = *impl_->predictor;
  const int channels = static_cast<int>(p.image_channels());
  std::vector<inference::CaseInput> cases =
      inference::collect_case_inputs(inputs, p.model().dataset.file_ending, channels);
  MEDSEG_CHECK(cases.size() == 1, "the inputs hold ", std::to_string(cases.size()), " cases, segment_files takes one");
  inference::ZippedCases zipped;  // a zipped series is extracted until the case is written
  zipped.expand(cases, channels);
  MEDSEG_CHECK(cases[0].error.empty(), cases[0].error);

  // medseg_predict's options for one case, run inline on this thread (predict_folder.cpp).
  inference::RunOptions ro;
  ro.output_folder = output_folder;
  ro.file_ending = p.model().dataset.file_ending;
  ro.npp = ro.nps = 0;
  ro.progress = false;
  ro.overlays = options.overlays;
  ro.postprocessing = impl_->postprocessing;
  ro.output_format = options.output_format;
  ro.series_uid = options.series_uid;
  ro.every_format = options.every_format;
  inference::check_output_format(ro.output_format);
  if (inference::dicom_output(cases[0], ro) != inference::DicomOutput::None || ro.every_format)
    ro.dicom_seg = inference::dicom_seg_info(p.model(), p.labels(), sharing::medseg_version());
  std::filesystem::create_directories(output_folder);

  TileReports reports(p, options.progress);
  const inference::RunSummary s = inference::predict_cases(p, cases, ro);
  if (reports.cancelled()) throw Cancelled("prediction cancelled");
  MEDSEG_CHECK(s.failed.empty(), s.failed.front().second);
  std::vector<std::string> files = inference::output_files(
      output_folder, cases[0].id, inference::segmentation_ending(cases[0], ro), false, ro.overlays);
  if (ro.every_format)
    for (const std::string& ending : {ro.file_ending, std::string(".dcm"), std::string("_rtstruct.dcm")}) {
      const std::string f = (std::filesystem::path(output_folder) / (cases[0].id + ending)).string();
      if (std::filesystem::exists(f) && std::find(files.begin(), files.end(), f) == files.end()) files.push_back(f);
    }
  return files;
}

}  // namespace medseg::api
