"""Studies over many runs: compare, sensitivity."""
