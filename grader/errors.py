"""The one error type the grader raises on purpose: its message is for the person reading it."""


class GraderError(Exception):
    """A problem the user can fix; the message names the file or lab, what is wrong and the fix."""
