# cmake -DINSTALL_SCRIPT=<consumer build>/torch_inplace/cmake_install.cmake -P check_no_install.cmake
# Fails if torch_inplace, taken by a parent's add_subdirectory(), added install rules to the parent's install.
file(READ "${INSTALL_SCRIPT}" _script)
foreach(_needle libtorch_inplace TorchInplaceConfig.cmake TorchInplaceTargets torch_inplace.h)
  string(FIND "${_script}" "${_needle}" _at)
  if(NOT _at EQUAL -1)
    message(FATAL_ERROR "${INSTALL_SCRIPT} installs ${_needle}: add_subdirectory() should add no install rules")
  endif()
endforeach()
