"""Talking to Placement: the typed client, the candidates query, host states read
from its answers and kept between decisions, and the probes behind "nothing fits"."""
