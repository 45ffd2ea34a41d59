# Chooses CMAKE_CUDA_ARCHITECTURES before CUDA is enabled:
#   1. what the user passed (-DCMAKE_CUDA_ARCHITECTURES=...);
#   2. else the compute capability of the GPU that nvidia-smi reports first;
#   3. else KIT_DEFAULT_CUDA_ARCHITECTURES: every architecture CUDA 13 builds (sm_75 and
#      newer), so a binary built on a machine without a GPU runs on any GPU CUDA 13 supports.
set(KIT_DEFAULT_CUDA_ARCHITECTURES "75;80;86;89;90;100;120" CACHE STRING
    "CUDA architectures to build when no GPU is found (documented in docs/design/build.md)")

function(kit_choose_cuda_architectures)
  if(DEFINED CMAKE_CUDA_ARCHITECTURES AND NOT CMAKE_CUDA_ARCHITECTURES STREQUAL "")
    message(STATUS "Kit: CUDA architectures ${CMAKE_CUDA_ARCHITECTURES} (given)")
    return()
  endif()
  set(_archs "")
  find_program(KIT_NVIDIA_SMI nvidia-smi)
  if(KIT_NVIDIA_SMI)
    execute_process(COMMAND "${KIT_NVIDIA_SMI}" --query-gpu=compute_cap --format=csv,noheader
                    OUTPUT_VARIABLE _caps RESULT_VARIABLE _rc ERROR_QUIET TIMEOUT 20)
    if(_rc EQUAL 0)
      string(REGEX MATCH "([0-9]+)\\.([0-9]+)" _first "${_caps}")
      if(_first)
        set(_archs "${CMAKE_MATCH_1}${CMAKE_MATCH_2}")
      endif()
    endif()
  endif()
  if(_archs)
    message(STATUS "Kit: CUDA architectures ${_archs} (from the GPU nvidia-smi reports)")
  else()
    set(_archs "${KIT_DEFAULT_CUDA_ARCHITECTURES}")
    message(STATUS "Kit: CUDA architectures ${_archs} (no GPU found: the documented default list)")
  endif()
  set(CMAKE_CUDA_ARCHITECTURES "${_archs}" CACHE STRING "CUDA architectures to build" FORCE)
endfunction()
