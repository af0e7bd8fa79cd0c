"""Moving a cloud between upstream OpenStack Placement's database and ours.

``db import`` reads an upstream database into a :class:`Snapshot`, checks
it, and writes it into our freshly migrated database in one transaction;
``db export`` does the reverse into a database made by upstream's own
migrations. Both keep the ids of providers, consumers, projects, users,
aggregates and consumer types, and map resource classes and traits by name.
"""
