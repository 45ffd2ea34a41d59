"""Text from a submission (its names, its compiler and test output) made safe to show: in a
report, in the class summary, on the instructor's terminal.

A name may hold a newline (to forge a "Score: 100/100" line), a terminal escape sequence (to
clear the screen of whoever runs `cat summary.txt`), a bidirectional override, or bytes that
are not UTF-8 (which Python keeps as lone surrogates, and which no UTF-8 file can hold). Each
such character is shown as an escape instead: \\n, \\x1b, \\u202e, and \\xff for a raw byte.
"""

from __future__ import annotations

SHOWN_NAME_CHARS = 120  # a name longer than this is cut (its full length is said)


def escaped(text: str, newlines: bool = False) -> str:
    """`text` with every character that is not printable shown as an escape; with `newlines`,
    line breaks and tabs are kept (compiler output, test messages), every other line separator
    (\\r, \\x0b, \\u2028, ...) is still escaped, so no line can be rewritten or forged by one."""
    if text.isprintable():
        return text
    return "".join(
        char if char.isprintable() or (newlines and char in "\n\t") else _escape_char(char) for char in text
    )


def escaped_name(name: str) -> str:
    """A name from a submission as reports show it: escaped, and cut when very long."""
    shown = escaped(name)
    if len(shown) <= SHOWN_NAME_CHARS:
        return shown
    return f"{shown[: SHOWN_NAME_CHARS - 30]}...[{len(name)} characters in all]"


def _escape_char(char: str) -> str:
    code = ord(char)
    if 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8, kept by surrogateescape
        return f"\\x{code - 0xDC00:02x}"
    if code < 0x100:
        return {"\n": "\\n", "\r": "\\r", "\t": "\\t"}.get(char, f"\\x{code:02x}")
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"
