# Finds LibTorch and defines the imported target TorchInplace::Torch that torch_inplace links against.
# Used by the top-level CMakeLists.txt and, installed next to TorchInplaceConfig.cmake, by consumers.
#
# TORCH_INPLACE_FIND_TORCH selects how:
#   FIND_PACKAGE  find_package(Torch): torch's own config. With a CUDA build of torch (the pip wheels) that config
#                 looks for a CUDA toolkit, enables the CUDA language and fails without one.
#   IMPORTED      a CPU-only link interface made here from the torch install (include dirs, libtorch.so,
#                 libtorch_cpu.so, libc10.so): needs no CUDA toolkit even for a CUDA wheel. CPU builds only.
#   AUTO          (default) FIND_PACKAGE when CUDA is wanted, when torch has no CUDA library, or when a CUDA
#                 toolkit (nvcc) is found; else IMPORTED.
# The torch install is located from Torch_DIR, or TorchConfig.cmake on CMAKE_PREFIX_PATH
# (python -c 'import torch; print(torch.utils.cmake_prefix_path)').
# The targets are directory-scoped imported targets, like find_package(Torch)'s: each directory that finds the package
# (sibling subdirectories included) gets its own. With TORCH_INPLACE_FIND_TORCH_SOFT set (TorchInplaceConfig.cmake), a
# LibTorch that cannot be found sets TORCH_INPLACE_TORCH_NOT_FOUND to the reason instead of stopping CMake, so that
# find_package(TorchInplace) can report NOT_FOUND (QUIET, optional dependencies).
include_guard(DIRECTORY)

macro(_ti_torch_not_found reason)
  if(TORCH_INPLACE_FIND_TORCH_SOFT)
    set(TORCH_INPLACE_TORCH_NOT_FOUND "${reason}")
    return()
  endif()
  message(FATAL_ERROR "${reason}")
endmacro()
unset(TORCH_INPLACE_TORCH_NOT_FOUND)

set(TORCH_INPLACE_FIND_TORCH "AUTO" CACHE STRING "How to find LibTorch: AUTO, FIND_PACKAGE or IMPORTED")
set_property(CACHE TORCH_INPLACE_FIND_TORCH PROPERTY STRINGS AUTO FIND_PACKAGE IMPORTED)

if(NOT DEFINED TORCH_INPLACE_WITH_CUDA)
  set(TORCH_INPLACE_WITH_CUDA OFF)
endif()

if(NOT TARGET TorchInplace::Torch)
  set(_ti_mode "${TORCH_INPLACE_FIND_TORCH}")
  if(TORCH_INPLACE_WITH_CUDA)
    set(_ti_mode FIND_PACKAGE)
  endif()

  if(NOT _ti_mode STREQUAL "FIND_PACKAGE")
    set(_ti_hints "${Torch_DIR}" "$ENV{Torch_DIR}")
    string(REPLACE ":" ";" _ti_env_prefix "$ENV{CMAKE_PREFIX_PATH}")
    foreach(_ti_p IN LISTS CMAKE_PREFIX_PATH _ti_env_prefix)
      list(APPEND _ti_hints "${_ti_p}" "${_ti_p}/Torch" "${_ti_p}/share/cmake/Torch")
    endforeach()
    find_file(TORCH_INPLACE_TORCH_CONFIG TorchConfig.cmake HINTS ${_ti_hints} NO_DEFAULT_PATH
              DOC "TorchConfig.cmake of the LibTorch to build against")
    if(NOT TORCH_INPLACE_TORCH_CONFIG)
      _ti_torch_not_found("torch_inplace: LibTorch not found. Pass -DCMAKE_PREFIX_PATH=\"$(python -c 'import torch; \
print(torch.utils.cmake_prefix_path)')\" or -DTorch_DIR=<dir of TorchConfig.cmake>.")
    endif()
    get_filename_component(_ti_torch_prefix "${TORCH_INPLACE_TORCH_CONFIG}/../../../.." ABSOLUTE)
    if(_ti_mode STREQUAL "AUTO")
      set(_ti_mode IMPORTED)
      find_library(_ti_torch_cuda NAMES torch_cuda torch_hip PATHS "${_ti_torch_prefix}/lib" NO_DEFAULT_PATH)
      if(NOT _ti_torch_cuda)
        set(_ti_mode FIND_PACKAGE)  # CPU-only torch: its config needs nothing more
      else()
        find_package(CUDAToolkit QUIET)
        if(CUDAToolkit_FOUND AND CUDAToolkit_NVCC_EXECUTABLE AND EXISTS "${CUDAToolkit_NVCC_EXECUTABLE}")
          set(_ti_mode FIND_PACKAGE)
        endif()
      endif()
    endif()
  endif()

  if(_ti_mode STREQUAL "FIND_PACKAGE")
    if(NOT TARGET torch)
      if(TORCH_INPLACE_FIND_TORCH_SOFT)
        find_package(Torch QUIET)
        if(NOT Torch_FOUND)
          _ti_torch_not_found("torch_inplace: LibTorch not found by find_package(Torch). Pass -DCMAKE_PREFIX_PATH=\
\"$(python -c 'import torch; print(torch.utils.cmake_prefix_path)')\" or -DTorch_DIR=<dir of TorchConfig.cmake>.")
        endif()
      else()
        find_package(Torch REQUIRED)
      endif()
    endif()
    add_library(TorchInplace::Torch INTERFACE IMPORTED)
    set_target_properties(TorchInplace::Torch PROPERTIES INTERFACE_LINK_LIBRARIES "${TORCH_LIBRARIES}")
    message(STATUS "torch_inplace: LibTorch through find_package(Torch): ${TORCH_LIBRARIES}")
  elseif(_ti_mode STREQUAL "IMPORTED")
    set(_ti_libs "")
    foreach(_ti_name torch torch_cpu c10)
      find_library(TORCH_INPLACE_LIB_${_ti_name} ${_ti_name} PATHS "${_ti_torch_prefix}/lib" NO_DEFAULT_PATH)
      if(NOT TORCH_INPLACE_LIB_${_ti_name})
        _ti_torch_not_found("torch_inplace: lib${_ti_name} not found under ${_ti_torch_prefix}/lib")
      endif()
      list(APPEND _ti_libs "${TORCH_INPLACE_LIB_${_ti_name}}")
    endforeach()
    find_package(Threads REQUIRED)
    add_library(TorchInplace::Torch INTERFACE IMPORTED)
    set_target_properties(TorchInplace::Torch PROPERTIES
      INTERFACE_INCLUDE_DIRECTORIES "${_ti_torch_prefix}/include;${_ti_torch_prefix}/include/torch/csrc/api/include"
      INTERFACE_LINK_LIBRARIES "${_ti_libs};Threads::Threads"
      INTERFACE_COMPILE_FEATURES cxx_std_17)
    set(TORCH_INSTALL_PREFIX "${_ti_torch_prefix}")
    set(TORCH_LIBRARIES TorchInplace::Torch)
    message(STATUS "torch_inplace: LibTorch (CPU link interface, no CUDA toolkit needed) from ${_ti_torch_prefix}")
  else()
    message(FATAL_ERROR "torch_inplace: TORCH_INPLACE_FIND_TORCH must be AUTO, FIND_PACKAGE or IMPORTED, "
                        "got '${TORCH_INPLACE_FIND_TORCH}'")
  endif()
endif()
