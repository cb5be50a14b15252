"""Command-line tools for pykueue's users (installed with the Python package)."""
