# Fail safe at the edges (issue 16): whole-run keys that cannot be swept, output names
# checked before any work on every rank, command-line errors as one line, special files
# refused by type; and, in check_failsafe.py, results files never mixed or lost.
find_program(SYSTEM_PYTHON3 NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH)
set(_tiny --set run.mode=attention --set attention.backend=ring --set sequence.length=256 --set run.iters=1
          --set run.warmup=0)
set(_scratch ${CMAKE_CURRENT_BINARY_DIR}/failsafe)  # never created: every case is refused first

# F2: the comm, the device, the topology and the results file are set up once per run.
foreach(_key "topology.ranks_per_node=[1,2]" "run.device=[kokkos,cuda]" "run.comm=[mpi,nccl]"
        "output.file=[a.h5,b.h5]" "output.overwrite=[true,false]")
  string(REGEX REPLACE "=.*" "" _name ${_key})
  string(REPLACE "." "_" _id ${_name})
  minictx_error_test(sweep_whole_run_${_id} 2 "minictx: error: --set ${_name}=.*: ${_name} applies to the whole run and cannot be swept"
                     run ${_tiny} --set ${_key})
endforeach()

# F1, F8, F9: a directory that cannot be made (a file is in its place) fails before any work.
minictx_error_test(output_dir_is_a_file 2 "minictx: error: results file .*README.md/x.h5: cannot create the directory .*README.md: Not a directory"
                   run ${_tiny} -o ${CMAKE_SOURCE_DIR}/README.md/x.h5)
minictx_error_test(dump_dir_is_a_file 2 "minictx: error: --dump .*README.md/d.h5: cannot create the directory"
                   verify ${_tiny} --dump ${CMAKE_SOURCE_DIR}/README.md/d.h5)
minictx_error_test(bench_output_dir_is_a_file 1 "minictx: error: results file .*README.md/b.h5: cannot create the directory"
                   bench --seq 64 -o ${CMAKE_SOURCE_DIR}/README.md/b.h5)
minictx_error_test(output_trailing_slash 2 "minictx: error: results file .*/sub/: names a directory \\(ends in '/'\\); give a file name"
                   run ${_tiny} -o ${_scratch}/dir/sub/)
minictx_error_test(output_directory_force 2 "minictx: error: results file .*: is a directory, not a regular file"
                   run ${_tiny} -o ${CMAKE_CURRENT_BINARY_DIR} --force)

# F11: special files are refused by type before they are opened.
minictx_error_test(deck_is_a_device 2 "minictx: error: deck /dev/null: is a character device, not a regular file"
                   run /dev/null)
minictx_error_test(deck_is_a_directory 2 "minictx: error: deck .*: is a directory, not a regular file"
                   run ${CMAKE_SOURCE_DIR})
minictx_error_test(output_is_a_device 2 "minictx: error: results file /dev/null: is a character device"
                   run ${_tiny} -o /dev/null --force)
minictx_error_test(report_input_is_a_device 1 "minictx: error: results file /dev/zero: is a character device"
                   report /dev/zero)

# F7: command-line parse errors take the same one-line, exit-2 path on every rank.
minictx_error_test(cli_unknown_option 2 "minictx: error: The following argument was not expected: --bogus"
                   run --bogus)
minictx_error_test(cli_missing_value 2 "minictx: error: --set: 1 required TEXT missing" run --set)
minictx_error_test(cli_unknown_command 2 "minictx: error: unknown command 'frobnicate' \\(commands: run, verify"
                   frobnicate)
# A count's range in one short line (CLI11's own printed its bounds as doubles).
minictx_error_test(cli_dry_run_zero_ranks 2 "minictx: error: --ranks: must be a whole number from 1 to 2147483647, got 0; see minictx --help"
                   run --dry-run --ranks 0)
minictx_error_test(cli_project_zero_ranks_per_node 1 "minictx: error: --ranks-per-node: must be a whole number from 1 to 2147483647, got 0; see minictx --help"
                   project ${CMAKE_SOURCE_DIR}/inputs/quickstart.yaml --machine a100-80gb-hdr --ranks 2 --ranks-per-node 0)
minictx_error_test(cli_not_a_number 2 "minictx: error: .*--ranks" run --dry-run --ranks many)

# Ranks per node must lie in 1..world when given.
minictx_error_test(dry_run_ranks_per_node_above_world 2
                   "minictx: error: --ranks-per-node must be between 1 and the world size 2, got 3"
                   run --dry-run --ranks-per-node 3)
minictx_error_test(ranks_per_node_above_world 2
                   "minictx: error: topology.ranks_per_node must be between 1 and the world size 2, got 3"
                   run ${_tiny} --set topology.ranks_per_node=3)

# OnExisting: --force and --resume contradict; a default name is new, so nothing to resume.
minictx_error_test(force_with_resume 2 "minictx: error: --force and --resume contradict each other"
                   run ${_tiny} -o ${_scratch}/r.h5 --force --resume)
minictx_error_test(resume_default_name 2 "minictx: error: --resume needs the results file to continue"
                   run ${_tiny} --resume)

foreach(_mode resume-mismatch force-killed four-jobs special-files)
  add_test(NAME failsafe_${_mode}
           COMMAND ${SYSTEM_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/mpi/check_failsafe.py $<TARGET_FILE:minictx>
                   ${MPIEXEC_BIN} ${_mode})
  set_tests_properties(failsafe_${_mode} PROPERTIES PASS_REGULAR_EXPRESSION "failsafe ok"
                       PROCESSORS 2 TIMEOUT 300)
endforeach()

# One writer per results file: racing runs and --resume, an output replaced or deleted
# under a run (check_one_writer.py).
foreach(_mode race-fresh race-resume replaced deleted)
  add_test(NAME one_writer_${_mode}
           COMMAND ${SYSTEM_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/mpi/check_one_writer.py $<TARGET_FILE:minictx>
                   ${MPIEXEC_BIN} ${_mode})
  set_tests_properties(one_writer_${_mode} PROPERTIES PASS_REGULAR_EXPRESSION "one writer ok"
                       PROCESSORS 2 TIMEOUT 300)
endforeach()

# Hostile profiles, calibrations, labels and launches: one line, exit 2 on every rank.
foreach(_mode profiles calibrations report launches)
  add_test(NAME hostile_${_mode}
           COMMAND ${SYSTEM_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/mpi/check_hostile_inputs.py $<TARGET_FILE:minictx>
                   ${MPIEXEC_BIN} ${CMAKE_SOURCE_DIR} ${_mode})
  set_tests_properties(hostile_${_mode} PROPERTIES PASS_REGULAR_EXPRESSION "hostile inputs ok"
                       PROCESSORS 2 TIMEOUT 300)
endforeach()
