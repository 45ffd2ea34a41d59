#!/usr/bin/env python3
"""A stand-in for a Catch2 v3 test executable, answering as the real one does (XML reporter).

Its tests come from <this file>.spec, a marshal of {"tests": [{"name", "tags", "behaviour"}]}
(conftest.write_spec). Behaviours:
pass, fail:<text>, expr, skip:<reason>, metric:<name>=<value>, crash, hang, noxml, garbled,
wrongname, spam, env, datalimit (fails naming its RLIMIT_DATA), reads:<variable> (passes when
the file that the environment variable names exists), record:<file> (appends "<start> <end> <CUDA_VISIBLE_DEVICES> <name>" to the file
after sleeping 0.3 s, then passes), window:<file> (works 0.1 s, asks its GPU gate for
a window as kit::ExclusiveGpu does, holds it 0.2 s, works 0.1 s more; appends its two working
spans as "<name>" lines and the window as a "<name> (window)" line, then passes),
profile:<file> (as window, but asks for the profiler turn, 'P'; its middle span is a
"<name> (profiler)" line),
window-then-die (asks for a window, and exits once it has it, without giving it back),
oom-once:<file> (fails with CUDA's out-of-memory error unless the file exists, which it then
creates, and appends "<KIT_GPU_GATE or -> <name>" to it on every run, then passes),
sleep:<seconds>[:<file>] (sleeps, then passes; with a file, then appends as pid does),
meet:<mine>:<theirs> (creates <mine>, then passes only if <theirs> appears within 5 s), badexit (a passing report, then exit code 3), where (fails naming its folder and its own path, as
a sanitizer's command line does), pid:<file> (appends "<its process id> <name>", then passes),
lane (sleeps 0.3 s, then fails with "<CUDA_VISIBLE_DEVICES> <KIT_GPU_BUS_ID>", "-" for either unset),
starts:<kind>,... (appends "<kind>\t<name>" for each to the file KIT_PROCESS_LOG names, as the
kit's judge logs the processes starting CUDA it starts, then passes).

With --input-file, it runs the tests the file names, one a line, in that order, in this one
process, and writes one report holding each test's result (as Catch2 does), each as it ends;
before each, it asks its GPU gate, where it has one, to go on ('C').
"""

import marshal
import os
import sys
import time

# The fakes start hundreds of times a test run: each import they do not need is paid each time
# (xml.sax.saxutils alone brings urllib and email, tens of milliseconds; json and signal, 11 ms
# a start between them, hence a marshal spec and signal imported only to crash; subprocess is
# imported only where a behaviour starts a child).


def escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def quoteattr(text: str) -> str:
    quoted = escape(text).replace('"', "&quot;")
    return '"' + quoted.replace("\n", "&#10;").replace("\r", "&#13;").replace("\t", "&#9;") + '"'


with open(os.path.realpath(sys.argv[0]) + ".spec", "rb") as spec_file:
    SPEC = marshal.load(spec_file)
TESTS = {test["name"]: test for test in SPEC["tests"]}


def listing():
    print('<?xml version="1.0" encoding="UTF-8"?>\n<MatchingTests>')
    for test in SPEC["tests"]:
        print(
            f"  <TestCase>\n    <Name>{escape(test['name'])}</Name>\n    <ClassName/>\n"
            f"    <Tags>{escape(test['tags'])}</Tags>\n  </TestCase>"
        )
    print("</MatchingTests>")


def document(name, body, success, skips=0):
    return (
        f'<?xml version="1.0" encoding="UTF-8"?>\n<Catch2TestRun name="fake" catch2-version="3.7.1">\n'
        f'  <TestCase name={quoteattr(name)} tags="[lab02]" filename="t.cpp" line="1">\n{body}'
        f'    <OverallResult success="{str(success).lower()}" skips="{skips}"/>\n  </TestCase>\n'
        f'  <OverallResults successes="0" failures="0" expectedFailures="0" skips="{skips}"/>\n'
        f"</Catch2TestRun>\n"
    )


def element(tag, text):
    return f'    <{tag} filename="t.cpp" line="7">\n      {escape(text)}\n    </{tag}>\n'


def run(name, out):
    behaviour = TESTS[name]["behaviour"]
    kind, _, arg = behaviour.partition(":")

    def write(text):
        with open(out, "w") as handle:
            handle.write(text)

    if kind == "pass":
        write(document(name, "", True))
        return 0
    if kind == "starts":
        with open(os.environ["KIT_PROCESS_LOG"], "a") as log:
            log.write("".join(f"{started}\t{name}\n" for started in arg.split(",")))
        write(document(name, "", True))
        return 0
    if kind == "fail":
        write(
            document(
                name,
                element("Info", "width := 17")
                + element("Failure", arg)
                + element("Info", "width := 17")
                + element("Failure", arg),
                False,
            )
        )
        return 42
    if kind == "expr":
        body = (
            '    <Expression success="false" type="REQUIRE" filename="t.cpp" line="9">\n'
            "      <Original>\n        got == expected\n      </Original>\n"
            "      <Expanded>\n        3 == 4\n      </Expanded>\n    </Expression>\n"
        )
        write(document(name, body, False))
        return 42
    if kind == "skip":
        write(document(name, element("Skip", arg), True, skips=1))
        return 4
    if kind == "metric":
        write(document(name, element("Warning", f"kit-metric {arg}"), True))
        return 0
    if kind == "crash":
        open(out, "w").write(
            document(name, element("FatalErrorCondition", "SIGSEGV - Segmentation violation signal"), False)
        )
        import signal

        os.kill(os.getpid(), signal.SIGSEGV)
    if kind == "hang":
        import subprocess

        child = subprocess.Popen(["sleep", "60"])
        open(arg, "w").write(str(child.pid)) if arg else None
        time.sleep(60)
    if kind == "noxml":
        return 0
    if kind == "garbled":
        write('<?xml version="1.0"?>\n<Catch2TestRun><TestCase name="x"')
        return 0
    if kind == "forges":
        # The old way to forge a pass: a report in the test's folder, and no word on the channel.
        with open("result.xml", "w") as handle:
            handle.write(document(name, "", True))
        return 0
    if kind == "daemon":
        # A grandchild in a session of its own keeps the report pipe open long after the test.
        if os.fork() == 0:
            os.setsid()
            time.sleep(30)
            os._exit(0)
        write(document(name, "", True))
        return 0
    if kind == "wrongname":
        write(document("some other test", "", True))
        return 0
    if kind == "spam":
        sys.stdout.write("x" * (1 << 20))
        write(document(name, "", True))
        return 0
    if kind == "record":
        start = time.time()
        time.sleep(0.3)
        with open(arg, "a") as handle:
            gpu = os.environ.get("CUDA_VISIBLE_DEVICES", "-")
            handle.write(f"{start} {time.time()} {gpu} {name}\n")
        write(document(name, "", True))
        return 0
    if kind == "badexit":
        write(document(name, "", True))
        return 3
    if kind == "where":
        text = f"cannot read {os.getcwd()}/answers.toml; ran {os.path.realpath(sys.argv[0])}"
        write(document(name, element("Failure", text), False))
        return 42
    if kind == "pid":
        with open(arg, "a") as handle:
            handle.write(f"{os.getpid()} {name}\n")
        write(document(name, "", True))
        return 0
    if kind == "meet":
        # meet:MINE:THEIRS: says it has started (a file MINE), then waits up to 5 s for THEIRS;
        # passes only if the other test started meanwhile, so only if the two ran at once.
        mine, _, theirs = arg.partition(":")
        open(mine, "w").close()
        deadline = time.monotonic() + 5
        while not os.path.exists(theirs) and time.monotonic() < deadline:
            time.sleep(0.02)
        met = os.path.exists(theirs)
        write(document(name, "" if met else element("Failure", f"{theirs} never appeared"), met))
        return 0 if met else 42
    if kind == "sleep":
        seconds, _, log = arg.partition(":")
        time.sleep(float(seconds))
        if log:
            with open(log, "a") as handle:
                handle.write(f"{os.getpid()} {name}\n")
        write(document(name, "", True))
        return 0
    if kind in ("window", "window-then-die", "profile"):
        request, grant = (int(fd) for fd in os.environ["KIT_GPU_GATE"].split(","))
        gpu = os.environ.get("CUDA_VISIBLE_DEVICES", "-")
        spans = []
        start = time.time()
        time.sleep(0.1)
        asked = time.time()
        os.write(request, b"P" if kind == "profile" else b"A")
        if os.read(grant, 1) != b"G":
            return 3
        granted = time.time()
        if kind == "window-then-die":
            os._exit(0)
        time.sleep(0.2)
        released = time.time()
        os.write(request, b"R")
        time.sleep(0.1)
        held = f"{name} (profiler)" if kind == "profile" else f"{name} (window)"
        spans = [(start, asked, name), (granted, released, held), (released, time.time(), name)]
        with open(arg, "a") as handle:
            handle.writelines(f"{s} {e} {gpu} {n}\n" for s, e, n in spans)
        write(document(name, "", True))
        return 0
    if kind == "oom-once":
        first = not os.path.exists(arg)
        with open(arg, "a") as handle:
            handle.write(f"{os.environ.get('KIT_GPU_GATE', '-')} {name}\n")
        if first:
            failure = element("Failure", "cudaMalloc failed: cudaErrorMemoryAllocation (out of memory)")
            write(document(name, failure, False))
            return 42
        write(document(name, "", True))
        return 0
    if kind == "reads":
        # Reads the data file the environment variable `arg` names, as an answers test does.
        if not os.path.isfile(os.environ.get(arg, "")):
            write(document(name, element("Failure", "cannot be read: the answers file is missing"), False))
            return 42
        write(document(name, "", True))
        return 0
    if kind == "lane":
        time.sleep(0.3)
        told = [os.environ.get(key, "-") for key in ("CUDA_VISIBLE_DEVICES", "KIT_GPU_BUS_ID")]
        write(document(name, element("Failure", " ".join(told)), False))
        return 42
    if kind == "env":
        write(document(name, element("Failure", " ".join(sorted(os.environ))), False))
        return 42
    if kind == "datalimit":
        import resource

        write(document(name, element("Failure", str(resource.getrlimit(resource.RLIMIT_DATA)[0])), False))
        return 42
    raise SystemExit(f"fake_catch2: unknown behaviour {behaviour}")


def group(names, out):
    """Each test in turn, in this process, as Catch2 runs an --input-file: before each, the kit's
    word on the GPU gate ('C', then a wait for 'G'; kit::between_test_cases), and each case's
    element written to the one report as the case ends."""
    failed, skipped, cases = 0, 0, 0
    gate = os.environ.get("KIT_GPU_GATE")
    with open(out, "w") as report:
        report.write(
            '<?xml version="1.0" encoding="UTF-8"?>\n<Catch2TestRun name="fake" catch2-version="3.7.1">\n'
        )
        report.flush()
        for name in names:
            if name not in TESTS:
                continue
            if gate:
                request, grant = (int(fd) for fd in gate.split(","))
                os.write(request, b"C")
                if os.read(grant, 1) != b"G":
                    return 3
            part = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"fake-catch2-{os.getpid()}.part")
            status = run(name, part)
            text = open(part).read() if os.path.exists(part) else ""
            if os.path.exists(part):
                os.remove(part)
            start, end = text.find("  <TestCase"), text.find("</TestCase>")
            if start >= 0 and end >= 0:
                report.write(text[start : end + len("</TestCase>")] + "\n")
                report.flush()
                cases += 1
            failed += status not in (0, 4, None)
            skipped += status == 4
        report.write(
            '  <OverallResults successes="0" failures="0" expectedFailures="0" skips="0"/>\n'
            "</Catch2TestRun>\n"
        )
    if failed and SPEC.get("catch2") == "3.4":
        return min(255, failed)  # 3.4 exits with the count of failed assertions (one a case here)
    return 42 if failed else 4 if cases and skipped == cases else 0  # as Catch2 3.5 and later exit


def main(argv):
    if "--list-tests" in argv:
        listing()
        return 0
    out = next(arg.split("::out=", 1)[1] for arg in argv if arg.startswith("xml::out="))
    if "--input-file" in argv:
        listed = open(argv[argv.index("--input-file") + 1]).read().splitlines()
        return group([line for line in listed if line.strip()], out)
    name = argv[0]
    if name not in TESTS:
        print(f"No test cases matched '{name}'")
        return 2
    return run(name, out)


sys.exit(main(sys.argv[1:]))
