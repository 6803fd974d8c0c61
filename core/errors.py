"""Errors the CLI turns into one clean line and exit code 2 (bad input a user can fix)."""


class UserInputError(ValueError):
    """Input a user can fix: a bad file, row, field or option. The message names where."""
