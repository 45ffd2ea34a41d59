"""The engine: which process runs when, on which GPU lane, and what that cost.

schedule hands out CPU and GPU slots, measuring windows and profiler turns; usage samples how
busy the CPUs and GPUs were; timeline draws what the scheduler did. It depends on nothing else of
the grader, and the pipeline's run stage is its user (docs/architecture.md).
"""
