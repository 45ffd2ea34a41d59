#!/usr/bin/env python3
"""A stand-in for the linker: --spec FILE --target T INPUTS... -o OUT writes OUT, a copy of
fake_catch2.py, answering for T's tests of the spec, changed by the FAKE-OUTCOME lines of the
inputs (the objects, which fake_cc.py made copies of the sources)."""

import json
import os
import shutil
import sys
from pathlib import Path

HERE = Path(os.path.realpath(__file__)).parent
args = sys.argv[1:]
spec = json.loads(Path(args[args.index("--spec") + 1]).read_text())[args[args.index("--target") + 1]]
output = Path(args[args.index("-o") + 1])
skip = {args.index("--spec"), args.index("--spec") + 1, args.index("--target"), args.index("--target") + 1}
skip |= {args.index("-o"), args.index("-o") + 1}
inputs = [Path(arg) for index, arg in enumerate(args) if index not in skip]
tests = [dict(test) for test in spec["tests"]]
for path in inputs:
    for line in path.read_text().splitlines():
        if "FAKE-LINK-ERROR" in line:
            print(f"/usr/bin/ld: {path.name}: undefined reference to `demo_kernel'")
            sys.exit(1)
        if "FAKE-OUTCOME:" in line:
            behaviour, _, name = line.split("FAKE-OUTCOME:", 1)[1].partition("|")
            for test in tests:
                if test["name"] == name.strip():
                    test["behaviour"] = behaviour.strip().replace("\\n", "\n")
output.parent.mkdir(parents=True, exist_ok=True)
shutil.copy(HERE / "fake_catch2.py", output)
output.chmod(0o755)
Path(f"{output}.json").write_text(json.dumps({"tests": tests}))
