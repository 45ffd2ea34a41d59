"""Build stage, between compiling and linking: what the student's compiled objects define, use
and run before main, read with the toolchain's nm and readelf (docs/design/grading.md,
"The grader's pipeline", the build stage).

The student's objects are linked into the grading executables beside the kit's code, so a
symbol they define can take the place of the kit's (a timer, a checker), and a symbol they use
can reach anything linked in (the reference solution, files, processes). So before linking:

- a global symbol an object defines must belong to the lab's namespace (`lab02::...`), or be a
  weak copy of a standard-library, CUDA vector-type or kit::DeviceBuffer inline function that
  every translation unit using them carries;
- a symbol it uses must be on the allowlist below: the CUDA runtime calls the labs need and
  nvcc's own registration calls, the C++ runtime and standard library (without files,
  processes, threads or clocks), the C string and math functions, and the kit's checks;
- nothing may run before main but nvcc's registration of the file's kernels: no global object
  with a constructor, no __attribute__((constructor)).
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from ..errors import GraderError


@dataclass(frozen=True)
class ObjectTools:
    """The toolchain's binutils, as the kit's CMake cache names them (CMAKE_NM, CMAKE_READELF)."""

    nm: str = "nm"
    readelf: str = "readelf"


@dataclass(frozen=True)
class Symbol:
    raw: str  # as in the object (mangled)
    name: str  # demangled
    kind: str  # nm's letter: U undefined, T/D/B/R strong, W/V weak, lower case local
    value: str = ""


CUDA_RUNTIME = {
    "cudaMalloc", "cudaFree", "cudaMemcpy", "cudaMemset", "cudaMemcpyToSymbol",
    "cudaMemcpyFromSymbol", "cudaGetSymbolSize", "cudaGetSymbolAddress",
    "cudaGetLastError", "cudaPeekAtLastError", "cudaGetErrorString", "cudaGetErrorName",
    "cudaDeviceSynchronize", "cudaLaunchKernel", "cudaFuncGetAttributes",
    "cudaFuncSetAttribute", "cudaGetDevice", "cudaGetDeviceCount", "cudaGetDeviceProperties",
    "cudaGetDeviceProperties_v2", "cudaDeviceGetAttribute",
    "cudaOccupancyMaxActiveBlocksPerMultiprocessor",
    "cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags",
    "cudaOccupancyMaxPotentialBlockSize", "cudaOccupancyAvailableDynamicSMemPerBlock",
}  # fmt: skip
NVCC_GENERATED = re.compile(
    r"__cuda(RegisterFatBinary|RegisterFatBinaryEnd|UnregisterFatBinary|RegisterFunction|RegisterVar"
    r"|RegisterManagedVar|InitModule|PushCallConfiguration|PopCallConfiguration|LaunchKernel|GetKernel"
    r"|RegisterLinkedBinary\w*)"
)
C_RUNTIME = {
    "_Unwind_Resume", "__gxx_personality_v0", "__stack_chk_fail", "atexit", "__dso_handle",
    "_GLOBAL_OFFSET_TABLE_", "memcpy", "memmove", "memset", "memcmp", "strlen", "strcmp",
    "printf", "puts", "putchar", "snprintf", "__printf_chk", "__snprintf_chk", "__memcpy_chk",
    "__memset_chk", "abort", "__assert_fail",
}  # fmt: skip
# C library functions of the headers the source screen accepts (<cstdlib>, <cstring>, <cctype>)
# that touch nothing outside the process: its heap, numbers and strings.
C_LIBRARY = {
    "malloc", "calloc", "realloc", "free", "abs", "labs", "llabs", "div", "ldiv", "lldiv",
    "strtol", "strtoll", "strtoul", "strtoull", "strtof", "strtod", "atoi", "atol", "atoll",
    "atof", "qsort", "bsearch", "strncmp", "strncpy", "strcpy", "strcat", "strncat", "strchr",
    "strrchr", "strstr", "memchr", "toupper", "tolower", "isdigit", "isalpha", "isspace",
}  # fmt: skip
CXX_RUNTIME = re.compile(
    r"__cxa_(allocate_exception|free_exception|throw|rethrow|begin_catch|end_catch|guard_acquire"
    r"|guard_release|guard_abort|pure_virtual|call_unexpected|bad_cast|bad_typeid"
    r"|throw_bad_array_new_length)"
    r"|operator (new|delete)(\[\])?\(.*"
)
MATH = re.compile(
    r"(sqrt|cbrt|fabs|floor|ceil|round|lround|llround|trunc|pow|exp|exp2|log|log2|log10|fmin|fmax|fma"
    r"|sin|cos|tan|ldexp|frexp|hypot|nan)f?"
)
# The standard library, but not files, processes, threads, clocks or the environment.
STD_FORBIDDEN = re.compile(
    r"fstream|filebuf|filesystem|thread|chrono|system_clock|steady_clock|random_device|getenv|"
    r"std::system|basic_(i|o)stream|basic_ios|ios_base|cout|cerr|clog|locale|__basic_file"
)
KIT_API = re.compile(r"kit::(check_cuda|require_[a-z_]+)\(.*|kit::DeviceBuffer<.*")
WEAK_ALLOWED = re.compile(
    r"(std|__gnu_cxx)::.*|kit::DeviceBuffer<.*|DW\.ref\.__gxx_personality_v0"
    r"|(u?(char|short|int|long|longlong)|float|double)[1-4]::.*|dim3::.*"
)
NVCC_INIT = "__sti____cudaRegisterAll"

UNDEFINED_RULE = (
    "a lab's code may use only the CUDA runtime calls of the labs, the C++ standard library "
    "(no files, streams, processes, threads or clocks), the C math, string and memory functions, "
    "and the kit's checks (kit::check_cuda, kit::require_*, kit::DeviceBuffer)"
)


def inspect_objects(tools: ObjectTools, namespace: str, objects: dict[str, Path]) -> list[str]:
    """Every rule an object breaks, as lines for the student naming file, symbol and rule."""
    problems = []
    for file_name, obj in objects.items():
        symbols = read_symbols(tools, obj)
        for symbol in symbols:
            problem = _symbol_problem(symbol, namespace)
            if problem:
                problems.append(f"{file_name}: {problem}")
        problems += [f"{file_name}: {problem}" for problem in _startup_problems(tools, obj, symbols)]
    return problems


def _symbol_problem(symbol: Symbol, namespace: str) -> str | None:
    if symbol.kind == "U":
        return None if allowed_use(symbol) else f"uses {symbol.name}, which {UNDEFINED_RULE}"
    if symbol.kind.islower() or symbol.kind in "NA":
        return None  # local to the object, or debugging information: it replaces nothing
    if _scope(symbol.name) == namespace:
        return None
    if symbol.name.startswith(f"__device_stub__ZN{len(namespace)}{namespace}"):
        return None  # nvcc's host-side stub of one of the lab's kernels
    if symbol.kind in "WV" and WEAK_ALLOWED.fullmatch(_qualified_name(symbol.name)):
        return None
    return (
        f"defines {symbol.name} outside namespace {namespace}: a lab's code may define only its "
        f"own functions and kernels, inside namespace {namespace}, and may not replace the kit's "
        "or a library's"
    )


def allowed_use(symbol: Symbol) -> bool:
    raw, name = symbol.raw, symbol.name
    if raw in CUDA_RUNTIME or raw in C_RUNTIME or raw in C_LIBRARY:
        return True
    if NVCC_GENERATED.fullmatch(raw) or MATH.fullmatch(raw):
        return True
    if CXX_RUNTIME.fullmatch(name) or KIT_API.fullmatch(name):
        return True
    if name.startswith(("std::", "typeinfo for std::", "vtable for std::", "typeinfo name for std::")):
        return not STD_FORBIDDEN.search(name)
    return name.startswith(("vtable for __cxxabiv1::", "typeinfo for __cxxabiv1::"))


def _startup_problems(tools: ObjectTools, obj: Path, symbols: list[Symbol]) -> list[str]:
    """What runs before main or after it: only nvcc's registration of the kernels may."""
    nvcc_init = {
        int(s.value, 16) for s in symbols if s.name == f"{NVCC_INIT}()" and s.kind in "tT" and s.value
    }
    problems = []
    for section, target, offset in _startup_entries(tools, obj):
        if section == ".init_array" and (
            target == NVCC_INIT or (target.startswith(".text") and offset in nvcc_init)
        ):
            continue
        when = "before" if section in (".init_array", ".ctors") else "after"
        shown = f"{target} + {offset:#x}" if target.startswith(".") else target
        problems.append(
            f"has code that runs {when} main ({section}: {shown}): a global object with a "
            "constructor or destructor, or __attribute__((constructor)), is not allowed; create "
            "objects inside your functions"
        )
    return problems


def read_symbols(tools: ObjectTools, obj: Path) -> list[Symbol]:
    raw_lines = _run([tools.nm, "-P", "-p", str(obj)])
    plain_lines = _run([tools.nm, "-P", "-p", "-C", str(obj)])
    if len(raw_lines) != len(plain_lines):
        raise GraderError(f"kit problem: nm listed {obj.name} differently with and without -C")
    symbols = []
    for raw_line, plain_line in zip(raw_lines, plain_lines, strict=True):
        fields = raw_line.split()
        if len(fields) < 2:
            continue
        raw, kind = fields[0], fields[1]
        suffix = raw_line[len(raw) :]
        name = plain_line[: len(plain_line) - len(suffix)] if plain_line.endswith(suffix) else raw
        symbols.append(Symbol(raw, name, kind, fields[2] if len(fields) > 2 else ""))
    return symbols


def _startup_entries(tools: ObjectTools, obj: Path) -> list[tuple[str, str, int]]:
    """(section, target, offset) for each relocation in .init_array, .fini_array, .ctors and
    .dtors: the target is a symbol, or a section with the offset in it (".text", 0xc43)."""
    entries = []
    section = None
    for line in _run([tools.readelf, "-rW", str(obj)]):
        if line.startswith("Relocation section"):
            header = re.match(r"Relocation section '\.rela?(\.(init_array|fini_array|ctors|dtors))'", line)
            section = header.group(1) if header else None
            continue
        fields = line.split()
        if section is None or len(fields) < 5 or not re.fullmatch(r"[0-9a-f]{8,}", fields[0]):
            continue
        # Offset Info Type Value Name [+ Addend]
        offset = int(fields[6], 16) if len(fields) > 6 and fields[5] == "+" else 0
        entries.append((section, fields[4], offset))
    return entries


def _run(command: list[str]) -> list[str]:
    # In a process group of its own, as every process run_limited starts: a Ctrl-C reaches the
    # grader's group at once, and a tool killed by it before the grader had noted the stop failed
    # the submission under inspection with a "kit problem", whose report a resumed run then kept.
    # Stopping a run kills such groups itself (proc.kill_started_groups).
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=60, check=False, start_new_session=True
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        raise GraderError(f"kit problem: could not run {command[0]} to inspect objects: {error}") from None
    if done.returncode != 0:
        raise GraderError(
            f"kit problem: {' '.join(command)} failed ({done.returncode}): {done.stderr.strip()[:500]}"
        )
    return done.stdout.splitlines()


def _qualified_name(name: str) -> str:
    """The function's qualified name without its return type: the last space-separated token
    before the parameter list, outside template brackets."""
    depth = 0
    start = 0
    for index, char in enumerate(name):
        if char == "<":
            depth += 1
        elif char == ">":
            depth -= 1
        elif depth == 0 and char == " " and not name[index + 1 :].startswith(("const", "volatile")):
            start = index + 1
        elif depth == 0 and char == "(" and not name[:index].endswith("operator"):
            return name[start:]
    return name[start:]


def _scope(name: str) -> str:
    """The outermost namespace or class of a demangled name ("lab03" for
    "void lab03::tiled_matmul_kernel<16>(float const*, ...)")."""
    qualified = _qualified_name(name)
    return re.split(r"::|<|\(", qualified, maxsplit=1)[0]
