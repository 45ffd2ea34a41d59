# kit_add_lab(): the one way a lab becomes targets, so that every lab builds the same way.
#
#   kit_add_lab([LIBRARIES CUDA::cublas] [PROBE tools/lab03_probe.cu] [KERNEL_ADDRESSES])
#
# The lab's id comes from its folder name (labs/NN_slug), and its student files from the
# student_files line of its rubric.toml, the one list the grader reads too: the source files
# among them are compiled, and a .toml among them is the answer sheet (see "answers" below).
#
# makes, for the lab folder it is called from (labs/NN_slug):
#   labNN_kernels    the student files, from labs/ or solutions/ as KIT_KERNELS says;
#   labNN_reference  the reference files again, their namespace renamed labNN_reference,
#                    only when solutions/ exists (performance tests time against it);
#   labNN_tests      the lab's public tests plus, when solutions/ exists, its hidden tests;
# and registers every test case with CTest, labelled from its tags (lab, kind, gpu or cpu).
# Options:
#   (answers)         a .toml student file holds written answers; the tests get its path for
#                     the build mode (labs/ or solutions/) as KIT_ANSWERS_PATH.
#   PROBE src         labNN_probe: the student's kernels in a small program that the safety
#                     tests run under compute-sanitizer; the tests get KIT_PROBE_PATH and
#                     KIT_CUDA_BIN_DIR (where to look for compute-sanitizer), and the kernels
#                     are built with -lineinfo so reports name the offending line.
#   KERNEL_ADDRESSES  the tests take a __global__ template's address in another file (to read
#                     its attributes). CUDA 13 gives a template's host stub internal linkage
#                     by default; -static-global-template-stub=false keeps it external. Older
#                     nvcc, which lacks the option, already did.
include(CheckCompilerFlag)

# The student files named on the student_files line of a rubric.toml: sources in `sources`, the
# answer sheet (a .toml file), if any, in `answers`.
function(kit_lab_student_files rubric sources answers)
  file(READ "${rubric}" text)
  if(NOT text MATCHES "\nstudent_files *= *\\[([^]]*)\\]")
    message(FATAL_ERROR "${rubric} has no student_files = [...] line; CMake and the grader both read it")
  endif()
  string(REGEX MATCHALL "\"[^\"]+\"" quoted "${CMAKE_MATCH_1}")
  set(code "")
  set(sheet "")
  foreach(entry IN LISTS quoted)
    string(REPLACE "\"" "" entry "${entry}")
    if(entry MATCHES "\\.toml$")
      if(sheet)
        message(FATAL_ERROR "${rubric}: two answer sheets (${sheet}, ${entry}); a lab has at most one")
      endif()
      set(sheet "${entry}")
    elseif(NOT entry MATCHES "\\.(h|hpp|cuh)$")
      list(APPEND code "${entry}")
    endif()
  endforeach()
  set(${sources} "${code}" PARENT_SCOPE)
  set(${answers} "${sheet}" PARENT_SCOPE)
endfunction()

# The judge's side of a split lab's calls (tests/calls_judge.cpp), for one role (student or
# reference), naming the worker executable that serves it; the tests depend on that worker.
function(kit_add_lab_calls target role worker)
  add_library(${target} OBJECT "${calls_source}")
  target_include_directories(${target} PRIVATE "${lab_dir}")
  target_link_libraries(${target} PUBLIC kit_judge)
  target_compile_definitions(${target} PRIVATE KIT_CALLS_ROLE=${role}
                             "KIT_CALLS_WORKER=\"$<TARGET_FILE:${worker}>\"")
  add_dependencies(${target} ${worker})
endfunction()

function(kit_add_lab)
  cmake_parse_arguments(LAB "KERNEL_ADDRESSES" "PROBE" "LIBRARIES" ${ARGN})
  if(LAB_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "kit_add_lab: unknown arguments ${LAB_UNPARSED_ARGUMENTS} (called from "
                        "${CMAKE_CURRENT_SOURCE_DIR}); the id comes from the folder name and the "
                        "student files from rubric.toml")
  endif()
  get_filename_component(slug "${CMAKE_CURRENT_SOURCE_DIR}" NAME)
  if(NOT slug MATCHES "^([0-9][0-9])_[a-z0-9_]+$")
    message(FATAL_ERROR "lab folder ${slug} is not named NN_slug, e.g. 02_naive_matmul")
  endif()
  set(LAB_ID "${CMAKE_MATCH_1}")
  set(rubric "${CMAKE_CURRENT_SOURCE_DIR}/rubric.toml")
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${rubric}")
  kit_lab_student_files("${rubric}" LAB_STUDENT_FILES LAB_ANSWERS)
  if(NOT LAB_STUDENT_FILES)
    message(FATAL_ERROR "${rubric}: student_files names no source file to compile")
  endif()
  set(lab_dir "${PROJECT_SOURCE_DIR}/labs/${slug}")
  set(solution_dir "${PROJECT_SOURCE_DIR}/solutions/${slug}")
  set(name "lab${LAB_ID}")

  if(KIT_KERNELS STREQUAL "reference")
    set(kernel_dir "${solution_dir}")
  else()
    set(kernel_dir "${lab_dir}")
  endif()
  list(TRANSFORM LAB_STUDENT_FILES PREPEND "${kernel_dir}/" OUTPUT_VARIABLE kernel_sources)
  # A missing file costs only its own lab: the other labs still configure and build.
  foreach(source IN LISTS kernel_sources)
    if(NOT EXISTS "${source}")
      message(WARNING "Lab ${LAB_ID} is not built: ${source} is missing. Restore it "
                      "(make handout regenerates the skeletons) or build the other labs.")
      return()
    endif()
  endforeach()
  add_library(${name}_kernels STATIC ${kernel_sources})
  target_include_directories(${name}_kernels PUBLIC "${lab_dir}")
  target_link_libraries(${name}_kernels PUBLIC kit_common ${LAB_LIBRARIES})

  file(GLOB test_sources CONFIGURE_DEPENDS "${lab_dir}/tests/*.cpp" "${lab_dir}/tests/*.cu")
  # A lab whose tests reach its code through a worker (tests/worker/serve.cpp; kit/remote.hpp)
  # builds the student's files into labNN_worker, never into the tests, which get the calls'
  # judge side (tests/calls_judge.cpp) instead.
  set(worker_source "${lab_dir}/tests/worker/serve.cpp")
  set(calls_source "${lab_dir}/tests/calls_judge.cpp")
  set(split FALSE)
  if(EXISTS "${worker_source}" AND EXISTS "${calls_source}")
    set(split TRUE)
    list(REMOVE_ITEM test_sources "${calls_source}")
  endif()
  add_executable(${name}_tests ${test_sources})
  target_link_libraries(${name}_tests PRIVATE kit_testing Catch2::Catch2WithMain)
  if(split)
    add_executable(${name}_worker "${worker_source}")
    target_link_libraries(${name}_worker PRIVATE ${name}_kernels kit_worker)
    kit_add_lab_calls(${name}_calls student ${name}_worker)
    target_link_libraries(${name}_tests PRIVATE ${name}_calls)
    target_include_directories(${name}_tests PRIVATE "${lab_dir}")
    # A new worker for each test case, when the grader runs several in one process.
    target_sources(${name}_tests PRIVATE "${PROJECT_SOURCE_DIR}/common/src/fresh_workers.cpp"
                                         "${PROJECT_SOURCE_DIR}/common/src/process_log_listener.cpp")
  else()
    target_link_libraries(${name}_tests PRIVATE ${name}_kernels)
  endif()
  # The tests' own host code (inputs, comparisons, small host references) needs no -O3, and these
  # Catch2-heavy C++ sources compile about a third faster at -O1: they were the largest part of
  # the grader's harness build on two cores. What is timed (the kernels, the kit's timer in
  # kit_testing) is compiled as before, and so are the few CUDA test sources.
  target_compile_options(${name}_tests PRIVATE
                         $<$<AND:$<CONFIG:Release>,$<COMPILE_LANGUAGE:CXX>>:-O1>)

  if(EXISTS "${solution_dir}")
    list(TRANSFORM LAB_STUDENT_FILES PREPEND "${solution_dir}/" OUTPUT_VARIABLE reference_sources)
    add_library(${name}_reference STATIC ${reference_sources})
    target_compile_definitions(${name}_reference PRIVATE ${name}=${name}_reference)
    target_include_directories(${name}_reference PRIVATE "${lab_dir}")
    target_link_libraries(${name}_reference PUBLIC kit_common ${LAB_LIBRARIES})
    file(GLOB hidden_sources CONFIGURE_DEPENDS "${solution_dir}/hidden_tests/*.cpp"
         "${solution_dir}/hidden_tests/*.cu")
    target_sources(${name}_tests PRIVATE ${hidden_sources})
    if(split)
      # The reference is served the same way, so that a speed test times both alike.
      add_executable(${name}_reference_worker "${worker_source}")
      target_compile_definitions(${name}_reference_worker PRIVATE ${name}=${name}_reference)
      target_include_directories(${name}_reference_worker PRIVATE "${lab_dir}")
      target_link_libraries(${name}_reference_worker PRIVATE ${name}_reference kit_worker)
      kit_add_lab_calls(${name}_reference_calls reference ${name}_reference_worker)
      target_compile_definitions(${name}_reference_calls PRIVATE ${name}=${name}_reference)
      target_link_libraries(${name}_tests PRIVATE ${name}_reference_calls)
    else()
      target_link_libraries(${name}_tests PRIVATE ${name}_reference)
    endif()
    target_compile_definitions(${name}_tests PRIVATE KIT_HAVE_REFERENCE=1)
    target_include_directories(${name}_tests PRIVATE "${lab_dir}/tests")
  endif()

  if(LAB_ANSWERS)
    target_compile_definitions(${name}_tests PRIVATE KIT_ANSWERS_PATH="${kernel_dir}/${LAB_ANSWERS}")
  endif()
  if(LAB_PROBE)
    get_filename_component(cuda_bin "${CMAKE_CUDA_COMPILER}" DIRECTORY)
    target_compile_definitions(${name}_tests PRIVATE KIT_CUDA_BIN_DIR="${cuda_bin}")
    if(KIT_PROBES)
      add_executable(${name}_probe "${lab_dir}/${LAB_PROBE}")
      target_link_libraries(${name}_probe PRIVATE ${name}_kernels kit_probe)
      add_dependencies(${name}_tests ${name}_probe)
      target_compile_definitions(${name}_tests PRIVATE KIT_PROBE_PATH="$<TARGET_FILE:${name}_probe>")
    else()
      # Every test that runs the probe needs a GPU and skips before it would.
      target_compile_definitions(${name}_tests PRIVATE KIT_PROBE_PATH="")
    endif()
  endif()
  if(LAB_KERNEL_ADDRESSES)
    check_compiler_flag(CUDA "-static-global-template-stub=false" KIT_NVCC_HAS_STATIC_STUB_OPTION)
  endif()
  foreach(target ${name}_kernels ${name}_reference ${name}_tests)
    if(NOT TARGET ${target})
      continue()
    endif()
    # -lineinfo leaves the machine code as it is, so both copies of the kernels keep their speed.
    if(LAB_PROBE AND NOT target STREQUAL "${name}_tests")
      target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-lineinfo>)
    endif()
    if(LAB_KERNEL_ADDRESSES AND KIT_NVCC_HAS_STATIC_STUB_OPTION)
      target_compile_options(${target} PRIVATE
                             $<$<COMPILE_LANGUAGE:CUDA>:-static-global-template-stub=false>)
    endif()
  endforeach()

  # Linked by the C++ compiler (no device linking is needed), which is the language whose
  # linker launcher CMake 3.24 supports: cmake/kit-record-link records these links.
  foreach(target ${name}_tests ${name}_probe ${name}_worker ${name}_reference_worker)
    if(TARGET ${target})
      set_target_properties(${target} PROPERTIES LINKER_LANGUAGE CXX)
    endif()
  endforeach()
  kit_register_tests(${name}_tests)

  # The lab's manifest, once this folder's CMakeLists.txt has run to its end, so that a program
  # it adds after this call (lab 06's chart program) is among those it lists.
  set(_kit_lab_name "${name}" PARENT_SCOPE)
  set(_kit_lab_id "${LAB_ID}" PARENT_SCOPE)
  set(_kit_lab_slug "${slug}" PARENT_SCOPE)
  set(_kit_lab_sources "${kernel_sources}" PARENT_SCOPE)
  set(_kit_lab_answers "${LAB_ANSWERS}" PARENT_SCOPE)
  cmake_language(DEFER CALL _kit_lab_manifest)
endfunction()

# labNN_manifest (built by `all` and by the grader's kit_harness): writes
# <build>/kit-manifests/labNN.json through cmake/KitManifest.cmake, once the tests and every
# program of the lab that links the student's kernels (the tests or the worker, the probe, a
# chart program) are linked. Here, what generating the build knows: the lab and the paths of its targets.
function(_kit_lab_manifest)
  set(name "${_kit_lab_name}")
  get_directory_property(targets BUILDSYSTEM_TARGETS)
  set(programs "")
  foreach(target IN LISTS targets)
    get_target_property(type ${target} TYPE)
    get_target_property(libraries ${target} LINK_LIBRARIES)
    if(type STREQUAL "EXECUTABLE" AND "${name}_kernels" IN_LIST libraries)
      list(APPEND programs ${target})
    endif()
  endforeach()
  set(worker "")
  if(TARGET ${name}_worker)
    set(worker "$<TARGET_FILE:${name}_worker>")
  endif()
  set(probe "")
  if(TARGET ${name}_probe)
    set(probe "$<TARGET_FILE:${name}_probe>")
  endif()
  set(manifest_in "${CMAKE_BINARY_DIR}/kit-manifests/${name}.in.cmake")
  file(GENERATE OUTPUT "${manifest_in}" CONTENT "# Written by cmake/KitLab.cmake for cmake/KitManifest.cmake.
set(KIT_BUILD_DIR [[${CMAKE_BINARY_DIR}]])
set(KIT_LAB_NAME [[${name}]])
set(KIT_LAB [[${_kit_lab_id}]])
set(KIT_LAB_SLUG [[${_kit_lab_slug}]])
set(KIT_LAB_SOURCES [[${_kit_lab_sources}]])
set(KIT_LAB_ANSWERS [[${_kit_lab_answers}]])
set(KIT_LAB_KERNELS [[$<TARGET_FILE:${name}_kernels>]])
set(KIT_LAB_OBJECTS [[$<TARGET_OBJECTS:${name}_kernels>]])
set(KIT_LAB_TESTS [[$<TARGET_FILE:${name}_tests>]])
set(KIT_LAB_WORKER [[${worker}]])
set(KIT_LAB_PROBE [[${probe}]])
set(KIT_LAB_PROGRAMS [[${programs}]])
")
  add_custom_target(${name}_manifest ALL
    COMMAND "${CMAKE_COMMAND}" "-DKIT_MANIFEST_IN=${manifest_in}"
            -P "${PROJECT_SOURCE_DIR}/cmake/KitManifest.cmake"
    COMMENT "Writing the manifest of lab ${_kit_lab_id}" VERBATIM)
  # The tests too: a split lab's tests link no student code, yet the grader runs them.
  add_dependencies(${name}_manifest ${programs} ${name}_tests)
endfunction()
