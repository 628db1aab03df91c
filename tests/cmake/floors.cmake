# The floors are held by the build (cmake/floors.cmake): a header of a floor that a
# library does not link (one above it, or a sibling) is not on its include path. Each
# probe below is one line, the `#include` of such a header, compiled with the include
# path the lower library's own files get; floors_upward_include builds every probe and
# passes when each fails on that very include.
set(_climbs
    "minictx_base config/deck.hpp"                       # core below config
    "minictx_config device/device.hpp"                   # config below device
    "minictx_io device/device.hpp"                       # io and device: siblings
    "minictx_io report/report.hpp"                       # io below the report
    "minictx_report device/device.hpp"                   # the report reads files, not devices
    "minictx_device comm/comm.hpp"                       # device below comm
    "minictx_comm backends/backend.hpp"                  # comm below the backends
    "minictx_engine backends/registry.hpp"               # the engine below the registry
    "minictx_engine backends/ring/ring_backend.hpp"      # ... and below every backend
    "minictx_backend_ring backends/usp/usp_backend.hpp"  # a backend never sees another
    "minictx_model backends/ring/ring_backend.hpp"       # above the registry: no backend's folder
    "minictx_model bench/runner.hpp"                     # model below bench
    "minictx_bench app/cli.hpp"                          # bench below app
    "minictx_reference device/device.hpp"                # the reference shares only core
    "minictx_verify submission/point_audit.hpp")         # verify below submission
set(_probes "")
foreach(_climb ${_climbs})
  separate_arguments(_climb)
  list(GET _climb 0 _floor)
  list(GET _climb 1 _header)
  string(MAKE_C_IDENTIFIER "${_floor}_${_header}" _probe)
  file(CONFIGURE OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/floor_probes/${_probe}.cpp
       CONTENT "#include \"${_header}\"\n")
  add_library(floor_probe_${_probe} OBJECT EXCLUDE_FROM_ALL ${CMAKE_CURRENT_BINARY_DIR}/floor_probes/${_probe}.cpp)
  # The floor's include path, its own view and those of the floors it links, without
  # building the floor (a probe is one compile).
  target_include_directories(floor_probe_${_probe} PRIVATE $<TARGET_PROPERTY:${_floor},INTERFACE_INCLUDE_DIRECTORIES>)
  list(APPEND _probes "floor_probe_${_probe}=${_header}")
endforeach()
add_test(NAME floors_upward_include
         COMMAND ${CMAKE_COMMAND} -DBUILD_DIR=${CMAKE_BINARY_DIR} "-DPROBES=${_probes}"
                 -P ${CMAKE_CURRENT_LIST_DIR}/probes/check_floors.cmake)
set_tests_properties(floors_upward_include PROPERTIES PASS_REGULAR_EXPRESSION "floors ok" TIMEOUT 120)
