"""What ``placement-api`` offers operators beyond serving: checks, audit, policy."""
