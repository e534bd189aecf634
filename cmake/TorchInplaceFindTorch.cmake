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
# (python -c 'import torch; print(torch.utils.cmake_prefix_path)'), then from the hint the installed config passes
# (the torch the library was built against).
# The targets are directory-scoped imported targets, like find_package(Torch)'s: each directory that finds the package
# (sibling subdirectories included) gets its own.
#
# Results, in the caller's scope: TorchInplace_TORCH_DIR (the folder of the TorchConfig.cmake used) and
# TorchInplace_TORCH_VERSION (its version, empty if unknown). Nothing else of the caller's is set: TORCH_LIBRARIES and
# friends come only from find_package(Torch) itself (FIND_PACKAGE mode).
#
# Inputs from the installed TorchInplaceConfig.cmake (_TorchInplace_FROM_CONFIG set): TorchInplace_WITH_CUDA (else
# TORCH_INPLACE_WITH_CUDA, the build option), _TorchInplace_TORCH_DIR_HINT; and a LibTorch that cannot be found sets
# TorchInplace_TORCH_NOT_FOUND to the reason instead of stopping CMake, so that find_package(TorchInplace) can report
# NOT_FOUND (QUIET, optional dependencies).
unset(TorchInplace_TORCH_NOT_FOUND)

macro(_ti_torch_not_found reason)
  if(_TorchInplace_FROM_CONFIG)
    set(TorchInplace_TORCH_NOT_FOUND "${reason}")
    return()
  endif()
  message(FATAL_ERROR "${reason}")
endmacro()

# The version of the LibTorch under <prefix> from its headers (torch/headeronly/version.h since torch 2.8 or so,
# torch/csrc/api/include/torch/version.h before), else from TorchConfigVersion.cmake; empty if none says.
function(_ti_torch_version_at prefix config_dir out_var)
  foreach(_h "${prefix}/include/torch/headeronly/version.h" "${prefix}/include/torch/csrc/api/include/torch/version.h")
    if(EXISTS "${_h}")
      file(STRINGS "${_h}" _lines REGEX "^#define TORCH_VERSION_(MAJOR|MINOR|PATCH) +[0-9]+")
      set(_v "")
      foreach(_part MAJOR MINOR PATCH)
        if(_lines MATCHES "#define TORCH_VERSION_${_part} +([0-9]+)")
          list(APPEND _v "${CMAKE_MATCH_1}")
        endif()
      endforeach()
      list(LENGTH _v _n)
      if(_n EQUAL 3)
        string(REPLACE ";" "." _v "${_v}")
        set(${out_var} "${_v}" PARENT_SCOPE)
        return()
      endif()
    endif()
  endforeach()
  set(${out_var} "" PARENT_SCOPE)
  if(EXISTS "${config_dir}/TorchConfigVersion.cmake")
    file(STRINGS "${config_dir}/TorchConfigVersion.cmake" _lines REGEX "set\\(PACKAGE_VERSION \"[0-9.]+")
    if(_lines MATCHES "PACKAGE_VERSION \"([0-9.]+)")
      set(${out_var} "${CMAKE_MATCH_1}" PARENT_SCOPE)
    endif()
  endif()
endfunction()

set(TORCH_INPLACE_FIND_TORCH "AUTO" CACHE STRING "How to find LibTorch: AUTO, FIND_PACKAGE or IMPORTED")
set_property(CACHE TORCH_INPLACE_FIND_TORCH PROPERTY STRINGS AUTO FIND_PACKAGE IMPORTED)

if(_TorchInplace_FROM_CONFIG)
  set(_ti_with_cuda "${TorchInplace_WITH_CUDA}")
else()
  set(_ti_with_cuda "${TORCH_INPLACE_WITH_CUDA}")
endif()

if(NOT TARGET TorchInplace::Torch)
  set(_ti_mode "${TORCH_INPLACE_FIND_TORCH}")
  if(_ti_with_cuda)
    set(_ti_mode FIND_PACKAGE)
  endif()

  if(NOT _ti_mode STREQUAL "FIND_PACKAGE")
    set(_ti_hints "${Torch_DIR}" "$ENV{Torch_DIR}")
    string(REPLACE ":" ";" _ti_env_prefix "$ENV{CMAKE_PREFIX_PATH}")
    foreach(_ti_p IN LISTS CMAKE_PREFIX_PATH _ti_env_prefix)
      list(APPEND _ti_hints "${_ti_p}" "${_ti_p}/Torch" "${_ti_p}/share/cmake/Torch")
    endforeach()
    list(APPEND _ti_hints ${_TorchInplace_TORCH_DIR_HINT})  # last: the user's choice wins
    # find_file caches its result: look again where the hints changed since (another torch on a reconfigure).
    if(DEFINED TORCH_INPLACE_TORCH_HINTS AND NOT "${TORCH_INPLACE_TORCH_HINTS}" STREQUAL "${_ti_hints}")
      unset(TORCH_INPLACE_TORCH_CONFIG CACHE)
    endif()
    set(TORCH_INPLACE_TORCH_HINTS "${_ti_hints}" CACHE INTERNAL "Where TORCH_INPLACE_TORCH_CONFIG was looked for")
    find_file(TORCH_INPLACE_TORCH_CONFIG TorchConfig.cmake HINTS ${_ti_hints} NO_DEFAULT_PATH
              DOC "TorchConfig.cmake of the LibTorch to build against")
    if(NOT TORCH_INPLACE_TORCH_CONFIG)
      _ti_torch_not_found("torch_inplace: LibTorch not found. Pass -DCMAKE_PREFIX_PATH=\"$(python -c 'import torch; \
print(torch.utils.cmake_prefix_path)')\" or -DTorch_DIR=<dir of TorchConfig.cmake>.")
    endif()
    get_filename_component(_ti_torch_dir "${TORCH_INPLACE_TORCH_CONFIG}" DIRECTORY)
    get_filename_component(_ti_torch_prefix "${_ti_torch_dir}/../../.." ABSOLUTE)
    # The same for the libraries, which follow the torch found.
    if(NOT "${TORCH_INPLACE_TORCH_PREFIX}" STREQUAL "${_ti_torch_prefix}")
      foreach(_ti_name torch torch_cpu c10 torch_gpu)
        unset(TORCH_INPLACE_LIB_${_ti_name} CACHE)
      endforeach()
    endif()
    set(TORCH_INPLACE_TORCH_PREFIX "${_ti_torch_prefix}" CACHE INTERNAL "The LibTorch TORCH_INPLACE_LIB_* are from")
    if(_ti_mode STREQUAL "AUTO")
      set(_ti_mode IMPORTED)
      find_library(TORCH_INPLACE_LIB_torch_gpu NAMES torch_cuda torch_hip PATHS "${_ti_torch_prefix}/lib"
                   NO_DEFAULT_PATH)
      if(NOT TORCH_INPLACE_LIB_torch_gpu)
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
      if(_TorchInplace_FROM_CONFIG)
        find_package(Torch QUIET HINTS ${_TorchInplace_TORCH_DIR_HINT})
        if(NOT Torch_FOUND)
          _ti_torch_not_found("torch_inplace: LibTorch not found by find_package(Torch). Pass -DCMAKE_PREFIX_PATH=\
\"$(python -c 'import torch; print(torch.utils.cmake_prefix_path)')\" or -DTorch_DIR=<dir of TorchConfig.cmake>.")
        endif()
      else()
        find_package(Torch REQUIRED)
      endif()
    endif()
    set(_ti_torch_dir "${Torch_DIR}")
    get_filename_component(_ti_torch_prefix "${_ti_torch_dir}/../../.." ABSOLUTE)
    set(_ti_torch_version "${Torch_VERSION}")  # empty where the caller's find_package(Torch) ran in another scope
    if(NOT _ti_torch_version)
      _ti_torch_version_at("${_ti_torch_prefix}" "${_ti_torch_dir}" _ti_torch_version)
    endif()
    add_library(TorchInplace::Torch INTERFACE IMPORTED)
    set_target_properties(TorchInplace::Torch PROPERTIES INTERFACE_LINK_LIBRARIES "${TORCH_LIBRARIES}")
    message(STATUS "torch_inplace: LibTorch ${_ti_torch_version} through find_package(Torch): ${TORCH_LIBRARIES}")
  elseif(_ti_mode STREQUAL "IMPORTED")
    set(_ti_libs "")
    foreach(_ti_name torch torch_cpu c10)
      find_library(TORCH_INPLACE_LIB_${_ti_name} ${_ti_name} PATHS "${_ti_torch_prefix}/lib" NO_DEFAULT_PATH)
      if(NOT TORCH_INPLACE_LIB_${_ti_name})
        _ti_torch_not_found("torch_inplace: lib${_ti_name} not found under ${_ti_torch_prefix}/lib")
      endif()
      list(APPEND _ti_libs "${TORCH_INPLACE_LIB_${_ti_name}}")
    endforeach()
    _ti_torch_version_at("${_ti_torch_prefix}" "${_ti_torch_dir}" _ti_torch_version)
    find_package(Threads REQUIRED)
    add_library(TorchInplace::Torch INTERFACE IMPORTED)
    set_target_properties(TorchInplace::Torch PROPERTIES
      INTERFACE_INCLUDE_DIRECTORIES "${_ti_torch_prefix}/include;${_ti_torch_prefix}/include/torch/csrc/api/include"
      INTERFACE_LINK_LIBRARIES "${_ti_libs};Threads::Threads"
      INTERFACE_COMPILE_FEATURES cxx_std_17)
    message(STATUS "torch_inplace: LibTorch ${_ti_torch_version} (CPU link interface, no CUDA toolkit needed) from "
                   "${_ti_torch_prefix}")
  else()
    message(FATAL_ERROR "torch_inplace: TORCH_INPLACE_FIND_TORCH must be AUTO, FIND_PACKAGE or IMPORTED, "
                        "got '${TORCH_INPLACE_FIND_TORCH}'")
  endif()
  # Kept on the target, for a later inclusion in the same directory (a second find_package(TorchInplace)).
  set_target_properties(TorchInplace::Torch PROPERTIES
    _TorchInplace_TORCH_DIR "${_ti_torch_dir}" _TorchInplace_TORCH_VERSION "${_ti_torch_version}")
endif()

get_target_property(TorchInplace_TORCH_DIR TorchInplace::Torch _TorchInplace_TORCH_DIR)
get_target_property(TorchInplace_TORCH_VERSION TorchInplace::Torch _TorchInplace_TORCH_VERSION)
