# lib/core_torch: what every torch stage shares beneath it: autocast scopes (autocast.h), LibTorch's settings scoped to a call
# (torch_settings.h), the counting CPU allocator, its block cache and device memory queries (torch_memory.h), the version
# report (torch_info.h), and the precompiled torch header (torch_pch.h) that the torch stages, apps and tests
# reuse (cmake/MedsegStage.cmake). A stage marked TORCH links it.
medseg_stage(core_torch
  DEPENDS core
  LIBS medseg_torch
  PUBLIC_HEADERS autocast.h torch_info.h torch_memory.h torch_settings.h)
if(MEDSEG_USE_PCH)
  target_precompile_headers(medseg_stage_core_torch PRIVATE ${CMAKE_CURRENT_LIST_DIR}/torch_pch.h)
endif()
