# Build policy as INTERFACE targets, linked PRIVATE by every walfs target.
#
#   walfs_policy   warnings (+ -Wthread-safety under clang), -Werror when
#                  WALFS_WERROR is ON, sanitizers from WALFS_SANITIZE.
#
# Options:
#   WALFS_WERROR      treat warnings as errors (the clang CI job sets it)
#   WALFS_SANITIZE    "" | "address,undefined" | "thread"
#   WALFS_FUZZ        build libFuzzer targets (clang only)

option(WALFS_WERROR "Treat warnings as errors" OFF)
set(WALFS_SANITIZE "" CACHE STRING "Sanitizers: address,undefined | thread | empty")
option(WALFS_FUZZ "Build libFuzzer targets (clang only)" OFF)

add_library(walfs_policy INTERFACE)
target_compile_options(walfs_policy INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wimplicit-fallthrough)
if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  # Lock annotations are part of the API (STYLE.md rule 10).
  target_compile_options(walfs_policy INTERFACE -Wthread-safety -Wthread-safety-beta)
endif()
if(WALFS_WERROR)
  target_compile_options(walfs_policy INTERFACE -Werror)
endif()

if(WALFS_SANITIZE)
  # Sanitizers fail hard (STYLE.md rule 20).
  set(_san -fsanitize=${WALFS_SANITIZE} -fno-sanitize-recover=all -fno-omit-frame-pointer)
  add_compile_options(${_san})
  add_link_options(-fsanitize=${WALFS_SANITIZE})
endif()

# walfs_add_test(NAME <name> SOURCES <files...> LIBS <targets...> [LABEL <label>])
# One gtest binary per component; each TEST becomes its own ctest entry.
function(walfs_add_test)
  cmake_parse_arguments(T "" "NAME;LABEL" "SOURCES;LIBS" ${ARGN})
  if(NOT T_LABEL)
    set(T_LABEL unit)
  endif()
  add_executable(${T_NAME} ${T_SOURCES})
  target_link_libraries(${T_NAME} PRIVATE ${T_LIBS} GTest::gtest GTest::gtest_main walfs_policy)
  set_target_properties(${T_NAME} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin/tests)
  # One label: gtest_discover_tests cannot pass a list through PROPERTIES.
  gtest_discover_tests(${T_NAME} DISCOVERY_TIMEOUT 60 PROPERTIES LABELS ${T_LABEL})
endfunction()
