"""One exception type for every mistake a user can make: the CLI and the pages catch it and show
its message as one clear line, never a traceback."""


class SpecVizError(ValueError):
    """A problem with the user's input or environment, worded for the user."""
