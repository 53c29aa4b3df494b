"""What only `vet` uses: mutation operators, the scratch copy, judging, its report."""
