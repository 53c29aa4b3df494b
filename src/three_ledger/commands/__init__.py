"""One module per subcommand; each exposes a function returning an exit code."""
