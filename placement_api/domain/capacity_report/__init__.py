"""GET /capacity: how many instances of a flavor still fit, and the usage figures.

``snapshot`` reads providers, inventories, aggregates and the traits asked
about in a few bulk statements; ``flavor`` resolves a request group's names
with the candidates' prelude; ``counting`` turns a snapshot and a flavor
into instance counts (pure); ``figures`` sums usage per class (pure);
``report`` assembles the answer by host, aggregate and availability zone.
The arithmetic and the counting of nested and shared trees are described in
docs/capacity.md.
"""
