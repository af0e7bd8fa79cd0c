"""CPU pinning, guest NUMA and page sizes from flavor extra specs and image properties,
turned into Placement's request language (docs/extra-specs.md).

- ``hw:cpu_policy``: ``dedicated`` asks PCPU for every vCPU, ``mixed`` PCPU for the
  vCPUs of ``hw:cpu_dedicated_mask`` and VCPU for the rest, ``shared`` VCPU.
- ``hw:numa_nodes`` (with ``hw:numa_cpus.N`` / ``hw:numa_mem.N``, else an even split):
  one request group per guest cell holding its CPUs and memory, with
  ``group_policy=isolate`` so that each cell lands on a provider of its own.
- ``hw:mem_page_size``: ``small``/``any`` is MEMORY_MB; a size asks the huge page class
  the agent reports (``CUSTOM_HUGEPAGES_2MB``...), in MiB.
Pinned CPUs or huge pages without ``hw:numa_nodes`` make one implicit guest cell, as in
Nova: the CPUs and memory then come from one provider (a NUMA cell, or the whole host).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from flavors.cpu_set import CpuSetError, exclusions_only, format_cpu_set, parse_cpu_set
from flavors.extra_specs import UnsupportedExtraSpec
from flavors.request_group import RequestGroup
from flavors.resource_names import hugepage_class, page_size_kib

VCPU, PCPU, MEMORY_MB = "VCPU", "PCPU", "MEMORY_MB"
CPU_POLICIES = ("shared", "dedicated", "mixed")
# KVM's KVM_MAX_VCPUS: no guest has more; it also bounds what a CPU mask may name.
MAX_GUEST_VCPUS = 4096
THREAD_POLICIES = ("prefer", "isolate", "require")


@dataclass(frozen=True)
class GuestShape:
    """What the flavor and image ask of the host's CPUs and memory."""

    # VCPU/PCPU/memory class amounts for the unnumbered group; empty when cells hold them.
    unnumbered: dict[str, int]
    cells: tuple[RequestGroup, ...]
    thread_policy: str | None


def guest_shape(
    vcpus: int, memory_mb: int, specs: Mapping[str, str], image: Mapping[str, object]
) -> GuestShape:
    read = _Reader(specs, image)
    if vcpus > MAX_GUEST_VCPUS and (shaping := _shaping_keys(specs, image)):
        raise UnsupportedExtraSpec(
            shaping[0], f"a guest of {vcpus} vCPUs is past KVM's {MAX_GUEST_VCPUS}"
        )
    policy = read.choice("cpu_policy", CPU_POLICIES)
    thread_policy = read.choice("cpu_thread_policy", THREAD_POLICIES)
    if thread_policy is not None and policy != "dedicated":
        raise UnsupportedExtraSpec(
            "hw:cpu_thread_policy", "applies to hw:cpu_policy=dedicated only (as in Nova)"
        )
    dedicated = _dedicated_cpus(policy, vcpus, specs)
    memory_class = _memory_class(read, memory_mb)
    cells = _cells(read, vcpus, memory_mb)
    if cells is None and (dedicated or memory_class != MEMORY_MB):
        cells = [(frozenset(range(vcpus)), memory_mb)]
    if cells is None:
        amounts = {VCPU: vcpus - len(dedicated), PCPU: len(dedicated), MEMORY_MB: memory_mb}
        return GuestShape({rc: n for rc, n in amounts.items() if n > 0}, (), thread_policy)
    groups = []
    for index, (cpus, memory) in enumerate(cells):
        if memory_class != MEMORY_MB and memory % _page_mib(memory_class) != 0:
            raise UnsupportedExtraSpec(
                "hw:mem_page_size",
                f"guest cell {index} has {memory} MiB, not a whole number of its pages",
            )
        amounts = {VCPU: len(cpus - dedicated), PCPU: len(cpus & dedicated), memory_class: memory}
        groups.append(RequestGroup(f"_numa{index}", {rc: n for rc, n in amounts.items() if n > 0}))
    return GuestShape({}, tuple(groups), thread_policy)


def thread_policy(specs: Mapping[str, str], image: Mapping[str, object]) -> str | None:
    """``hw:cpu_thread_policy`` (or the image's), for the filter that checks it."""
    return _Reader(specs, image).choice("cpu_thread_policy", THREAD_POLICIES)


# Image properties that shape the guest; without a flavor there is nothing to shape.
IMAGE_PROPERTIES = (
    "hw_cpu_policy", "hw_cpu_thread_policy", "hw_numa_nodes", "hw_mem_page_size",
    "hw_numa_cpus.", "hw_numa_mem.",
)  # fmt: skip


def _shaping_keys(specs: Mapping[str, str], image: Mapping[str, object]) -> list[str]:
    keys = [k for k in specs if k.startswith("hw:")]
    return sorted(keys + [k for k in image if k.startswith(IMAGE_PROPERTIES)])


class _Reader:
    """A setting from the flavor (``hw:NAME``) or the image (``hw_NAME``); both given and
    different is a contradiction the tenant must resolve."""

    def __init__(self, specs: Mapping[str, str], image: Mapping[str, object]) -> None:
        self.specs = specs
        self.image = image

    def get(self, name: str) -> tuple[str, str] | None:
        """(value, where it came from)."""
        flavor_key, image_key = f"hw:{name}", f"hw_{name}"
        from_flavor = self.specs.get(flavor_key)
        from_image = self.image.get(image_key)
        if from_flavor is not None and from_image is not None and str(from_image) != from_flavor:
            raise UnsupportedExtraSpec(
                flavor_key, f"the flavor says {from_flavor!r} but the image's {image_key} says "
                f"{from_image!r}"
            )  # fmt: skip
        if from_flavor is not None:
            return from_flavor, flavor_key
        return (str(from_image), image_key) if from_image is not None else None

    def choice(self, name: str, allowed: tuple[str, ...]) -> str | None:
        found = self.get(name)
        if found is None:
            return None
        value, key = found
        if value not in allowed:
            raise UnsupportedExtraSpec(key, f"{value!r} is not one of {', '.join(allowed)}")
        return value

    def number(self, name: str, low: int, high: int) -> int | None:
        found = self.get(name)
        if found is None:
            return None
        value, key = found
        if not value.strip().isdigit() or not low <= int(value) <= high:
            raise UnsupportedExtraSpec(key, f"{value!r} is not a whole number from {low} to {high}")
        return int(value)


def _dedicated_cpus(policy: str | None, vcpus: int, specs: Mapping[str, str]) -> frozenset[int]:
    mask = specs.get("hw:cpu_dedicated_mask")
    if mask is not None and policy != "mixed":
        raise UnsupportedExtraSpec("hw:cpu_dedicated_mask", "needs hw:cpu_policy=mixed")
    if policy == "dedicated":
        return frozenset(range(vcpus))
    if policy != "mixed":
        return frozenset()
    if mask is None:
        raise UnsupportedExtraSpec("hw:cpu_policy", "mixed needs hw:cpu_dedicated_mask")
    try:
        cpus = parse_cpu_set(mask, vcpus)
        if exclusions_only(mask):
            cpus = frozenset(range(vcpus)) - parse_cpu_set(mask.replace("^", ""), vcpus)
    except CpuSetError as error:
        raise UnsupportedExtraSpec("hw:cpu_dedicated_mask", str(error)) from None
    if not cpus or len(cpus) == vcpus:
        raise UnsupportedExtraSpec(
            "hw:cpu_dedicated_mask", "a mixed guest needs both dedicated and shared vCPUs"
        )
    return cpus


def _memory_class(read: _Reader, memory_mb: int) -> str:
    found = read.get("mem_page_size")
    if found is None or found[0] in ("small", "any"):
        return MEMORY_MB
    value, key = found
    if value == "large":
        raise UnsupportedExtraSpec(
            key, "'large' (any huge page size) cannot be asked of Placement; name the size "
            "(2MB, 1GB)"
        )  # fmt: skip
    try:
        size_kib = page_size_kib(value)
    except ValueError as error:
        raise UnsupportedExtraSpec(key, str(error)) from None
    if size_kib < 1024 or size_kib % 1024:
        raise UnsupportedExtraSpec(key, f"{value!r} is not a huge page size (2MB, 1GB, ...)")
    if memory_mb % (size_kib // 1024):
        raise UnsupportedExtraSpec(key, f"{memory_mb} MiB is not a whole number of {value} pages")
    return hugepage_class(size_kib)


def _page_mib(memory_class: str) -> int:
    size = memory_class.rsplit("_", 1)[1]
    return int(size[:-2]) * (1024 if size.endswith("GB") else 1)


def _cells(read: _Reader, vcpus: int, memory_mb: int) -> list[tuple[frozenset[int], int]] | None:
    nodes = read.number("numa_nodes", 1, max(vcpus, 1))
    explicit = _explicit_cell_keys(read)
    if nodes is None:
        if explicit:
            raise UnsupportedExtraSpec(explicit[0], "needs hw:numa_nodes")
        return None
    if not explicit:
        if vcpus % nodes or memory_mb % nodes:
            raise UnsupportedExtraSpec(
                "hw:numa_nodes", f"{vcpus} vCPUs and {memory_mb} MiB do not split evenly into "
                f"{nodes} cells; give hw:numa_cpus.N and hw:numa_mem.N"
            )  # fmt: skip
        per_cell = vcpus // nodes
        return [
            (frozenset(range(i * per_cell, (i + 1) * per_cell)), memory_mb // nodes)
            for i in range(nodes)
        ]
    return _explicit_cells(read, nodes, vcpus, memory_mb)


def _explicit_cell_keys(read: _Reader) -> list[str]:
    keys = [k for k in read.specs if k.startswith(("hw:numa_cpus.", "hw:numa_mem."))]
    keys += [k for k in read.image if k.startswith(("hw_numa_cpus.", "hw_numa_mem."))]
    return sorted(keys)


def _explicit_cells(
    read: _Reader, nodes: int, vcpus: int, memory_mb: int
) -> list[tuple[frozenset[int], int]]:
    for key in _explicit_cell_keys(read):
        suffix = key.rsplit(".", 1)[1]
        if not suffix.isdigit() or int(suffix) >= nodes:
            raise UnsupportedExtraSpec(key, f"names a cell past hw:numa_nodes={nodes}")
    cells: list[tuple[frozenset[int], int]] = []
    seen: set[int] = set()
    for index in range(nodes):
        cpus_text = read.get(f"numa_cpus.{index}")
        memory = read.number(f"numa_mem.{index}", 1, memory_mb)
        if cpus_text is None or memory is None:
            raise UnsupportedExtraSpec(
                f"hw:numa_cpus.{index}", "every cell needs both hw:numa_cpus.N and hw:numa_mem.N"
            )
        try:
            cpus = parse_cpu_set(cpus_text[0], vcpus)
        except CpuSetError as error:
            raise UnsupportedExtraSpec(cpus_text[1], str(error)) from None
        if not cpus or cpus & seen:
            raise UnsupportedExtraSpec(cpus_text[1], "is empty or shares vCPUs with another cell")
        seen |= cpus
        cells.append((cpus, memory))
    if seen != set(range(vcpus)):
        missing = format_cpu_set(set(range(vcpus)) - seen)
        raise UnsupportedExtraSpec("hw:numa_cpus.0", f"vCPUs {missing} are in no guest cell")
    if sum(memory for _, memory in cells) != memory_mb:
        raise UnsupportedExtraSpec(
            "hw:numa_mem.0", f"the cells' memory does not add up to the flavor's {memory_mb} MiB"
        )
    return cells
