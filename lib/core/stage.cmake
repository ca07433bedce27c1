# lib/core: volumes and geometry, errors, JSON and atomic files, zip files, logging, progress; no torch.
# torch_compat.h is the one header here that includes torch: the project keeps every LibTorch version or
# CUDA difference in lib/core/torch_compat.h, and only torch stages include it (core compiles none of it); what
# the torch stages share besides is lib/core_torch.
medseg_stage(core
  LIBS nlohmann_json::nlohmann_json spdlog::spdlog Threads::Threads
  PRIVATE_LIBS PkgConfig::LIBZIP ZLIB::ZLIB
  PUBLIC_HEADERS amp.h atomic_writer.h cpu_features.h data_files.h digest.h disk_space.h enum_names.h error.h
                file_digest.h grid.h json_io.h json_object_reader.h log.h numeric.h ordered_json_io.h
                output_folder.h parallel.h path_component.h path_overlap.h paths.h progress.h rank_error_file.h
                signal_cleanup.h staged_file.h strings.h system_memory.h torch_compat.h volume.h volume_inl.h
                zip_archive.h)
