"""Co-adaptation search: graph rewrites and per-op mappings, remembered in an experience database."""
