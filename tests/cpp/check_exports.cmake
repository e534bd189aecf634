# cmake -DLIBRARY=<libtorch_inplace.so> -DHEADER=<csrc/torch_inplace.h> -DNM=<nm> -DREADELF=<readelf>
#       -DRUNPATH=<the library's RUNPATH: dir:dir> [-DPROGRAMS=<executables: path:path>] -P check_exports.cmake
# Fails if the library's dynamic symbol table exports more of torch_inplace than its public API, or less, or if a
# RUNPATH holds a folder that is not there.
#   The public API: the functions the header marks TORCH_INPLACE_API (and every function declared at namespace scope
#   there must be marked). Each must be exported as a defined function, and nothing else that names torch_inplace may
#   be exported: no internal function, and no typeinfo or template instantiated from the library's own types.
#   Allowed besides: weak definitions (W, V: inline functions, template instantiations, typeinfo and vtables) and
#   unique objects (u: function-local statics of inline functions) that the compiler emits from torch's and the
#   standard library's headers. Their types are declared with default visibility there, so hidden visibility does not
#   apply to them; they must stay visible for one definition per process (type_info compared across libraries, the
#   exceptions torch throws, c10's function-local statics). Any other strong symbol (T, D, B, R) fails.
#   RUNPATH: the library's is exactly RUNPATH (CMake's default build-tree RPATH also took torch's nonexistent MKL link
#   folders, /lib/intel64, ...); each entry of the PROGRAMS' RUNPATHs is an existing folder.
cmake_minimum_required(VERSION 3.18)  # policies (CMP0007: list() keeps empty elements)
foreach(_var LIBRARY HEADER NM READELF)
  if(NOT ${_var})
    message(FATAL_ERROR "check_exports: pass -D${_var}=...")
  endif()
endforeach()

# ---- the public API from the header ----------------------------------------------------------------------------
# (Semicolons and brackets would split or join CMake list elements: dropped before the lines are split.)
file(READ "${HEADER}" _text)
string(REGEX REPLACE "[][;]" "" _text "${_text}")
string(REPLACE "\n" ";" _lines "${_text}")
set(_scope "")
set(_public "")
set(_unmarked "")
foreach(_line IN LISTS _lines)
  if(_line MATCHES "^namespace ([A-Za-z_][A-Za-z0-9_]*) {")
    list(APPEND _scope "${CMAKE_MATCH_1}")
  elseif(_line MATCHES "^}  // namespace")
    list(REMOVE_AT _scope -1)
  elseif(_line MATCHES "^TORCH_INPLACE_API [^(]*[ &*]([A-Za-z_][A-Za-z0-9_]*)\\(")
    string(REPLACE ";" "::" _ns "${_scope}")
    list(APPEND _public "${_ns}::${CMAKE_MATCH_1}")
  elseif(_scope AND _line MATCHES "^[A-Za-z_][^(={}]*[ &*]([A-Za-z_][A-Za-z0-9_]*)\\(")
    # A function declared at namespace scope (the header's declarations start at column 0, class members do not).
    list(APPEND _unmarked "${CMAKE_MATCH_1}")
  endif()
endforeach()
if(_unmarked)
  message(FATAL_ERROR "check_exports: ${HEADER} declares without TORCH_INPLACE_API: ${_unmarked}")
endif()
list(LENGTH _public _n_public)
if(_n_public EQUAL 0)
  message(FATAL_ERROR "check_exports: no TORCH_INPLACE_API declaration found in ${HEADER}")
endif()

# ---- the dynamic symbol table ------------------------------------------------------------------------------------
execute_process(COMMAND "${NM}" -D --defined-only -C "${LIBRARY}"
                OUTPUT_VARIABLE _nm RESULT_VARIABLE _rc ERROR_VARIABLE _err)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "check_exports: ${NM} -D failed on ${LIBRARY}: ${_err}")
endif()
string(REGEX REPLACE "[][;]" "" _nm "${_nm}")
string(REPLACE "\n" ";" _symbols "${_nm}")
set(_exported "")
set(_leaks "")
set(_n_allowed 0)
set(_n_total 0)
foreach(_line IN LISTS _symbols)
  if(NOT _line MATCHES "^[0-9a-fA-F]* ([A-Za-z]) (.*)$")
    continue()
  endif()
  set(_kind "${CMAKE_MATCH_1}")
  set(_name "${CMAKE_MATCH_2}")
  math(EXPR _n_total "${_n_total} + 1")
  string(REGEX REPLACE "\\(.*" "" _function "${_name}")
  list(FIND _public "${_function}" _at)
  if(_kind STREQUAL "T" AND NOT _at EQUAL -1)
    list(APPEND _exported "${_function}")
  elseif(_name MATCHES "torch_inplace" OR NOT _kind MATCHES "^[WVu]$")
    list(APPEND _leaks "${_kind} ${_name}")
  else()
    math(EXPR _n_allowed "${_n_allowed} + 1")
  endif()
endforeach()

set(_failed "")
foreach(_f IN LISTS _public)
  list(FIND _exported "${_f}" _at)
  if(_at EQUAL -1)
    list(APPEND _failed "not exported: ${_f}")
  endif()
endforeach()
list(LENGTH _leaks _n_leaks)
if(_n_leaks GREATER 0)
  list(SUBLIST _leaks 0 40 _shown)
  string(REPLACE ";" "\n  " _shown "${_shown}")
  list(APPEND _failed "${_n_leaks} exported symbols outside the public API (the first 40):\n  ${_shown}")
endif()

# ---- RUNPATHs ----------------------------------------------------------------------------------------------------
function(_ti_runpath file out_var)
  execute_process(COMMAND "${READELF}" -d "${file}" OUTPUT_VARIABLE _dyn RESULT_VARIABLE _rc ERROR_VARIABLE _err)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "check_exports: ${READELF} -d failed on ${file}: ${_err}")
  endif()
  set(_path "")
  if(_dyn MATCHES "\\((RUNPATH|RPATH)\\)[^\n]*: \\[([^\n]*)\\]")
    set(_path "${CMAKE_MATCH_2}")
  endif()
  set(${out_var} "${_path}" PARENT_SCOPE)
endfunction()

_ti_runpath("${LIBRARY}" _lib_runpath)
if(NOT _lib_runpath STREQUAL RUNPATH)
  list(APPEND _failed "RUNPATH of ${LIBRARY} is '${_lib_runpath}', expected '${RUNPATH}'")
endif()
string(REPLACE ":" ";" _programs "${PROGRAMS}")
foreach(_program IN LISTS _programs)
  _ti_runpath("${_program}" _path)
  if(_path STREQUAL "")
    continue()
  endif()
  if(_path MATCHES "^:|::|:$")  # an empty entry is the working directory
    list(APPEND _failed "RUNPATH of ${_program} ('${_path}') has an empty entry")
  endif()
  string(REPLACE ":" ";" _entries "${_path}")
  foreach(_entry IN LISTS _entries)
    if(NOT IS_ABSOLUTE "${_entry}" OR NOT IS_DIRECTORY "${_entry}")
      list(APPEND _failed "RUNPATH of ${_program} ('${_path}') holds '${_entry}', not an existing folder")
    endif()
  endforeach()
endforeach()

if(_failed)
  string(REPLACE ";" "\n" _failed "${_failed}")
  message(FATAL_ERROR "check_exports: ${LIBRARY}:\n${_failed}")
endif()
message(STATUS "check_exports: ${_n_total} dynamic symbols: the ${_n_public} public functions and ${_n_allowed} "
               "weak or unique ones from torch's and the standard library's headers; RUNPATH ${_lib_runpath}")
