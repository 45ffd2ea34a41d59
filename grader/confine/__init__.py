"""Confinement: how every process that runs or compiles student code is started and bounded.

proc starts processes through the C launcher (launch.c) with limits, cgroups gives each its
cgroup, sandbox wraps a command in its own namespaces (sandbox_init.c), gate lets a test process
ask for its GPU to itself, inspect refuses object files past a size or with what no lab needs,
and screen reads student sources for what must not compile. Nothing here knows of labs or
scores: the pipeline calls these (docs/architecture.md).
"""
