"""GET /allocation_candidates: request parsing -> queries -> assembly.

``request`` turns the query string into a ``CandidateRequest`` (pure);
``queries`` and ``sharing`` read the providers that can serve each request
group; ``options`` arranges them per anchor tree (pure); ``search`` walks
the combinations lazily, pruning as it goes and stopping at the limit
(pure); ``summaries`` loads what the response reports about the providers
involved; ``service`` ties the steps together.
"""
