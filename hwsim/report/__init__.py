"""Report files: their registry, summary.json, trace.json, plots, report.html, the terminal summary."""
