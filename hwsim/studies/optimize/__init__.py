"""The co-adaptation search: ..."""
