// Mixed precision is spelled the same everywhere (trainer config "amp", medseg_train --amp,
// medseg_predict --amp, medseg_bench_models --amp) and read by one parser: an unknown value is
// refused with the flag or the file and key named, never silently trained in fp32.
#include <gtest/gtest.h>

#include <fstream>
#include <vector>

#include "core/amp.h"
#include "core/error.h"
#include "support/test_support.h"

using namespace medseg;

TEST(Amp, ParsesTheFourSpellings) {
  const std::pair<const char*, AmpMode> rows[] = {
      {"auto", AmpMode::Auto}, {"off", AmpMode::Off}, {"fp16", AmpMode::Fp16}, {"bf16", AmpMode::Bf16}};
  for (const auto& [text, mode] : rows) {
    SCOPED_TRACE(text);
    EXPECT_EQ(parse_amp(text, "--amp"), mode);
    EXPECT_STREQ(to_string(mode), text);
  }
}

TEST(Amp, RefusesOtherValuesNamingTheFlagOrTheFileAndKey) {
  for (const char* bad : {"fp61", "FP16", "", "on", "fp32", "none"}) {
    SCOPED_TRACE(bad);
    try {
      parse_amp(bad, "--amp");
      ADD_FAILURE() << "accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("--amp"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("'" + std::string(bad) + "'"), std::string::npos) << e.what();
    }
    try {
      parse_amp(bad, "amp", "cfg.json");
      ADD_FAILURE() << "accepted";
    } catch (const FileError& e) {
      EXPECT_EQ(e.path(), "cfg.json");
      EXPECT_NE(std::string(e.what()).find("key 'amp'"), std::string::npos) << e.what();
    }
  }
}

// Each CLI refuses the value before touching any dataset or model (none exists here): exit != 0,
// one line naming the flag (or the config file) and the value.
TEST(Amp, EveryCliRefusesAnUnknownValue) {
  test::TempDir d("amp");
  const std::string cfg = d / "trainer.json";
  std::ofstream(cfg) << R"({"amp": "fp61"})";
  struct Row {
    const char *name, *app;
    std::string args, expected;
  };
  const std::vector<Row> rows = {
      {"train_flag", "medseg_train", "1 3d_fullres 0 --amp fp61", "--amp"},
      {"train_config", "medseg_train", "1 3d_fullres 0 --tr " + cfg, cfg + ": key 'amp'"},
#ifdef MEDSEG_WITH_ITK  // medseg_predict reads images: not built without ITK
      {"predict_flag", "medseg_predict", "-i " + d.path() + " -o " + (d / "out") + " -m " + d.path() + " --amp fp61",
       "--amp"},
#endif
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.name);
    const test::CmdResult res =
        test::run_cli(r.app, r.args, "MEDSEG_RESULTS=" + d.path() + " MEDSEG_PREPROCESSED=" + d.path());
    EXPECT_NE(res.exit_code, 0);
    EXPECT_NE(res.output.find(r.expected), std::string::npos) << res.output;
    EXPECT_NE(res.output.find("'fp61'"), std::string::npos) << res.output;
  }
}
