# Run by floors_upward_include (cmake -P, from tests/cmake/floors.cmake; a folder below
# the suites' so that no glob takes it for one). Builds each floor probe and prints
# "floors ok" when every one fails to compile because its header is not found; names
# each probe that compiled or failed for another reason.
set(_wrong "")
foreach(_entry ${PROBES})
  string(REPLACE "=" ";" _entry "${_entry}")
  list(GET _entry 0 _probe)
  list(GET _entry 1 _header)
  execute_process(COMMAND ${CMAKE_COMMAND} --build ${BUILD_DIR} --target ${_probe}
                  RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _out)
  string(FIND "${_out}" "${_header}: No such file" _gcc)        # GCC
  string(FIND "${_out}" "'${_header}' file not found" _clang)  # Clang
  if(_rc EQUAL 0)
    list(APPEND _wrong "${_probe}: compiled, so its floor sees ${_header}")
  elseif(_gcc EQUAL -1 AND _clang EQUAL -1)
    list(APPEND _wrong "${_probe}: failed, but not on a missing ${_header}:\n${_out}")
  endif()
endforeach()
if(_wrong)
  list(JOIN _wrong "\n" _wrong)
  message(FATAL_ERROR "an include climbs a floor:\n${_wrong}")
endif()
list(LENGTH PROBES _n)
if(_n EQUAL 0)
  message(FATAL_ERROR "no floor probes given: nothing was checked")
endif()
message("floors ok: ${_n} includes across floors fail to compile")
