# Every deck in inputs/ expands and runs at its own scale (a dry run: nothing is computed).
find_program(SYSTEM_PYTHON3 NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH)
file(GLOB _decks CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/inputs/*.yaml)
foreach(_deck ${_decks})
  get_filename_component(_name ${_deck} NAME_WE)
  add_test(NAME deck_${_name}
           COMMAND ${SYSTEM_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/mpi/check_deck.py $<TARGET_FILE:minictx> ${_deck})
  set_tests_properties(deck_${_name} PROPERTIES PASS_REGULAR_EXPRESSION "deck ok" LABELS quick TIMEOUT 60)
endforeach()

# `minictx list` prints each backend's own keys from the registry: type, default and doc line.
add_test(NAME list_backend_keys COMMAND $<TARGET_FILE:minictx> list)
set_tests_properties(list_backend_keys PROPERTIES PASS_REGULAR_EXPRESSION
                     "attention.window_size: integer >= 0 \\(default 0\\); context ranks in each inner ring" LABELS quick
                     TIMEOUT 60)
