"""The kit's autograder: `python -m grader {check,grade,validate,handout}`.

One module per pipeline stage (collect -> stage -> build -> run -> score -> report), plain
data classes between them; see docs/architecture.md.
"""
