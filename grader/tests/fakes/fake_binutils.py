#!/usr/bin/env python3
"""A stand-in for nm -P and readelf -rW on fake_cc.py's objects (copies of the sources): each
"FAKE-SYMBOL <kind> <name>" line of the object is a symbol; no object runs code before main."""

import sys

args = sys.argv[1:]
if "-rW" in args:
    sys.exit(0)  # readelf: no relocation section to show
with open(args[-1], errors="replace") as handle:
    for line in handle:
        if "FAKE-SYMBOL" in line:
            kind, name = line.split("FAKE-SYMBOL", 1)[1].split(None, 1)
            print(f"{name.strip()} {kind}")
