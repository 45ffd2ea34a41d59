# Writes a lab's manifest, the one file the grader reads about how the kit builds a lab
# (docs/design/build.md, "The lab manifest"). Run at build time, once the lab's programs are
# linked, by the labNN_manifest target that kit_add_lab() makes:
#
#   cmake -DKIT_MANIFEST_IN=<build>/kit-manifests/labNN.in.cmake -P cmake/KitManifest.cmake
#
# labNN.in.cmake, written when CMake generates the build, sets what generation knows: the lab,
# its student files and the paths of its targets. This script adds what only the build knows:
# each student file's compile command (from compile_commands.json) and each program's link
# command (from the records of cmake/kit-record-link), and writes <build>/kit-manifests/labNN.json.
cmake_minimum_required(VERSION 3.24)
include("${KIT_MANIFEST_IN}")

function(_kit_json_string out value)
  string(REPLACE "\\" "\\\\" value "${value}")
  string(REPLACE "\"" "\\\"" value "${value}")
  set(${out} "\"${value}\"" PARENT_SCOPE)
endfunction()

# Appends a JSON value to a comma-separated run of them, as text, never as a CMake list: a
# command may hold a semicolon.
function(_kit_json_append run value)
  if(${run})
    set(${run} "${${run}},\n    ${value}" PARENT_SCOPE)
  else()
    set(${run} "${value}" PARENT_SCOPE)
  endif()
endfunction()

function(_kit_json_array out)
  set(items "")
  foreach(item IN LISTS ARGN)
    _kit_json_string(quoted "${item}")
    list(APPEND items "${quoted}")
  endforeach()
  list(JOIN items ", " joined)
  set(${out} "[${joined}]" PARENT_SCOPE)
endfunction()

# The compile command of each compiled student file, as compile_commands.json has it, with its
# object file as "output".
file(READ "${KIT_BUILD_DIR}/compile_commands.json" commands)
string(JSON count LENGTH "${commands}")
set(compiles "")
set(found "")
math(EXPR last "${count} - 1")
foreach(index RANGE ${last})
  string(JSON source GET "${commands}" ${index} file)
  if(NOT source IN_LIST KIT_LAB_SOURCES)
    continue()
  endif()
  # The kernels library's compile of the file; the reference library may compile it too.
  string(JSON entry GET "${commands}" ${index})
  string(JSON directory GET "${entry}" directory)
  set(output "")
  foreach(object IN LISTS KIT_LAB_OBJECTS)
    file(RELATIVE_PATH relative "${directory}" "${object}")
    string(FIND "${entry}" "${relative}" at)
    if(at GREATER -1)
      set(output "${relative}")
    endif()
  endforeach()
  if(output)
    _kit_json_string(quoted "${output}")
    string(JSON entry SET "${entry}" output "${quoted}")
    _kit_json_append(compiles "${entry}")
    list(APPEND found "${source}")
  endif()
endforeach()
foreach(source IN LISTS KIT_LAB_SOURCES)
  if(NOT source IN_LIST found)
    message(FATAL_ERROR "lab ${KIT_LAB}: compile_commands.json has no command for ${source}")
  endif()
endforeach()

# The link command of each program that links the student's kernels.
set(links "")
foreach(program IN LISTS KIT_LAB_PROGRAMS)
  set(record "${KIT_BUILD_DIR}/kit-link-records/${program}.json")
  if(NOT EXISTS "${record}")
    message(FATAL_ERROR "lab ${KIT_LAB}: ${program} has no link record (${record}); it was "
                        "linked without cmake/kit-record-link: delete it and build again")
  endif()
  file(READ "${record}" link)
  string(STRIP "${link}" link)
  _kit_json_string(name "${program}")
  string(JSON link SET "${link}" program "${name}")
  _kit_json_append(links "${link}")
endforeach()

_kit_json_string(lab "${KIT_LAB}")
_kit_json_string(slug "${KIT_LAB_SLUG}")
_kit_json_array(sources ${KIT_LAB_SOURCES})
_kit_json_string(kernels "${KIT_LAB_KERNELS}")
_kit_json_string(tests "${KIT_LAB_TESTS}")
_kit_json_string(worker "${KIT_LAB_WORKER}")
_kit_json_string(probe "${KIT_LAB_PROBE}")
_kit_json_string(answers "${KIT_LAB_ANSWERS}")
_kit_json_array(programs ${KIT_LAB_PROGRAMS})
set(manifest "{
  \"format\": 1,
  \"lab\": ${lab},
  \"slug\": ${slug},
  \"sources\": ${sources},
  \"kernels\": ${kernels},
  \"tests\": ${tests},
  \"worker\": ${worker},
  \"probe\": ${probe},
  \"answers\": ${answers},
  \"programs\": ${programs},
  \"compile\": [
    ${compiles}
  ],
  \"link\": [
    ${links}
  ]
}
")
# Written only when it changes, and whole: a grader never reads half a manifest.
set(output "${KIT_BUILD_DIR}/kit-manifests/${KIT_LAB_NAME}.json")
file(WRITE "${output}.tmp" "${manifest}")
file(COPY_FILE "${output}.tmp" "${output}" ONLY_IF_DIFFERENT)
file(REMOVE "${output}.tmp")
