"""Claiming: writing the chosen hosts' allocations (batched), and releasing them."""
