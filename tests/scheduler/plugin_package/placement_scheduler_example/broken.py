"""A plugin whose import fails, as a plugin with a missing dependency would."""

import placement_scheduler_example_missing_dependency  # noqa: F401
