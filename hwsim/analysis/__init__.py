"""What a simulated run means: energy and power, utilization, critical path, traffic, frames."""
