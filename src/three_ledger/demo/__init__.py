"""The built-in demo: the example repository, its scenarios, their workflow and table."""
