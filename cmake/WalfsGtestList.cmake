# Included by the scripts that turn a gtest binary into ctest entries
# (WalfsGtestSuites.cmake, WalfsGtestShards.cmake): checks that each
# variable they need was given with -D, and lists the binary's specs.
#
#   walfs_gtest_require(TEST_EXECUTABLE CTEST_FILE LABEL)
#   walfs_gtest_lines("${TEST_EXECUTABLE}" lines)  # --gtest_list_tests, one list item a line

function(walfs_gtest_require)
  foreach(var ${ARGN})
    if(NOT DEFINED ${var})
      message(FATAL_ERROR "${CMAKE_SCRIPT_MODE_FILE}: -D ${var}=... is required")
    endif()
  endforeach()
endfunction()

function(walfs_gtest_lines executable out_var)
  execute_process(COMMAND "${executable}" --gtest_list_tests
                  OUTPUT_VARIABLE listing RESULT_VARIABLE rc ERROR_VARIABLE err TIMEOUT 60)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${executable} --gtest_list_tests failed (${rc}): ${err}")
  endif()
  string(REPLACE ";" "\\;" listing "${listing}")
  string(REPLACE "\n" ";" lines "${listing}")
  set(${out_var} "${lines}" PARENT_SCOPE)
endfunction()
