#!/usr/bin/env python3
"""Summarises a CTest JUnit file: how many tests passed, failed and were skipped, and why
the GPU tests were skipped, so a run on a machine without a GPU says so plainly."""

from __future__ import annotations

import re
import sys
import xml.etree.ElementTree as ET
from collections import Counter


def main(path: str) -> int:
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as error:
        print(f"ctest summary: cannot read {path}: {error}", file=sys.stderr)
        return 1
    counts: Counter[str] = Counter()
    reasons: Counter[str] = Counter()
    for case in root.iter("testcase"):
        status = case.get("status", "")
        if case.find("skipped") is not None or status == "notrun":
            counts["skipped"] += 1
            text = case.findtext("system-out") or ""
            # Catch2's console reporter wraps long messages; the reason ends at a blank line.
            match = re.search(r"no usable GPU: (.+?)(?:\n\s*\n|$)", text, re.S)
            reason = " ".join(match.group(1).split()) if match else "skipped"
            reasons[reason] += 1
        elif case.find("failure") is not None or status == "fail":
            counts["failed"] += 1
        else:
            counts["passed"] += 1
    print(f"Catch2: {counts['passed']} passed, {counts['failed']} failed, {counts['skipped']} skipped")
    for reason, n in reasons.most_common():
        print(f"  {n} GPU test(s) skipped, not passed: no usable GPU: {reason}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
