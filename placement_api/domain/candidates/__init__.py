"""GET /allocation_candidates: request parsing -> queries -> assembly.

``request`` turns the query string into a ``CandidateRequest`` (pure);
``names`` resolves its names to ids; ``queries`` reads, per request group,
the providers that can serve it (``provider_filters``: in which scope, left
out by which filters) and ``lookups`` what else the search needs
(sharing providers and the trees they serve, headroom, parents in trees);
``options`` arranges providers per anchor tree (pure); ``planning`` builds
each group's plan and the sharing providers' rules; ``combinations`` holds
what a search is given and finds; ``search`` walks the combinations lazily,
pruning as it goes and stopping at the limit (pure), and ``single_provider``
skips the walk on a flat cloud; ``search_settings`` bounds one request's
search; ``windows`` reads rows and searches window by window; ``summaries``
loads what the response reports about the providers involved
(``summary_rows`` reads their rows, ``prefetch`` reads them ahead);
``service`` ties the steps together.
"""
