# kit_register_tests(<target>): after every link, list the executable's Catch2 test cases
# and register each with CTest (cmake/KitDiscoverTests.cmake says how and why).
function(kit_register_tests target)
  set(tests_file "${CMAKE_CURRENT_BINARY_DIR}/${target}_ctest.cmake")
  add_custom_command(TARGET ${target} POST_BUILD
    COMMAND "${CMAKE_COMMAND}" -D "EXE=$<TARGET_FILE:${target}>" -D "OUT=${tests_file}"
            -D "WORKDIR=${CMAKE_CURRENT_BINARY_DIR}"
            -P "${PROJECT_SOURCE_DIR}/cmake/KitDiscoverTests.cmake"
    VERBATIM)
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES "${tests_file}")
endfunction()
