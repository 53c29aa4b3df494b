"""Runs inside the test child: the pytest plugin and what it imports.

Only the standard library, pytest and relative imports are allowed here: for each run the gate
copies every module of this folder (but the installed entry point's `entry_point.py`) under a
fresh package name (`run/staging.py`).
"""
