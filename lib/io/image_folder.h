#pragma once
// One scanner for folders of nnU-Net-named images (CASE_XXXX<file_ending>), shared by the case
// listing (training, prediction) and by medseg_verify_dataset, which also reports what does not fit.
#include <map>
#include <string>
#include <vector>

namespace medseg::io {

struct ImageFolderScan {
  std::map<std::string, std::map<int, std::string>> cases;  // case id -> channel index -> path
  std::vector<std::string> stray;     // entries that are neither CASE_XXXX<ending> nor a DICOM case folder
  std::vector<std::string> problems;  // "PATH: what is wrong" (a case given both as files and as a series)
};

// A DICOM case folder (docs/dicom.md): channel index -> series folder. A folder that directly holds DICOM
// files is channel 0 of its case; otherwise its subfolders 0000, 0001, ... that hold DICOM files are the
// case's channels. Empty when `dir` is neither.
std::map<int, std::string> dicom_case_channels(const std::string& dir);

// Hidden entries are skipped. With allow_plain, "CASE<ending>" counts as channel 0 of CASE (a
// single-channel model's plain input files). A subfolder that is a DICOM case folder is the case named
// after it, whatever file_ending is (the labels of such a dataset are files with that ending).
ImageFolderScan scan_image_folder(const std::string& folder, const std::string& file_ending, bool allow_plain);

// The names of the regular files directly in `folder` that end with `ending` and are longer than it
// (segmentations, saved probabilities), sorted.
std::vector<std::string> files_with_ending(const std::string& folder, const std::string& ending);

// Copies dataset.json and plans.json, where `from` holds them, into `to` (replacing): result folders
// (predictions, cross-validation, ensembles) carry them so that evaluation finds the labels.
void copy_dataset_jsons(const std::string& from, const std::string& to);

// folder/CASE_XXXX<file_ending>
std::string channel_file(const std::string& folder, const std::string& id, int channel, const std::string& file_ending);
// folder/CASE/XXXX: a channel's series folder in a DICOM case of several channels.
std::string dicom_channel_folder(const std::string& folder, const std::string& id, int channel);

// The files of case `id` when one file may hold several channels (an RGB .png is 3: io/image_formats.h):
// `files` (channel index -> path) from _0000 on, in order, until they hold the `n` channels that
// `expected_by` ("dataset.json declares", "the model takes") names. Throws FileError naming the missing
// file, or the last file when the channels they hold overshoot n. Reads each file's header.
std::vector<std::string> files_holding_channels(const std::string& id, const std::map<int, std::string>& files,
                                                const std::string& folder, const std::string& file_ending, int n,
                                                const std::string& expected_by);

}  // namespace medseg::io
