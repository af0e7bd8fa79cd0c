"""Health, metrics and logs: what operators and load balancers read."""
