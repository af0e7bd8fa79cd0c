"""Serving: the HTTP service, its wire models, metrics and OpenAPI document, its
Python client, terminal rendering and the demo."""
