"""placement-api: a Placement-compatible resource inventory service."""
