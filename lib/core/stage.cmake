# lib/core: volumes and geometry, errors, JSON and atomic files, zip files, logging, progress. Two targets:
# core (no torch) for every stage, and core_torch (the torch_*.cpp files: compat, memory, settings, info),
# on which every torch stage stands and which holds their shared precompiled torch header
# (cmake/MedsegStage.cmake).
medseg_stage(core
  SOURCES_NOT_MATCHING "/core/torch_[^/]*\\.cpp$"
  LIBS nlohmann_json::nlohmann_json spdlog::spdlog Threads::Threads
  PRIVATE_LIBS PkgConfig::LIBZIP ZLIB::ZLIB
  PUBLIC_HEADERS amp.h atomic_writer.h autocast.h cpu_features.h data_files.h digest.h disk_space.h error.h
                file_digest.h grid.h json_io.h json_object_reader.h log.h numeric.h ordered_json_io.h
                output_folder.h parallel.h path_component.h path_overlap.h paths.h progress.h rank_error_file.h
                signal_cleanup.h staged_file.h strings.h system_memory.h torch_compat.h
                torch_info.h torch_memory.h torch_settings.h volume.h volume_inl.h zip_archive.h)
medseg_stage(core_torch
  FOLDER core
  SOURCES_MATCHING "/core/torch_[^/]*\\.cpp$"
  DEPENDS core
  LIBS medseg_torch)
if(MEDSEG_USE_PCH)
  target_precompile_headers(medseg_stage_core_torch PRIVATE ${CMAKE_CURRENT_LIST_DIR}/torch_pch.h)
endif()
