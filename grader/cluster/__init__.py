"""Grading a class beyond one machine: a Slurm job array whose tasks each grade a part of the
class with the engine, on their node's GPUs, into one run folder (slurm.py)."""
