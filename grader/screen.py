"""The source screen: refuses student code that could reach outside its own test process.

Student code runs inside the test executable, so it could write a fake result file, kill the
grader or read other submissions. There is no sandbox on the GPU machines, so this screen is
the barrier (docs/architecture.md): includes from an allow-list only, and no process, file,
signal or inline-assembly API. It is deliberately conservative: a plain word match on the
source with comments removed (words inside string literals count too), so a refused student
renames a variable rather than an attacker slipping a call through.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

ALLOWED_SYSTEM_HEADERS = frozenset(
    {
        "cuda_runtime.h",
        "cuda.h",
        "cstdio",
        "cstddef",
        "cstdint",
        "cmath",
        "algorithm",
        "stdexcept",
        "string",
        "vector",
        "utility",
        "limits",
        "cfloat",
        "climits",
    }
)
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
        allowed = sorted(f'"{name}"' for name in lab_headers) + ['"kit/*.hpp"']
        allowed += sorted(f"<{name}>" for name in ALLOWED_SYSTEM_HEADERS)
        problems.append(
            ScreenProblem(
                line,
                target,
                f"#include {target} is not allowed; a submission may include only " + ", ".join(allowed),
            )
        )
    return problems


def _include_allowed(target: str, lab_headers: set[str]) -> bool:
    if target.startswith("<") and target.endswith(">"):
        return target[1:-1] in ALLOWED_SYSTEM_HEADERS
    if target.startswith('"') and target.endswith('"') and len(target) > 2:
        name = target[1:-1]
        return name in lab_headers or KIT_HEADER.fullmatch(name) is not None
    return False  # a macro or anything else the screen cannot follow
