"""The `darling` command line: parses arguments and calls the Python API."""
