"""GET /capacity: how many instances of a flavor fit, and the usage figures.

``snapshot`` reads providers, inventories, aggregates and the traits asked
about in a few bulk statements; ``flavor`` resolves a request group's names
with the candidates' prelude; ``layout`` lays the rows out as per-class
columns aligned with the hosts in name order; ``counting`` turns them and a
flavor into instance counts, with ``placing`` for sharing providers that
run short (pure); ``figures`` sums usage per class (pure); ``availability``
finds the hosts disabled or down and takes them out of a snapshot; ``report``
assembles the answer by host, aggregate and availability zone. The
arithmetic and the counting of nested and shared trees are described in
docs/capacity.md.
"""
