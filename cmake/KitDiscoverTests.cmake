# Run after a lab's test executable is linked: lists its test cases and writes a CTest file
# with one test per case, labelled from the case's tags (lab, kind, gpu or cpu).
# Catch2's own catch_discover_tests flattens list-valued properties, so a test could carry
# only one label; this keeps all three. A skip is recognised by Catch2's summary line, not by
# exit code 4: Catch2 3.4 exits with the number of failed assertions, so 4 can be a failure.
#   cmake -D EXE=<exe> -D OUT=<file.cmake> -D WORKDIR=<dir> -P KitDiscoverTests.cmake
execute_process(COMMAND "${EXE}" --list-tests --reporter xml
                OUTPUT_VARIABLE listing RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "could not list the tests of ${EXE} (exit code ${rc})")
endif()

set(script "")
string(REGEX MATCHALL "<TestCase>.*</TestCase>" cases "${listing}")
string(REPLACE "</TestCase>" "</TestCase>;" cases "${cases}")
foreach(case IN LISTS cases)
  if(NOT case MATCHES "<Name>([^<]*)</Name>")
    continue()
  endif()
  set(name "${CMAKE_MATCH_1}")
  # Undo the XML reporter's escaping (test names should not need it; see docs/design/tests.md).
  string(REPLACE "&quot;" "\"" name "${name}")
  string(REPLACE "&apos;" "'" name "${name}")
  string(REPLACE "&lt;" "<" name "${name}")
  string(REPLACE "&gt;" ">" name "${name}")
  string(REPLACE "&amp;" "&" name "${name}")
  string(REGEX MATCH "<Tags>([^<]*)</Tags>" _ "${case}")
  string(REGEX MATCHALL "\\[[^]]*\\]" tags "${CMAKE_MATCH_1}")
  set(labels "")
  set(device cpu)
  set(serial FALSE)
  foreach(tag IN LISTS tags)
    string(REGEX REPLACE "^\\[(.*)\\]$" "\\1" tag "${tag}")
    if(tag STREQUAL "gpu")
      set(device gpu)
    else()
      list(APPEND labels "${tag}")
    endif()
    # Performance and resources tests run alone: no other test may share the GPU while one
    # times a kernel or counts the device's free memory.
    if(tag MATCHES "^(performance|resources)$")
      set(serial TRUE)
    endif()
  endforeach()
  list(APPEND labels "${device}")
  string(APPEND script
    "add_test([==[${name}]==] \"${EXE}\" [==[${name}]==])\n"
    "set_tests_properties([==[${name}]==] PROPERTIES WORKING_DIRECTORY \"${WORKDIR}\" "
    "LABELS \"${labels}\" SKIP_REGULAR_EXPRESSION [==[test cases: 1 \\| 1 skipped]==] "
    "TIMEOUT 300 RUN_SERIAL ${serial})\n")
endforeach()
file(WRITE "${OUT}" "${script}")
