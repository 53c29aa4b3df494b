"""The gate's side of one test run: checks before it, the child, and the evidence after."""
