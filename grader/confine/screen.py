"""The source screen: refuses student code that could reach outside its own process.

Student code runs in a worker of its own, confined by the sandbox (docs/design/engine.md, "Judge
and worker", and docs/design/confinement.md, "Confinement"); this screen is the first of the
layers in front of it: includes of the C++ standard library and the CUDA toolkit only (less files,
streams, threads, clocks and libraries that would do the lab's work), and no process, file, signal
or inline-assembly API.
It is deliberately conservative: a plain word match on the source with comments removed (words
inside string literals count too), so a refused student renames a variable rather than an
attacker slipping a call through.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# What a submission may include besides its lab's header and the kit's: the C++ standard
# library (and C's, in both spellings) and the CUDA toolkit's headers for device code. Since the
# judge/worker split the student's code runs in a sandboxed worker of its own, so a header no
# longer needs to be harmless to share a process with the tests; the word screen and the object
# inspection still refuse the calls (files, processes, environment, threads, clocks).
CXX_HEADERS = frozenset(
    """algorithm any array atomic bit bitset cassert ccomplex cctype cerrno cfenv cfloat charconv
    cinttypes ciso646 climits cmath compare complex concepts cstdalign cstdarg cstdbool cstddef
    cstdint cstdio cstdlib cstring ctgmath cuchar cwchar cwctype deque exception expected
    flat_map flat_set format forward_list functional initializer_list iterator limits list map
    mdspan memory memory_resource new numbers numeric optional queue random ranges ratio
    scoped_allocator set source_location span stack stdexcept string string_view system_error
    tuple type_traits typeindex typeinfo unordered_map unordered_set utility valarray variant
    vector version""".split()
)
C_HEADERS = frozenset(
    """assert.h complex.h ctype.h errno.h fenv.h float.h inttypes.h iso646.h limits.h math.h
    stdalign.h stdarg.h stdbool.h stddef.h stdint.h stdio.h stdlib.h string.h tgmath.h uchar.h
    wchar.h wctype.h""".split()
)
CUDA_HEADERS = frozenset(
    """cuda_runtime.h cuda_runtime_api.h cuda.h device_launch_parameters.h builtin_types.h
    vector_types.h vector_functions.h device_types.h driver_types.h channel_descriptor.h
    cuda_device_runtime_api.h device_functions.h device_atomic_functions.h math_constants.h
    math_functions.h cuda_fp16.h cuda_bf16.h cuda_fp8.h cuComplex.h cooperative_groups.h
    cuda_pipeline.h cuda_awbarrier.h cuda_occupancy.h sm_20_atomic_functions.h
    sm_32_intrinsics.h sm_60_atomic_functions.h sm_61_intrinsics.h""".split()
)
# Header families of the CUDA toolkit, by prefix: libcu++ and cooperative groups' parts.
CUDA_HEADER_PREFIXES = ("cuda/", "cooperative_groups/")
# Standard headers still refused, with what to write instead (docs/students.md lists them).
REFUSED_HEADERS: dict[str, str] = {
    **dict.fromkeys(
        ["iostream", "istream", "ostream", "sstream", "iomanip", "ios", "iosfwd", "streambuf",
         "syncstream", "spanstream", "strstream", "print", "locale", "clocale", "codecvt"],
        "streams and locales are not available to lab code; print with printf from <cstdio>",
    ),
    **dict.fromkeys(
        ["fstream", "filesystem", "fcntl.h", "unistd.h", "dirent.h", "sys/stat.h"],
        "lab code may not open, read or write files",
    ),
    **dict.fromkeys(
        ["thread", "future", "mutex", "shared_mutex", "condition_variable", "stop_token",
         "semaphore", "latch", "barrier", "execution", "pthread.h"],
        "lab code runs on one host thread; the parallel work is the kernel's",
    ),
    **dict.fromkeys(
        ["chrono", "ctime", "time.h"],
        "the kit times your kernel; a clock in lab code changes nothing the grader measures",
    ),
    **dict.fromkeys(
        ["csignal", "signal.h", "csetjmp", "setjmp.h"],
        "lab code may not handle signals or jump out of calls",
    ),
}  # fmt: skip
# CUDA libraries that would do the lab's work for it.
REFUSED_HEADER_PREFIXES: dict[str, str] = {
    prefix: "the lab asks for your own kernel, not a library's"
    for prefix in (
        "cublas", "cusparse", "cufft", "curand", "cusolver", "cudnn", "cutlass", "thrust/", "cub/",
        "nvrtc", "npp",
    )
}  # fmt: skip

KIT_HEADER = re.compile(r"kit/[A-Za-z0-9_]+\.hpp")

# (pattern, what it is, why it is refused). Patterns run on the source with comments blanked.
FORBIDDEN: tuple[tuple[str, str, str], ...] = (
    (
        r"\b(?:exit|_exit|_Exit|abort|quick_exit|atexit|at_quick_exit|terminate)\b",
        "process exit",
        "it would end the test process, which the grader must see finish",
    ),
    (
        r"\b(?:system|popen|fork|vfork|posix_spawn\w*|execl|execlp|execle|execv|execvp|execvpe|execve"
        r"|execveat|fexecve|syscall|setsid|setpgid|setpgrp|daemon|prctl|ptrace)\b",
        "process API",
        "a submission may not start or detach processes",
    ),
    (
        r"\b(?:fopen|freopen|fdopen|tmpfile|tmpnam|fstream|ofstream|ifstream|filesystem|FILE|mmap"
        r"|dlopen|dlsym)\b",
        "file API",
        "a submission may not open files or libraries",
    ),
    (
        r"(?<![.>\w])(?:open|openat|creat|unlink|unlinkat|remove|rename|truncate|chmod|mkdir|rmdir)\s*\(",
        "file API call",
        "a submission may not create, open or delete files",
    ),
    (
        r"\b(?:getenv|setenv|putenv|unsetenv|environ)\b",
        "environment access",
        "a submission may not read or change the environment",
    ),
    (
        r"\b(?:signal|sigaction|raise|kill|killpg)\b",
        "signal API",
        "a submission may not send or catch signals",
    ),
    (
        r"\bstd\s*::\s*(?:thread|jthread|async)\b|\bpthread_\w+",
        "thread API",
        "a submission may not start host threads",
    ),
    (r"\b(?:asm|__asm|__asm__)\b", "inline assembly", "a submission may not contain inline assembly"),
    (
        r"\b(?:__attribute__|__declspec)\b|\[\[\s*(?:gnu|clang)\s*::",
        "compiler attribute",
        "attributes such as constructor, section or weakref run or rename code behind the grader's back",
    ),
    (
        r"(?m)^[ \t]*#[ \t]*pragma\b(?![ \t]+unroll\b)|\b_Pragma\b",
        "#pragma",
        "only `#pragma unroll` is allowed in a submission",
    ),
    (r"##", "token pasting", "`##` can assemble forbidden names the screen cannot see"),
    (r"%:", "digraph", "`%:` is another spelling of `#`; write `#`"),
    (
        r"(?m)^[ \t]*#[ \t]*(?:include_next|import|embed)\b",
        "include directive",
        "use #include with an allowed header",
    ),
    (
        r"(?<![\w\"'])(?:u8|u|U|L)?R\"",
        "raw string literal",
        "raw strings hide code from the screen; use a plain string",
    ),
)


@dataclass(frozen=True)
class ScreenProblem:
    line: int
    token: str
    message: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.message}"


def screen_source(text: str, lab_headers: set[str]) -> list[ScreenProblem]:
    """Every problem found in one source file, in line order; empty when the file may be built."""
    spliced, line_of = _splice_lines(text.replace("\r\n", "\n"))
    code, lexer_problem = _blank_comments(spliced)
    problems = (
        [] if lexer_problem is None else [ScreenProblem(line_of[lexer_problem[0]], "", lexer_problem[1])]
    )
    problems += _check_includes(code, line_of, lab_headers)
    for pattern, what, why in FORBIDDEN:
        for match in re.finditer(pattern, code):
            token = match.group(0).strip()
            message = f"`{token}` ({what}) is not allowed: {why}; remove it and submit again"
            problems.append(ScreenProblem(line_of[match.start()], token, message))
    return sorted(problems, key=lambda problem: problem.line)


def _splice_lines(text: str) -> tuple[str, list[int]]:
    """Joins backslash-newline continuations as the compiler does, before comments are found.

    Returns the spliced text and, for each of its characters, the 1-based original line.
    """
    chars: list[str] = []
    line_of: list[int] = []
    line = 1
    index = 0
    while index < len(text):
        char = text[index]
        if char == "\\" and text.startswith("\n", index + 1):
            index += 2
            line += 1
            continue
        chars.append(char)
        line_of.append(line)
        if char == "\n":
            line += 1
        index += 1
    line_of.append(line)  # so that a match at the very end still has a line
    return "".join(chars), line_of


NUMBER_BEFORE_QUOTE = re.compile(r"(?<![A-Za-z_])\.?[0-9][0-9A-Za-z_'.]*$")


def _blank_comments(text: str) -> tuple[str, tuple[int, str] | None]:
    """Replaces comments by spaces (keeping newlines and offsets); string contents stay.

    Strings and character literals are followed only so that `//` or `/*` inside them is not
    taken for a comment. A literal that does not end on its line means the lexer lost track,
    which an attacker could exploit, so it is reported as a problem.
    """
    out = list(text)
    index = 0
    length = len(text)
    while index < length:
        char = text[index]
        if text.startswith("//", index):
            end = text.find("\n", index)
            end = length if end < 0 else end
            out[index:end] = " " * (end - index)
            index = end
        elif text.startswith("/*", index):
            end = text.find("*/", index + 2)
            end = length if end < 0 else end + 2
            out[index:end] = [c if c == "\n" else " " for c in text[index:end]]
            index = end
        elif char == '"' or (char == "'" and not NUMBER_BEFORE_QUOTE.search(text, max(0, index - 64), index)):
            closing = _literal_end(text, index, char)
            if closing is None:
                return "".join(out), (
                    index,
                    "a string or character literal does not end on its line; "
                    "close it on the same line and submit again",
                )
            index = closing
        else:
            index += 1
    return "".join(out), None


def _literal_end(text: str, start: int, quote: str) -> int | None:
    index = start + 1
    while index < len(text):
        char = text[index]
        if char == "\\":
            index += 2
        elif char == quote:
            return index + 1
        elif char == "\n":
            return None
        else:
            index += 1
    return None


INCLUDE = re.compile(r"(?m)^[ \t]*#[ \t]*include\b[ \t]*(.*?)[ \t]*$")


def _check_includes(code: str, line_of: list[int], lab_headers: set[str]) -> list[ScreenProblem]:
    problems = []
    for match in INCLUDE.finditer(code):
        target = match.group(1)
        line = line_of[match.start()]
        if _include_allowed(target, lab_headers):
            continue
        problems.append(ScreenProblem(line, target, _include_refusal(target, lab_headers)))
    return problems


def _include_refusal(target: str, lab_headers: set[str]) -> str:
    """Why `#include target` is refused, and what to include instead."""
    name = target[1:-1] if len(target) > 2 and target[0] in '<"' else ""
    reason = REFUSED_HEADERS.get(name) or next(
        (why for prefix, why in REFUSED_HEADER_PREFIXES.items() if name.startswith(prefix)), None
    )
    if reason is None and name in lab_headers | CXX_HEADERS | C_HEADERS | CUDA_HEADERS:
        reason = f"write #include <{name}>" if target.startswith('"') else f'write #include "{name}"'
    labs = ", ".join(f'"{header}"' for header in sorted(lab_headers))
    allowed = (
        f"a submission may include its lab's header ({labs}), the kit's \"kit/*.hpp\", the C++ and C "
        "standard headers and the CUDA toolkit's headers for device code (docs/students.md, "
        '"What your code may include")'
    )
    if reason is None:
        reason = "not a header of the C++ standard library or the CUDA toolkit that lab code may use"
    return f"#include {target} is not allowed: {reason}; {allowed}"


def _include_allowed(target: str, lab_headers: set[str]) -> bool:
    if target.startswith("<") and target.endswith(">"):
        name = target[1:-1]
        return (
            name in CXX_HEADERS
            or name in C_HEADERS
            or name in CUDA_HEADERS
            or (name.startswith(CUDA_HEADER_PREFIXES) and _plain_path(name))
        )
    if target.startswith('"') and target.endswith('"') and len(target) > 2:
        name = target[1:-1]
        return name in lab_headers or KIT_HEADER.fullmatch(name) is not None or name in CUDA_HEADERS
    return False  # a macro or anything else the screen cannot follow


def _plain_path(name: str) -> bool:
    """A header path inside its family: words and slashes, no "..", no absolute path."""
    return re.fullmatch(r"[A-Za-z0-9_]+(/[A-Za-z0-9_.]+)*", name) is not None and ".." not in name
