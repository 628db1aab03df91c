# A floor is a static library that sees only its own folder and the floors it links.
# Its include path is a view, a folder of links in the build tree to its own files
# alone, so a file that includes a header of a floor it does not link (one above it)
# names a file the compiler cannot find: the build keeps the house's floors, not a test
# that greps the includes.
#
#   minictx_floor(TARGET ROOT <folder the includes are spelled from> SHOW <paths under
#                 ROOT it shows> SOURCES <globs>)
#
# The view is <build>/floors/<ROOT>/<TARGET>; its paths keep ROOT's name (miniapp/,
# backends/, verify/), which is what the tidy check's header filter matches.
function(minictx_floor target)
  cmake_parse_arguments(F "" "ROOT" "SHOW;SOURCES" ${ARGN})
  cmake_path(APPEND CMAKE_BINARY_DIR floors ${F_ROOT} ${target} OUTPUT_VARIABLE view)
  cmake_path(NORMAL_PATH view)
  foreach(path ${F_SHOW})
    cmake_path(GET path PARENT_PATH parent)
    file(MAKE_DIRECTORY ${view}/${parent})
    file(CREATE_LINK ${CMAKE_SOURCE_DIR}/${F_ROOT}/${path} ${view}/${path} SYMBOLIC)
  endforeach()
  file(GLOB srcs CONFIGURE_DEPENDS ${F_SOURCES})
  add_library(${target} STATIC ${srcs})
  target_include_directories(${target} PUBLIC ${view})
  set_property(TARGET ${target} PROPERTY MINICTX_VIEW ${view})
endfunction()
