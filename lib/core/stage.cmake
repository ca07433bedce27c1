# lib/core: volumes and geometry, errors, JSON and atomic files, zip files, logging, progress. Two targets:
# core (no torch) for every stage, and core_torch (the torch_*.cpp files: compat, memory, settings, info),
# on which every torch stage stands and which holds their shared precompiled torch header
# (cmake/MedsegStage.cmake).
medseg_stage(core
  SOURCES_NOT_MATCHING "/core/torch_[^/]*\\.cpp$"
  LIBS nlohmann_json::nlohmann_json spdlog::spdlog Threads::Threads
  PRIVATE_LIBS PkgConfig::LIBZIP ZLIB::ZLIB)
medseg_stage(core_torch
  FOLDER core
  SOURCES_MATCHING "/core/torch_[^/]*\\.cpp$"
  DEPENDS core
  LIBS medseg_torch)
if(MEDSEG_USE_PCH)
  target_precompile_headers(medseg_stage_core_torch PRIVATE ${CMAKE_CURRENT_LIST_DIR}/torch_pch.h)
endif()
