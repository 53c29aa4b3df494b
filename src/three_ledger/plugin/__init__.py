"""Runs inside the test child: the pytest plugin and what it imports.

Only the standard library, pytest and relative imports are allowed here: the gate copies
this whole folder for each run under a fresh package name (`run/staging.py`).
"""
