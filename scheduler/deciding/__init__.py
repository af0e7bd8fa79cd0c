"""Deciding: the engine, capacity and filters, weighing, the request's context and
the explanation every decision carries."""
