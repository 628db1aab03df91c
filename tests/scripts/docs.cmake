# Every section of a markdown file that the code, scripts, decks and docs cite (file and heading) and
# every relative link between the markdown files exist (check_doc_citations.py).
find_program(SYSTEM_PYTHON3 NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH)
add_test(NAME doc_citations
         COMMAND ${SYSTEM_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/scripts/check_doc_citations.py ${CMAKE_SOURCE_DIR})
set_tests_properties(doc_citations PROPERTIES PASS_REGULAR_EXPRESSION "citations ok" LABELS quick TIMEOUT 60)
