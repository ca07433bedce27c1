#include "inference/dicom_output.h"

#include <filesystem>
#include <map>

#include "core/error.h"
#include "core/json_io.h"
#include "core/strings.h"

namespace fs = std::filesystem;

namespace medseg::inference {

namespace {

// Colours of segments without one in dicom_codes.json, in label order (matplotlib's tab10 without grey).
const std::array<std::array<uint8_t, 3>, 9> kPalette{{{31, 119, 180},
                                                      {255, 127, 14},
                                                      {44, 160, 44},
                                                      {214, 39, 40},
                                                      {148, 103, 189},
                                                      {140, 86, 75},
                                                      {227, 119, 194},
                                                      {188, 189, 34},
                                                      {23, 190, 207}}};

io::DicomCode code(const json& j, const std::string& file, const std::string& where) {
  MEDSEG_CHECK_FILE(j.is_array() && j.size() == 3 && j[0].is_string() && j[1].is_string() && j[2].is_string(), file,
                    where,
                    " must be [code value, coding scheme, code meaning], e.g. [\"10200004\", \"SCT\", "
                    "\"Liver\"]");
  io::DicomCode c{j[0].get<std::string>(), j[1].get<std::string>(), j[2].get<std::string>()};
  MEDSEG_CHECK_FILE(!c.value.empty() && c.value.size() <= 64 && !c.scheme.empty() && c.scheme.size() <= 16 &&
                        !c.meaning.empty() && c.meaning.size() <= 64,
                    file, where, ": a code value and meaning of 1..64 characters and a scheme of 1..16");
  return c;
}

std::array<uint8_t, 3> color(const json& j, const std::string& file, const std::string& where) {
  std::array<uint8_t, 3> rgb{};
  MEDSEG_CHECK_FILE(j.is_array() && j.size() == 3, file, where, " must be [r, g, b], each 0..255");
  for (std::size_t i = 0; i < 3; ++i) {
    MEDSEG_CHECK_FILE(j[i].is_number_integer() && j[i].get<int64_t>() >= 0 && j[i].get<int64_t>() <= 255, file, where,
                      " must be [r, g, b], each 0..255");
    rgb[i] = static_cast<uint8_t>(j[i].get<int64_t>());
  }
  return rgb;
}

// dataset.json's foreground names in output order: a plain label's value finds its name; regions go in
// the file's order of non-background labels.
std::vector<std::pair<int, std::string>> foreground(const ModelFolder& model, const LabelMapping& labels) {
  std::vector<std::pair<int, std::string>> out;
  std::vector<std::string> region_names;
  for (const io::LabelDef& l : model.dataset.labels)
    if (l.name != "background" && l.name != "ignore") region_names.push_back(l.name);
  for (std::size_t k = 0, r = 0; k < labels.values.size(); ++k) {
    const int v = labels.values[k];
    if (!labels.regions && v == 0) continue;
    std::string name = concat("label ", v);
    if (labels.regions) {
      if (r < region_names.size()) name = region_names[r++];
    } else {
      for (const io::LabelDef& l : model.dataset.labels)
        if (l.values.size() == 1 && l.values[0] == v) name = l.name;
    }
    out.emplace_back(v, name);
  }
  return out;
}

}  // namespace

void check_output_format(const std::string& format) {
  MEDSEG_CHECK(format == "auto" || format == "nifti" || format == "dicom_seg" || format == "rtstruct",
               "--output_format: '", format, "' is not auto, nifti, dicom_seg or rtstruct");
}

namespace {

// The model folder's dicom_codes.json "labels" object (empty without the file), each key a label the model segments.
json read_dicom_codes(const std::string& file, const std::vector<std::pair<int, std::string>>& fg) {
  if (!fs::exists(file)) return json::object();
  const json j = read_json(file);
  MEDSEG_CHECK_FILE(j.is_object() && j.contains("labels") && j.at("labels").is_object(), file,
                    "needs an object 'labels': {label name: {\"category\": [...], \"type\": [...]}}");
  std::map<std::string, bool> known;
  for (const auto& [value, name] : fg) known[name] = true;
  const json& codes = j.at("labels");
  for (auto it = codes.begin(); it != codes.end(); ++it)
    MEDSEG_CHECK_FILE(known.count(it.key()), file, "'labels' names '", it.key(), "', which the model does not segment");
  return codes;
}

// A segment's codes and colour from dicom_codes.json, where it names them.
void apply_codes(io::DicomSegSegment& s, const json& codes, const std::string& file) {
  if (!codes.contains(s.name)) return;
  const json& c = codes.at(s.name);
  const std::string where = "'labels' / '" + s.name + "'";
  MEDSEG_CHECK_FILE(c.is_object() && c.contains("category") && c.contains("type"), file, where,
                    " needs 'category' and 'type'");
  s.category = code(c.at("category"), file, where + " / 'category'");
  s.type = code(c.at("type"), file, where + " / 'type'");
  if (c.contains("color")) s.rgb = color(c.at("color"), file, where + " / 'color'");
}

}  // namespace

io::DicomSegInfo dicom_seg_info(const ModelFolder& model, const LabelMapping& labels, const std::string& version) {
  io::DicomSegInfo info;
  info.version = version;
  std::string folds;
  for (const FoldWeights& f : model.folds) folds += (folds.empty() ? "" : " ") + f.fold;
  info.description = concat(model.dataset.name, " ", model.configuration, " folds ", folds);
  const fs::path folder = fs::path(model.folder).lexically_normal();
  info.parameters =
      concat("model ", folder.parent_path().filename().string(), "/", folder.filename().string(), ", folds ", folds);
  const std::string file = (fs::path(model.folder) / "dicom_codes.json").string();
  const auto fg = foreground(model, labels);
  const json codes = read_dicom_codes(file, fg);
  for (std::size_t i = 0; i < fg.size(); ++i) {
    io::DicomSegSegment s;
    s.label = fg[i].first;
    s.name = fg[i].second;
    s.category = io::generic_category();
    s.type = io::generic_type();
    s.rgb = kPalette[i % kPalette.size()];
    apply_codes(s, codes, file);
    info.segments.push_back(std::move(s));
  }
  return info;
}

}  // namespace medseg::inference
