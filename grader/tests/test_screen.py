"""screen.py: what a student file may include and call."""

import pytest

from grader.confine.screen import screen_source

HEADERS = {"naive_matmul.h"}

CLEAN = """\
// Lab 02: a comment may say exit, system("rm") or fopen: comments are not code.
/* and so may a block comment: abort() */
#include <cuda_runtime.h>
#include <cstdio>
#include "kit/cuda_check.hpp"
#include "naive_matmul.h"

__global__ void k(float* P, int width) {
  const char* url = "http://example.com"; // the // inside the string is not a comment
  int big = 1'000'000;                     // digit separators are not character literals
  char quote = '"';
  #pragma unroll 4
  for (int i = 0; i < width; ++i) P[i] = 0.0f;
  if (width > big) printf("%d '%c' %s\\n", width, quote, url);
}
"""


def tokens(source: str) -> list[tuple[int, str]]:
    return [(problem.line, problem.token) for problem in screen_source(source, HEADERS)]


def test_the_reference_style_of_code_passes():
    assert screen_source(CLEAN, HEADERS) == []


@pytest.mark.parametrize(
    "line, token",
    [
        ("exit(1);", "exit"),
        ("std::abort();", "abort"),
        ("_exit(0);", "_exit"),
        ("quick_exit(0);", "quick_exit"),
        ('system("ls");', "system"),
        ('popen("ls", "r");', "popen"),
        ("fork();", "fork"),
        ('execvp("sh", args);', "execvp"),
        ('FILE* f = fopen("x", "w");', "FILE"),
        ('freopen("x", "w", stdout);', "freopen"),
        ("std::ofstream out;", "ofstream"),
        ('int fd = open("result.xml", 1);', "open("),
        ('unlink("result.xml");', "unlink("),
        ('std::remove("result.xml");', "remove("),
        ('rename("a", "b");', "rename("),
        ('const char* h = getenv("HOME");', "getenv"),
        ('setenv("A", "b", 1);', "setenv"),
        ('dlopen("libc.so", 0);', "dlopen"),
        ('asm("nop");', "asm"),
        ('__asm__ volatile("nop");', "__asm__"),
        ("__attribute__((constructor)) void early() {}", "__attribute__"),
        ("[[gnu::destructor]] void late() {}", "[[gnu::"),
        ('#pragma GCC optimize("O0")', "#pragma"),
        ("signal(11, handler);", "signal"),
        ("raise(9);", "raise"),
        ("kill(0, 9);", "kill"),
        ("std::thread worker(f);", "std::thread"),
        ("#define CAT(a, b) a##b", "##"),
        ('const char* s = R"(text)";', 'R"'),
    ],
)
def test_refuses_process_file_and_escape_apis(line, token):
    problems = screen_source(f'#include "naive_matmul.h"\nvoid f() {{\n  {line}\n}}\n', HEADERS)
    assert problems, f"{line!r} should be refused"
    assert (3, token) in [(p.line, p.token) for p in problems]
    assert "remove it and submit again" in problems[0].message or "#pragma" in problems[0].message


def test_a_method_named_like_a_file_call_is_allowed():
    assert screen_source("void f(Obj& o, Obj* p) { o.open(1); p->remove(2); }\n", HEADERS) == []


@pytest.mark.parametrize(
    "include",
    [
        "#include <iostream>",
        "#include <fstream>",
        "#include <thread>",
        "#include <cublas_v2.h>",
        "#include <cuda/../../../etc/passwd>",
        '#include "../../solutions/02_naive_matmul/naive_matmul.cu"',
        '#include "kit/../../etc/passwd"',
        "#include HEADER_MACRO",
        '#include "other_lab.h"',
        "#include_next <cstdio>",
    ],
)
def test_refuses_includes_outside_the_allow_list(include):
    problems = screen_source(f"// first\n{include}\n", HEADERS)
    assert problems and problems[0].line == 2
    assert any("#include" in p.message or "include directive" in p.message for p in problems)


def test_a_refused_include_says_why_what_to_write_and_what_is_allowed():
    message = screen_source("#include <iostream>\n", HEADERS)[0].message
    assert "print with printf from <cstdio>" in message
    assert '"naive_matmul.h"' in message and "kit/*.hpp" in message and "docs/students.md" in message
    quoted = screen_source('#include "cstdio"\n', HEADERS)[0].message
    assert "write #include <cstdio>" in quoted


@pytest.mark.parametrize(
    "include",
    [
        '#include "device_launch_parameters.h"',  # the first line of Visual Studio's CUDA template
        "#include <device_launch_parameters.h>",
        "#include <cassert>",
        "#include <array>",
        "#include <cstdint>",
        "#include <cstdlib>",
        "#include <math.h>",
        "#include <cooperative_groups.h>",
        "#include <cooperative_groups/reduce.h>",
        "#include <cuda/std/array>",
        "#include <cuda_fp16.h>",
    ],
)
def test_the_headers_correct_students_write_are_accepted(include):
    assert screen_source(f"{include}\n", HEADERS) == []


def test_an_allowed_header_does_not_let_a_refused_call_through():
    problems = screen_source("#include <cstdlib>\nvoid f() { exit(1); }\n", HEADERS)
    assert [p.token for p in problems] == ["exit"]


def test_a_string_cannot_hide_code_behind_a_fake_comment():
    # A naive comment stripper would remove everything after the "/*" in the string.
    source = 'void f() { const char* s = "/*"; exit(1); const char* t = "*/"; }\n'
    assert (1, "exit") in tokens(source)


def test_a_character_literal_quote_cannot_desynchronise_the_lexer():
    source = 'void f() { char c = \'"\'; const char* s = "/*"; exit(1); // */\n}\n'
    assert (1, "exit") in tokens(source)


def test_a_digit_separator_cannot_desynchronise_the_lexer():
    source = "void f() { int a = 1'0; char c = '\"'; const char* s = \"/*\"; exit(0); //*/\n}\n"
    assert (1, "exit") in tokens(source)


def test_a_backslash_newline_cannot_split_a_name_or_hide_a_line():
    assert (2, "exit") in tokens("void f() {\n  ex\\\nit(1);\n}\n")
    # A line comment ending in a backslash swallows the next line, as in the compiler:
    assert screen_source("// comment \\\nexit(1);\n", HEADERS) == []


def test_an_unterminated_literal_is_refused_rather_than_guessed():
    problems = screen_source('void f() { const char* s = "open;\n}\n', HEADERS)
    assert problems and "does not end on its line" in problems[0].message


def test_crlf_line_endings_do_not_break_includes():
    assert screen_source('#include "naive_matmul.h"\r\n#include <cstdio>\r\n', HEADERS) == []


def test_problems_come_in_line_order_with_line_numbers():
    source = "#include <cstdio>\nvoid f() {\n\n  abort();\n  exit(1);\n}\n"
    assert tokens(source) == [(4, "abort"), (5, "exit")]
