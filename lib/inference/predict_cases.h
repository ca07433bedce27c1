#pragma once
// medseg_predict's case loop as a three-stage pipeline:
//   preprocess (npp threads: read + preprocess the next cases)  -> one slot per thread, taken in order
//   predict    (the calling thread: sliding window on the device)
//   export     (nps threads: resample, argmax, uncrop, write)   -> queue of at most nps cases
// With npp = 0 / nps = 0 that stage runs inline on the calling thread. Host memory is bounded by the
// queue capacities: at most 2 npp preprocessed cases (in a slot + being prepared) and nps + nps
// full-size logits (queued + being exported) exist at once. A failing case is recorded and skipped;
// the others run. With the predictor's process group (sharded prediction) every rank runs this
// with the same cases: they take rank 0's listing, predict in listing order, skip a case that failed
// to load on any rank, and only rank 0 exports.
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "inference/case_inputs.h"
#include "io/dicom_seg.h"
#include "inference/predictor.h"
#include "postprocessing/postprocessing.h"

namespace medseg::inference {

struct RunOptions {
  std::string output_folder;
  std::string file_ending = ".nii.gz";
  bool save_probabilities = false;
  bool probabilities_npy = true, probabilities_npz = false;  // ExportOptions' (--probabilities_format)
  bool continue_prediction = false;                          // skip cases whose outputs exist
  bool overlays = false;   // also overlays/CASE.png, a QA picture (inference/overlays.h)
  int npp = 2;             // preprocessing workers
  int nps = 2;             // export workers
  int export_threads = 1;  // classes resampled in parallel inside one export
  bool progress = true;
  std::vector<postprocessing::KeepLargestComponent> postprocessing;  // the model folder's postprocessing.json
  // --output_format (inference/dicom_output.h): "auto" writes a DICOM series' case as CASE.dcm, a DICOM
  // SEG described by dicom_seg; "nifti" writes every case in file_ending; "dicom_seg" and "rtstruct"
  // (CASE_rtstruct.dcm) fail cases that are not series.
  std::string output_format = "auto";
  // --series_uid: of a case folder holding several DICOM series, the one to read and reference ("": the
  // folder's only series); case_series_uid: per case (--series_uid CASE=UID), before series_uid.
  std::string series_uid;
  std::map<std::string, std::string> case_series_uid;
  // A DICOM series' case is also written in the formats output_format did not choose: file_ending, DICOM SEG and
  // RTSTRUCT side by side (medseg_serve, which lets a client pick the format when it fetches the result).
  bool every_format = false;
  io::DicomSegInfo dicom_seg;
};

struct RunSummary {
  int written = 0;
  int skipped = 0;                                          // existing outputs (--continue_prediction)
  std::vector<std::pair<std::string, std::string>> failed;  // case id, error
  double seconds = 0;
  double predict_seconds = 0;  // time in the sliding window (the device stage)
};

// --series_uid's values: "UID" (every case; at most one) or "CASE=UID" (that case), into o. Throws Error for
// two plain UIDs, a case named twice or an empty part.
void parse_series_uids(const std::vector<std::string>& values, RunOptions& o);

// The Series Instance UID to read for case `id` ("": its folder's only series).
const std::string& series_uid_of(const RunOptions& o, const std::string& id);

// Throws Error when case_series_uid names a case that `cases` does not hold (a misspelt name would
// otherwise read a folder's several series as an error).
void check_series_uid_cases(const RunOptions& o, const std::vector<CaseInput>& cases);

RunSummary predict_cases(Predictor& predictor, const std::vector<CaseInput>& cases, const RunOptions& opts);

// How case `c`'s segmentation is written under `o`: in file_ending, as a DICOM SEG (CASE.dcm) or as an
// RT Structure Set (CASE_rtstruct.dcm). Only a case read from a DICOM series gets DICOM output.
enum class DicomOutput { None, Seg, RtStruct };
DicomOutput dicom_output(const CaseInput& c, const RunOptions& o);

// The segmentation's ending of case `c`: ".dcm" (SEG), "_rtstruct.dcm" (RTSTRUCT), else o.file_ending.
std::string segmentation_ending(const CaseInput& c, const RunOptions& o);

// The files a case's prediction consists of (segmentation first).
std::vector<std::string> output_files(const std::string& output_folder, const std::string& id,
                                      const std::string& file_ending, bool save_probabilities, bool overlays = false,
                                      bool npy = true, bool npz = false);

}  // namespace medseg::inference
