"""What only `flake-evidence` uses: its statistics, its verdicts, its reruns, its report."""
