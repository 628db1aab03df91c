# What the suites share: the launch of minictx under mpiexec on 1 to 8 ranks (more ranks
# than cores: the launcher oversubscribes), `minictx verify` cases, the one-line errors and
# byte counts; then every suite file (mpi/NAME.cmake, scripts/NAME.cmake, cuda/cuda.cmake,
# cmake/floors.cmake: each backend adds its cases in mpi/<backend>.cmake, read first, where it also declares
# its representative configurations, which the feature suites run). Labels
# (docs/testing.md, "Labels"): the duration, `quick` (a few minutes at most under the
# sanitizers: every backend and layout once, the errors, the unit tests) or `full` (the
# rest), which a suite file sets;
# the hardware, `gpu`, which it sets on a test that needs one; the kind, the test's
# folder (unit, mpi, scripts, cuda, cmake), which this file adds. `ctest -L quick` is the short run.
#
# The launcher: MPICH's by default; another through MPIEXEC_BIN and MPIEXEC_PREFLAGS
# (placed before the program). Settings the Python checks' own launches need too go in
# the environment (the openmpi test preset sets Open MPI's).
find_program(MPIEXEC_BIN NAMES mpiexec.mpich mpiexec REQUIRED)
set(MPIEXEC_PREFLAGS "" CACHE STRING "launcher flags placed before the program")
find_program(SYSTEM_PYTHON3 NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH REQUIRED)
set(_check_launch ${SYSTEM_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/mpi/check_launch.py)
separate_arguments(_mpiexec_preflags UNIX_COMMAND "${MPIEXEC_PREFLAGS}")
# The sanitizers slow a verify point several times over.
set(_timeout_scale 1)
if(MINICTX_SANITIZE)
  set(_timeout_scale 5)
endif()

# The launch of RANKS ranks of minictx with the given arguments.
function(minictx_launch out ranks)
  set(${out} ${MPIEXEC_BIN} -n ${ranks} ${_mpiexec_preflags} $<TARGET_FILE:minictx> ${ARGN} PARENT_SCOPE)
endfunction()

# minictx_verify_test(NAME RANKS [QUICK] [GPU] [--set k=v ...] [--reference R]): one
# verify case. Cases are not launched one by one: the cases of one suite file with the
# same rank count and label become the points (--point) of one `minictx verify` launch
# (minictx_flush_verify_tests), which passes when it exits 0 with one VALID per case.
# QUICK puts the case in the quick label; GPU runs it on the cuda device (run.device=cuda)
# and marks it as needing a GPU (label gpu).
function(minictx_verify_test name ranks)
  cmake_parse_arguments(_v "QUICK;GPU" "" "" ${ARGN})
  set(_point "")
  set(_next "")
  foreach(_arg ${_v_UNPARSED_ARGUMENTS})
    if(_next STREQUAL "reference")
      string(APPEND _point " run.reference=${_arg}")
      set(_next "")
    elseif(_arg STREQUAL "--set")
    elseif(_arg STREQUAL "--reference")
      set(_next reference)
    else()
      string(APPEND _point " ${_arg}")
    endif()
  endforeach()
  if(_v_GPU)
    string(APPEND _point " run.device=cuda")
  endif()
  string(STRIP "${_point}" _point)
  if(_point STREQUAL "")
    set(_point " ")  # the deck as it is; a list keeps no empty element
  endif()
  set(_group p${ranks})
  if(_v_GPU)
    string(APPEND _group _gpu)
  endif()
  if(_v_QUICK)
    string(APPEND _group _quick)
  endif()
  set_property(GLOBAL APPEND PROPERTY minictx_verify_groups ${_group})
  set_property(GLOBAL APPEND PROPERTY minictx_verify_${_group}_names ${name})
  set_property(GLOBAL APPEND PROPERTY minictx_verify_${_group}_points "${_point}")
endfunction()

# Turns the cases the last suite file declared into one launch per group, named
# verify_<suite>_p<ranks>[_gpu][_quick].
function(minictx_flush_verify_tests suite)
  get_property(_groups GLOBAL PROPERTY minictx_verify_groups)
  if(NOT _groups)
    return()
  endif()
  list(REMOVE_DUPLICATES _groups)
  foreach(_group ${_groups})
    get_property(_names GLOBAL PROPERTY minictx_verify_${_group}_names)
    get_property(_points GLOBAL PROPERTY minictx_verify_${_group}_points)
    string(REGEX MATCH "^p([0-9]+)" _ ${_group})
    set(_ranks ${CMAKE_MATCH_1})
    set(_args "")
    foreach(_point ${_points})
      list(APPEND _args --point "${_point}")
    endforeach()
    minictx_launch(_cmd ${_ranks} verify ${_args})
    list(LENGTH _names _count)
    string(JOIN "," _cases ${_names})
    set(_test verify_${suite}_${_group})
    add_test(NAME ${_test} COMMAND ${_check_launch} verify ${_cases} -- ${_cmd})
    math(EXPR _timeout "(120 + 60 * ${_count}) * ${_timeout_scale}")
    set(_labels "")
    if(_group MATCHES "_quick$")
      list(APPEND _labels quick)
    endif()
    if(_group MATCHES "_gpu")
      list(APPEND _labels gpu)
    endif()
    set_tests_properties(${_test} PROPERTIES PROCESSORS ${_ranks} TIMEOUT ${_timeout})
    if(_labels)
      set_tests_properties(${_test} PROPERTIES LABELS "${_labels}")
    endif()
    set_property(GLOBAL PROPERTY minictx_verify_${_group}_names "")
    set_property(GLOBAL PROPERTY minictx_verify_${_group}_points "")
  endforeach()
  set_property(GLOBAL PROPERTY minictx_verify_groups "")
endfunction()

# minictx_backend_config(BACKEND NAME RANKS [--set k=v ...]): a representative
# configuration of BACKEND on RANKS ranks, declared once, in the backend's own suite
# (mpi/BACKEND.cmake). The feature suites (packed documents, 16-bit communication, partials,
# hostile numerics, the cuda device) run every declared configuration with their own
# settings on top, so a new backend is in each of them without an edit there. NAME names
# the cases (e.g. hostile_NAME_fp32).
function(minictx_backend_config backend name ranks)
  set_property(GLOBAL APPEND PROPERTY minictx_backend_configs ${name})
  set_property(GLOBAL PROPERTY minictx_backend_config_${name}_ranks ${ranks})
  set_property(GLOBAL PROPERTY minictx_backend_config_${name}_args --set attention.backend=${backend} ${ARGN})
  get_property(_backends GLOBAL PROPERTY minictx_backends)
  if(NOT backend IN_LIST _backends)
    set_property(GLOBAL APPEND PROPERTY minictx_backends ${backend})
  endif()
endfunction()

# minictx_verify_each_config(PREFIX [SUFFIX S] [GPU] [QUICK NAME...] [SETTINGS --set k=v ...]):
# the verify case PREFIX_<config>S of every declared configuration, on its ranks, with
# SETTINGS on top; the configurations named after QUICK go in the quick label, GPU runs
# them all on the cuda device.
function(minictx_verify_each_config prefix)
  cmake_parse_arguments(_e "GPU" "SUFFIX" "QUICK;SETTINGS" ${ARGN})
  set(_gpu "")
  if(_e_GPU)
    set(_gpu GPU)
  endif()
  get_property(_configs GLOBAL PROPERTY minictx_backend_configs)
  foreach(_config ${_configs})
    get_property(_ranks GLOBAL PROPERTY minictx_backend_config_${_config}_ranks)
    get_property(_args GLOBAL PROPERTY minictx_backend_config_${_config}_args)
    set(_quick "")
    if(_config IN_LIST _e_QUICK)
      set(_quick QUICK)
    endif()
    minictx_verify_test(${prefix}_${_config}${_e_SUFFIX} ${_ranks} ${_quick} ${_gpu} ${_args} ${_e_SETTINGS})
  endforeach()
endfunction()

# minictx_verify_each_backend(PREFIX RANKS [GPU] [--set k=v ...]): the verify case
# PREFIX_<backend> of every backend that declared a configuration, in its defaults, on RANKS.
function(minictx_verify_each_backend prefix ranks)
  get_property(_backends GLOBAL PROPERTY minictx_backends)
  foreach(_backend ${_backends})
    minictx_verify_test(${prefix}_${_backend} ${ranks} --set attention.backend=${_backend} ${ARGN})
  endforeach()
endfunction()

# A deck error must give one line and exit status 2 on every rank, never a hang: one
# launch, checked for the status, the message (EXPECTED, a regex) and the single line.
function(minictx_error_test name ranks expected)
  minictx_launch(_cmd ${ranks} ${ARGN})
  add_test(NAME error_${name} COMMAND ${_check_launch} error "${expected}" -- ${_cmd})
  set_tests_properties(error_${name} PROPERTIES LABELS quick PROCESSORS ${ranks} TIMEOUT 60)
endfunction()

# Bytes sent per rank in one step, from the results file. Needs a Python with h5py
# (Debian's python3-h5py lives in /usr/bin); the bytes_* checks are skipped without one.
set(_h5py_python "")
foreach(_py /usr/bin/python3 python3)
  execute_process(COMMAND ${_py} -c "import h5py" RESULT_VARIABLE _rc OUTPUT_QUIET ERROR_QUIET)
  if(_rc EQUAL 0)
    set(_h5py_python ${_py})
    break()
  endif()
endforeach()
if(NOT _h5py_python)
  message(STATUS "no Python with h5py: the bytes_* checks are skipped")
endif()

# minictx_bytes_test(NAME RANKS INTRA INTER --set k=v ...): one timed iteration, then
# every rank's intra- and inter-node byte counts must equal INTRA and INTER (one value
# for every rank, or a comma-separated value per rank).
function(minictx_bytes_test name ranks intra inter)
  if(NOT _h5py_python)
    return()
  endif()
  set(_h5 ${CMAKE_CURRENT_BINARY_DIR}/bytes_${name}.h5)
  minictx_launch(_cmd ${ranks} run --force -o ${_h5} --set run.mode=attention --set run.warmup=0 --set run.iters=1
                 ${ARGN})
  add_test(NAME bytes_${name}_run COMMAND ${_cmd})
  set_tests_properties(bytes_${name}_run PROPERTIES FIXTURES_SETUP bytes_${name}
                       PROCESSORS ${ranks} TIMEOUT 120)
  add_test(NAME bytes_${name}
           COMMAND ${_h5py_python} -c "import h5py, sys
p = h5py.File(sys.argv[1], 'r')['points/point_0000']
got = [list(p['bytes_sent_intra'][:]), list(p['bytes_sent_inter'][:])]
want = [[float(x) for x in arg.split(',')] for arg in sys.argv[2:]]
want = [w * len(g) if len(w) == 1 else w for w, g in zip(want, got)]
print('intra, inter per rank:', got, 'expected:', want)
sys.exit(got != want)" ${_h5} ${intra} ${inter})
  set_tests_properties(bytes_${name} PROPERTIES FIXTURES_REQUIRED bytes_${name} TIMEOUT 60)
endfunction()

file(GLOB _suites CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/mpi/*.cmake ${CMAKE_CURRENT_SOURCE_DIR}/scripts/*.cmake
     ${CMAKE_CURRENT_SOURCE_DIR}/cuda/*.cmake ${CMAKE_CURRENT_SOURCE_DIR}/cmake/*.cmake)
# The backends' own suites first (a folder under backends/ with a suite of its name): they
# declare the configurations the feature suites run.
file(GLOB _backend_folders LIST_DIRECTORIES true CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/backends/*)
set(_backend_suites "")
foreach(_folder ${_backend_folders})
  get_filename_component(_backend ${_folder} NAME)
  if(IS_DIRECTORY ${_folder} AND EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/mpi/${_backend}.cmake)
    list(APPEND _backend_suites ${CMAKE_CURRENT_SOURCE_DIR}/mpi/${_backend}.cmake)
  endif()
endforeach()
list(REMOVE_ITEM _suites ${_backend_suites})
set(_suites ${_backend_suites} ${_suites})
foreach(_suite ${_suites})
  get_property(_before DIRECTORY PROPERTY TESTS)
  include(${_suite})
  get_filename_component(_name ${_suite} NAME_WE)
  minictx_flush_verify_tests(${_name})
  get_property(_after DIRECTORY PROPERTY TESTS)
  if(_before)
    list(REMOVE_ITEM _after ${_before})
  endif()
  get_filename_component(_kind ${_suite} DIRECTORY)
  get_filename_component(_kind ${_kind} NAME)
  foreach(_test ${_after})
    set_property(TEST ${_test} APPEND PROPERTY LABELS ${_kind})
  endforeach()
endforeach()

# Every test not in `quick` is in `full` (the gtest cases are labelled where discovered);
# without a GPU the gpu-labelled tests (cuda/cuda.cmake) are skipped, not failed.
get_property(_tests DIRECTORY PROPERTY TESTS)
foreach(_test ${_tests})
  get_test_property(${_test} LABELS _labels)
  if(NOT _labels MATCHES "(^|;)(quick|full)(;|$)")
    set_property(TEST ${_test} APPEND PROPERTY LABELS full)
  endif()
  if(_labels MATCHES "(^|;)gpu(;|$)")
    set_property(TEST ${_test} PROPERTY SKIP_REGULAR_EXPRESSION "device cuda: no usable GPU")
  endif()
endforeach()
