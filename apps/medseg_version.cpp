// medseg_version: prints the build (LibTorch version, CUDA, ITK, cairo).
#include "cli_common.h"
#include "core_torch/torch_info.h"
#include "visualization/overlay.h"

int main(int argc, char** argv) {
  CLI::App app{"Print medseg's build configuration", "medseg_version"};
  return medseg::cli::run(argc, argv, app, [] {
    std::printf("medseg 0.1.0, %s, ITK %s, cairo %s\n", medseg::torch_build_summary().c_str(),
#ifdef MEDSEG_WITH_ITK
                "on"
#else
                "off"
#endif
                ,
                medseg::visualization::overlays_available() ? "on" : "off");
    return 0;
  });
}
