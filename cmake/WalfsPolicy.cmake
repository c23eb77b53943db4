# Build policy as INTERFACE targets, linked PRIVATE by every walfs target.
#
#   walfs_policy   warnings (+ -Wthread-safety under clang), -Werror when
#                  WALFS_WERROR is ON, sanitizers from WALFS_SANITIZE.
#
# Options:
#   WALFS_WERROR      treat warnings as errors (the asan CI job sets it, with clang)
#   WALFS_SANITIZE    "" | "address,undefined" | "thread"
#   WALFS_FUZZ        build libFuzzer targets (clang only)
#   WALFS_DEBUG_INFO  "full" (-g, the build type's own) | "lines": line
#                     tables only (gcc -g1, clang -gline-tables-only), enough
#                     for sanitizer reports, gdb backtraces and perf; about
#                     a third less compile time (the CI jobs set it)
#   WALFS_PCH         precompiled headers for the test binaries and the
#                     libraries (walfs_precompile below; ON by default)
#   WALFS_LINKER      "lld" (the default, where the compiler can drive it;
#                     Debian's lld package) | "system" (the compiler's own,
#                     GNU ld).  lld links the same binaries in about a
#                     third of the time: TSan's fs_test 2.1 s -> 0.8 s, and
#                     each CI build links some 70 of them
#
# Unity builds (CMake's own CMAKE_UNITY_BUILD, which every CI job sets):
# each target's .cc files are compiled sixteen to a translation unit (our
# default for CMAKE_UNITY_BUILD_BATCH_SIZE, CMake's is eight; a clean gcc
# build on 2 cores: 629 -> 537 CPU-s, 325 -> 278 s, and a whole target a
# unit saved no more), so one file's anonymous-namespace helpers meet its
# neighbours'.  A helper that two files need has one home in a header
# (base/stat_counter.h, base/splitmix.h, tests/base/byte_pattern.h, ...);
# a spec file whose own constants would clash (kSectors of different logs) keeps its names in a
# namespace named after the file.  The whole tree is checked with
# -DCMAKE_UNITY_BUILD_BATCH_SIZE=0 (every target one unit, so any batching
# compiles).

if(NOT DEFINED CMAKE_UNITY_BUILD_BATCH_SIZE)
  set(CMAKE_UNITY_BUILD_BATCH_SIZE 16)
endif()

option(WALFS_WERROR "Treat warnings as errors" OFF)
set(WALFS_SANITIZE "" CACHE STRING "Sanitizers: address,undefined | thread | empty")
option(WALFS_FUZZ "Build libFuzzer targets (clang only)" OFF)

set(WALFS_DEBUG_INFO "full" CACHE STRING "Debug information: full | lines")
set_property(CACHE WALFS_DEBUG_INFO PROPERTY STRINGS full lines)
if(WALFS_DEBUG_INFO STREQUAL "lines")
  if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    set(_walfs_lines -gline-tables-only)
  else()
    set(_walfs_lines -g1)
  endif()
  foreach(lang C CXX)
    foreach(config RELWITHDEBINFO DEBUG)
      string(REGEX REPLACE "(^| )-g( |$)" "\\1${_walfs_lines}\\2" CMAKE_${lang}_FLAGS_${config}
             "${CMAKE_${lang}_FLAGS_${config}}")
    endforeach()
  endforeach()
elseif(NOT WALFS_DEBUG_INFO STREQUAL "full")
  message(FATAL_ERROR "WALFS_DEBUG_INFO is full or lines, not '${WALFS_DEBUG_INFO}'")
endif()

option(WALFS_PCH "Precompiled headers for the tests and the libraries" ON)

set(WALFS_LINKER "lld" CACHE STRING "Linker: lld | system")
set_property(CACHE WALFS_LINKER PROPERTY STRINGS lld system)
if(WALFS_LINKER STREQUAL "lld")
  include(CheckLinkerFlag)
  check_linker_flag(CXX "-fuse-ld=lld" WALFS_HAVE_LLD)
  if(WALFS_HAVE_LLD)
    add_link_options(-fuse-ld=lld)
  else()
    message(STATUS "walfs: lld not found (Debian package lld); linking with the system linker")
  endif()
elseif(NOT WALFS_LINKER STREQUAL "system")
  message(FATAL_ERROR "WALFS_LINKER is lld or system, not '${WALFS_LINKER}'")
endif()

# walfs_precompile(<target> [TEST]): the headers nearly every translation
# unit of <target> includes, parsed once per target instead of once per
# file: the standard library's common headers and fmt, plus GoogleTest for a
# test binary (TEST).  GoogleTest's and fmt's headers cost about 1.9 s and
# 0.9 s of each file's compile (gcc 12, -O2).  A file must still include
# what it uses: a build with -DWALFS_PCH=OFF checks that.  The spec binaries
# share one such header (walfs_test_pch, tests/CMakeLists.txt).
#
# CLI adds CLI11 (<CLI/CLI.hpp>, about 9 s of each file's compile): walfs_cli
# precompiles it once, and every program whose files include tools/cli.h
# reuses that header (walfs_reuse_cli_pch below).
function(walfs_precompile target)
  cmake_parse_arguments(P "TEST;CLI" "" "" ${ARGN})
  if(NOT WALFS_PCH)
    return()
  endif()
  set(headers <algorithm> <atomic> <chrono> <cstdint> <cstring> <functional> <map> <memory> <mutex>
              <optional> <string> <string_view> <thread> <utility> <vector> <fmt/format.h>)
  if(P_TEST)
    list(APPEND headers <gtest/gtest.h>)
  endif()
  if(P_CLI)
    list(APPEND headers <CLI/CLI.hpp>)
  endif()
  target_precompile_headers(${target} PRIVATE ${headers})
endfunction()

# walfs_reuse_base_pch(<target>...): the libraries above base (tracing,
# journal, fs, mount, crash) use walfs_base's precompiled header, the same
# headers under the same flags, instead of one each: in a unity build a
# library is one to five translation units, too few to pay for a header of
# its own (about 3.5 s under gcc).  A library built with
# -finstrument-functions (WALFS_FUNCTION_TRACE) keeps its own.
function(walfs_reuse_base_pch)
  if(NOT WALFS_PCH)
    return()
  endif()
  foreach(target ${ARGN})
    if(WALFS_FUNCTION_TRACE)
      walfs_precompile(${target})
    else()
      target_precompile_headers(${target} REUSE_FROM walfs_base)
    endif()
  endforeach()
endfunction()

# walfs_reuse_cli_pch(<target>...): the programs (tools, benchmarks,
# harnesses) use walfs_cli's precompiled header instead of parsing CLI11 in
# each of their files.  Their compile options are walfs_cli's (walfs_policy
# and the build's own); a -D of their own does not touch the header.
function(walfs_reuse_cli_pch)
  if(NOT WALFS_PCH)
    return()
  endif()
  foreach(target ${ARGN})
    target_precompile_headers(${target} REUSE_FROM walfs_cli)
  endforeach()
endfunction()

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

if(WALFS_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "WALFS_FUZZ=ON needs clang (libFuzzer)")
  endif()
  if(WALFS_SANITIZE AND NOT WALFS_SANITIZE STREQUAL "address,undefined")
    message(FATAL_ERROR "WALFS_FUZZ=ON builds with address,undefined, not ${WALFS_SANITIZE}")
  endif()
  # Every library gets libFuzzer's coverage instrumentation (fuzzer-no-link),
  # or the fuzzer would see no edges in the decoders it drives; and the same
  # sanitizers as the fuzzer, failing hard (STYLE.md rule 20).
  add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all
                      -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address,undefined)
  # Decoders compute CRCs but ignore mismatches in this build, so that the
  # fuzzer gets past them (the OSS-Fuzz convention).  Unit tests that check
  # CRCs fail here: this build is for the fuzzers only.
  add_compile_definitions(FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION)
  # `cmake --build <dir> --target fuzzers` builds the fuzzers and their seeds only.
  add_custom_target(fuzzers)
endif()

# walfs_spec_code(<target>...): the targets' own files (a spec binary's, and
# walfs_test_pch's, whose header they share) compile at -O0 in every build; the
# libraries they drive keep the build type's optimization.  The specs check
# the code under test as it ships, and that code is where they spend their
# time; their own code is set-up and assertions.  Code generation is most
# of a spec file's compile: -O0 compiles one 1.9 times faster under gcc
# (fs_test's first unit: 21 s -> 11 s) and 2.7 times under clang with ASan
# (29 s -> 11 s; -O1 saves only 5 % there), and the suite's test times
# stayed within noise (ASan: 333 s -> 343 s).
function(walfs_spec_code)
  foreach(target ${ARGN})
    target_compile_options(${target} PRIVATE -O0)
  endforeach()
endfunction()

# walfs_program_code(<target>...): in a sanitizer build, the programs' own
# code (walfs_cli and every program on its precompiled header, which must
# share its flags) compiles at -O0 as well: a sanitizer finds the same
# errors in it there, the gcc job runs it as it ships, and the libraries it
# drives keep -O2.  CLI11's inline code is most of a program's compile
# (walfs-trace under ASan: 19 s at -O2, 10 s at -O0).
function(walfs_program_code)
  if(WALFS_SANITIZE)
    walfs_spec_code(${ARGN})
  endif()
endfunction()

# walfs_add_fuzzer(NAME <name> SOURCES <files...> LIBS <targets...>
#                  [CORPUS <seed dir>] [DEPENDS <targets that make the seeds>])
# A libFuzzer target (STYLE.md rule 18), built only with WALFS_FUZZ=ON, plus
# a ctest labelled `fuzz` that runs it for 10 seconds over the seeds.  New
# inputs go to <build>/.../<name>_corpus, never into the seed directory.
function(walfs_add_fuzzer)
  cmake_parse_arguments(F "" "NAME;CORPUS" "SOURCES;LIBS;DEPENDS" ${ARGN})
  if(NOT WALFS_FUZZ)
    return()
  endif()
  add_executable(${F_NAME} ${F_SOURCES})
  target_compile_options(${F_NAME} PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_options(${F_NAME} PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_libraries(${F_NAME} PRIVATE ${F_LIBS} walfs_policy)
  set_target_properties(${F_NAME} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin/fuzz)
  add_dependencies(fuzzers ${F_NAME})
  if(F_DEPENDS)
    add_dependencies(fuzzers ${F_DEPENDS})
  endif()
  set(work_corpus ${CMAKE_CURRENT_BINARY_DIR}/${F_NAME}_corpus)
  file(MAKE_DIRECTORY ${work_corpus})
  add_test(NAME ${F_NAME}
    COMMAND ${F_NAME} -max_total_time=10 -print_final_stats=1 ${work_corpus} ${F_CORPUS})
  set_tests_properties(${F_NAME} PROPERTIES LABELS fuzz TIMEOUT 120)
endfunction()

# How many specs one ctest entry of a spec binary runs, in one process: 1
# (each TEST its own entry and process) in a plain build; 8 under the
# sanitizers, whose start-up costs more than most unit specs
# (WalfsGtestShards.cmake has the numbers).  The gcc CI job keeps one spec a
# process, so every spec is still run alone in CI.
if(WALFS_SANITIZE)
  set(_walfs_specs_per_process 8)
else()
  set(_walfs_specs_per_process 1)
endif()
set(WALFS_SPECS_PER_PROCESS ${_walfs_specs_per_process} CACHE STRING
    "Specs a ctest entry of a spec binary runs in one process (1: one a spec)")
if(NOT WALFS_SPECS_PER_PROCESS MATCHES "^[1-9][0-9]*$")
  message(FATAL_ERROR "WALFS_SPECS_PER_PROCESS must be a positive number, not '${WALFS_SPECS_PER_PROCESS}'")
endif()

# walfs_add_test(NAME <name> SOURCES <files...> LIBS <targets...> [LABEL <label>]
#                [PER_SUITE])
# One gtest binary per component; each TEST becomes its own ctest entry, or
# with WALFS_SPECS_PER_PROCESS above 1 each shard of that many specs
# (WalfsGtestShards.cmake), or with PER_SUITE each test suite ("Suite.*",
# one process), for suites that share one expensive fixture
# (WalfsGtestSuites.cmake).
function(walfs_add_test)
  cmake_parse_arguments(T "PER_SUITE" "NAME;LABEL" "SOURCES;LIBS" ${ARGN})
  if(NOT T_LABEL)
    set(T_LABEL unit)
  endif()
  add_executable(${T_NAME} ${T_SOURCES})
  target_link_libraries(${T_NAME} PRIVATE ${T_LIBS} GTest::gtest GTest::gtest_main walfs_policy)
  walfs_spec_code(${T_NAME})
  if(WALFS_PCH)
    # One precompiled header for every spec binary (tests/CMakeLists.txt).
    target_precompile_headers(${T_NAME} REUSE_FROM walfs_test_pch)
  endif()
  set_target_properties(${T_NAME} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin/tests)
  if(NOT T_PER_SUITE AND WALFS_SPECS_PER_PROCESS EQUAL 1)
    # One label: gtest_discover_tests cannot pass a list through PROPERTIES.
    gtest_discover_tests(${T_NAME} DISCOVERY_TIMEOUT 60 PROPERTIES LABELS ${T_LABEL})
    return()
  endif()
  # The suites or specs are listed after each build; ctest reads the list
  # through a wrapper that stands in a failing entry while the binary is not
  # built (as gtest_discover_tests does).
  set(entries_file ${CMAKE_CURRENT_BINARY_DIR}/${T_NAME}_entries.cmake)
  set(include_file ${CMAKE_CURRENT_BINARY_DIR}/${T_NAME}_include.cmake)
  if(T_PER_SUITE)
    set(script_args -D TEST_EXECUTABLE=$<TARGET_FILE:${T_NAME}> -D CTEST_FILE=${entries_file} -D LABEL=${T_LABEL}
                    -P ${PROJECT_SOURCE_DIR}/cmake/WalfsGtestSuites.cmake)
  else()
    set(script_args -D TEST_EXECUTABLE=$<TARGET_FILE:${T_NAME}> -D TEST_NAME=${T_NAME}
                    -D CTEST_FILE=${entries_file} -D LABEL=${T_LABEL} -D SIZE=${WALFS_SPECS_PER_PROCESS}
                    -P ${PROJECT_SOURCE_DIR}/cmake/WalfsGtestShards.cmake)
  endif()
  add_custom_command(TARGET ${T_NAME} POST_BUILD
    COMMAND ${CMAKE_COMMAND} ${script_args}
    BYPRODUCTS ${entries_file}
    VERBATIM)
  file(WRITE ${include_file}
    "if(EXISTS [==[${entries_file}]==])\n"
    "  include([==[${entries_file}]==])\n"
    "else()\n"
    "  add_test(${T_NAME}_NOT_BUILT ${T_NAME}_NOT_BUILT)\n"
    "endif()\n")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES ${include_file})
endfunction()

# walfs_enable_function_trace(<target>): with -DWALFS_FUNCTION_TRACE=ON, builds
# <target> with -finstrument-functions so every function entry and exit is
# recorded as a func/entry and func/exit trace event (tracing/function_trace.cc).
# The tracer and base are never instrumented.
option(WALFS_FUNCTION_TRACE "Instrument chosen targets with -finstrument-functions" OFF)
# clang 14 instruments libstdc++'s extern-template inlines with plain
# -finstrument-functions and then fails to link them; instrumenting after
# inlining avoids that (and skips functions that were inlined anyway).
if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  set(WALFS_INSTRUMENT_FLAG -finstrument-functions-after-inlining)
else()
  set(WALFS_INSTRUMENT_FLAG -finstrument-functions)
endif()
function(walfs_enable_function_trace target)
  if(WALFS_FUNCTION_TRACE)
    target_compile_options(${target} PRIVATE ${WALFS_INSTRUMENT_FLAG})
    target_link_libraries(${target} PRIVATE walfs::tracing)
  endif()
endfunction()
