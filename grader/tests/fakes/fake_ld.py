#!/usr/bin/env python3
"""A stand-in for the linker: --spec FILE --target T INPUTS... -o OUT writes OUT, a copy of
fake_catch2.py started as this script is, answering for T's tests of the spec (OUT.spec),
changed by the FAKE-OUTCOME lines of the inputs (the objects, which fake_cc.py made copies of
the sources)."""

import json
import marshal
import os
import sys

# os and open only (no pathlib or shutil): the fakes start hundreds of times a test run.
HERE = os.path.dirname(os.path.realpath(__file__))
args = sys.argv[1:]


def read(path: str) -> str:
    with open(path) as handle:
        return handle.read()


spec = json.loads(read(args[args.index("--spec") + 1]))[args[args.index("--target") + 1]]
output = args[args.index("-o") + 1]
skip = {args.index("--spec"), args.index("--spec") + 1, args.index("--target"), args.index("--target") + 1}
skip |= {args.index("-o"), args.index("-o") + 1}
inputs = [arg for index, arg in enumerate(args) if index not in skip]
tests = [dict(test) for test in spec["tests"]]
for path in inputs:
    for line in read(path).splitlines():
        if "FAKE-LINK-ERROR" in line:
            print(f"/usr/bin/ld: {os.path.basename(path)}: undefined reference to `demo_kernel'")
            sys.exit(1)
        if "FAKE-OUTCOME:" in line:
            behaviour, _, name = line.split("FAKE-OUTCOME:", 1)[1].partition("|")
            for test in tests:
                if test["name"] == name.strip():
                    test["behaviour"] = behaviour.strip().replace("\\n", "\n")
os.makedirs(os.path.dirname(output) or ".", exist_ok=True)
interpreter = read(os.path.realpath(__file__)).partition("\n")[0]  # conftest's copy_fake set it
with open(output, "w") as made:
    made.write(interpreter + "\n" + read(os.path.join(HERE, "fake_catch2.py")).partition("\n")[2])
os.chmod(output, 0o755)
with open(f"{output}.spec", "wb") as spec_file:
    marshal.dump({"tests": tests}, spec_file, 4)
