"""What each microversion changes, per operation, for ``openapi.yaml``.

Features are named as in ``microversion.FEATURES``, which holds their
version numbers; a test checks that every feature is described somewhere.
"""

from __future__ import annotations

from placement_api.microversion import FEATURES

# operationId -> the feature that introduced it (the operation is a 404 before).
INTRODUCED: dict[str, str] = {
    "listResourceProviderAggregates": "aggregates",
    "updateResourceProviderAggregates": "aggregates",
    "listResourceClasses": "resource_classes",
    "createResourceClass": "resource_classes",
    "showResourceClass": "resource_classes",
    "updateResourceClass": "resource_classes",
    "deleteResourceClass": "resource_classes",
    "listTraits": "traits",
    "showTrait": "traits",
    "createTrait": "traits",
    "deleteTrait": "traits",
    "listResourceProviderTraits": "traits",
    "updateResourceProviderTraits": "traits",
    "deleteResourceProviderTraits": "traits",
    "showTotalUsages": "usages_by_project",
    "listAllocationCandidates": "allocation_candidates",
    "manageAllocations": "allocations_post",
    "reshape": "reshaper",
}

_PROVIDER_FILTERS = [
    ("member_of_query", "`member_of`."),
    ("resources_query", "`resources`."),
    ("nested_providers", "`in_tree`; providers show `parent_provider_uuid`, `root_provider_uuid`."),
    ("providers_required", "`required`."),
    ("forbidden_traits", "`required=!TRAIT`."),
    ("member_of_repeated", "`member_of` may be repeated."),
    ("forbidden_aggregates", "`member_of=!uuid`."),
    ("any_traits", "`required=in:A,B`; repeated `required` keys."),
]
_PROVIDER_BODY = [
    ("aggregates", "Links include `aggregates`."),
    ("traits", "Links include `traits`."),
    ("provider_links_allocations", "Links include `allocations`."),
    ("nested_providers", "`parent_provider_uuid` and `root_provider_uuid`."),
]
_INVENTORY_WRITE = [("reserved_equal_total", "`reserved` may equal `total`.")]
_ALLOCATION_WRITE = [
    ("allocations_require_project_user", "`project_id` and `user_id` are required."),
    ("allocations_dict_format", "`allocations` is keyed by provider uuid."),
    (
        "consumer_generation",
        "`consumer_generation` is required (null for a new consumer); empty "
        "`allocations` remove the consumer's allocations.",
    ),
    ("candidates_mappings", "`mappings` (group suffix -> providers) is accepted."),
    ("consumer_types", "`consumer_type` is required."),
]

# operationId -> (feature, what it changes), oldest first.
CHANGES: dict[str, list[tuple[str, str]]] = {
    "listResourceProviders": [*_PROVIDER_FILTERS, *_PROVIDER_BODY],
    "createResourceProvider": [
        ("nested_providers", "`parent_provider_uuid` may be given."),
        ("provider_create_returns_body", "200 with the provider instead of 201 without body."),
    ],
    "showResourceProvider": _PROVIDER_BODY,
    "updateResourceProvider": [
        ("nested_providers", "`parent_provider_uuid` may be set once on a root."),
        ("provider_reparent", "A provider may be moved to another parent or made a root."),
    ],
    "createInventory": _INVENTORY_WRITE,
    "replaceInventories": _INVENTORY_WRITE,
    "updateInventory": _INVENTORY_WRITE,
    "deleteInventories": [("inventories_delete_all", "Allowed (405 before).")],
    "listResourceProviderAggregates": [
        ("aggregates_generation", "`resource_provider_generation` in the body."),
    ],
    "updateResourceProviderAggregates": [
        (
            "aggregates_generation",
            "The body is `{aggregates, resource_provider_generation}`, not a list.",
        ),
    ],
    "updateResourceClass": [
        ("resource_class_put_idempotent", "Creates the class (201) or finds it (204); no body."),
    ],
    "showTotalUsages": [("consumer_types", "Totals are grouped by consumer type.")],
    "showConsumerAllocations": [
        ("allocations_dict_format", "`project_id` and `user_id` in the body."),
        ("consumer_generation", "`consumer_generation` in the body."),
        ("consumer_types", "`consumer_type` in the body."),
    ],
    "replaceConsumerAllocations": _ALLOCATION_WRITE,
    "manageAllocations": [
        item for item in _ALLOCATION_WRITE if FEATURES[item[0]] > FEATURES["allocations_post"]
    ],
    "reshape": [("consumer_types", "Allocations carry `consumer_type`.")],
    "listAllocationCandidates": [
        ("allocations_dict_format", "`allocation_requests` are keyed by provider uuid."),
        ("candidates_limit", "`limit`."),
        ("candidates_required", "`required`; summaries show `traits`."),
        ("candidates_member_of", "`member_of`."),
        ("forbidden_traits", "`required=!TRAIT`."),
        ("member_of_repeated", "`member_of` may be repeated."),
        ("granular_groups", "Numbered request groups and `group_policy`."),
        ("summaries_all_classes", "Summaries list every class of a provider's inventory."),
        ("candidates_nested", "Nested providers; summaries show parent and root."),
        ("candidates_in_tree", "`in_tree`."),
        ("forbidden_aggregates", "`member_of=!uuid`."),
        ("string_group_suffixes", "Group suffixes may be names."),
        ("candidates_mappings", "`mappings` in each allocation request."),
        ("root_required", "`root_required`."),
        ("same_subtree", "`same_subtree`."),
        ("any_traits", "`required=in:A,B`; repeated `required` keys."),
    ],
}

# Changes that apply to every operation; described in the document's introduction.
EVERYWHERE: dict[str, str] = {
    "last_modified": "GET answers carry `Last-Modified` and `Cache-Control: no-cache`.",
    "error_codes": "Error bodies carry a specific `code`.",
}


def since_version(operation_id: str) -> str | None:
    feature = INTRODUCED.get(operation_id)
    return str(FEATURES[feature]) if feature else None


def history_text(operation_id: str) -> str:
    """Markdown lines: the microversion that introduced the operation, then each change."""
    lines = []
    feature = INTRODUCED.get(operation_id)
    if feature:
        lines.append(f"- {FEATURES[feature]}: introduced.")
    changes = sorted(CHANGES.get(operation_id, []), key=lambda change: FEATURES[change[0]])
    lines += [f"- {FEATURES[name]}: {text}" for name, text in changes]
    return "Microversions:\n\n" + "\n".join(lines) if lines else ""


def described_features() -> set[str]:
    named = set(INTRODUCED.values()) | set(EVERYWHERE)
    return named | {name for changes in CHANGES.values() for name, _ in changes}
