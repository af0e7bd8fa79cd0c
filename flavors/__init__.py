"""What the scheduler and the API share: the operator's flavor and aggregate files,
and what a flavor asks of Placement. Imports neither ``placement_api`` nor ``scheduler``."""
