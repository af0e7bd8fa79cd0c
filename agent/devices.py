"""Which host devices become child providers: PCI devices the allowlist selects
(a physical function with virtual functions offers its VFs) and GPUs offering an
enabled mediated-device type (VGPU). A pure function of the host facts."""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass

from agent.discovery.model import HostFacts, Mdev, PciDevice
from agent.pci_spec import PciDeviceSpec, matching_spec

VGPU = "VGPU"


@dataclass(frozen=True)
class DeviceOffer:
    """One child provider: a physical device and the units it offers."""

    address: str
    resource_class: str
    total: int
    traits: frozenset[str]
    numa_node: int | None


def device_child_uuid(root_uuid: str, address: str) -> str:
    """Stable without extra state, like the NUMA cells': root uuid and PCI address."""
    return str(uuid.uuid5(uuid.UUID(root_uuid), f"pci-{address}"))


def device_offers(
    facts: HostFacts,
    specs: list[PciDeviceSpec],
    mdev_types: list[str],
    mdev_classes: Mapping[str, str],
) -> list[DeviceOffer]:
    offers = _pci_offers(facts.pci_devices, specs)
    taken = {offer.address for offer in offers}
    offers += _vgpu_offers(facts.pci_devices, facts.mdevs, mdev_types, mdev_classes, taken)
    return sorted(offers, key=lambda offer: offer.address)


def _pci_offers(devices: tuple[PciDevice, ...], specs: list[PciDeviceSpec]) -> list[DeviceOffer]:
    by_address = {device.address: device for device in devices}
    offers: list[DeviceOffer] = []
    offered: set[str] = set()
    for device in devices:
        spec = matching_spec(specs, device) if device.physical_function is None else None
        if spec is None:
            continue
        vfs = set(device.vf_addresses) | {
            d.address for d in devices if d.physical_function == device.address
        }
        offers.append(_offer(device, spec, len(vfs) or 1, offers_vfs=bool(vfs)))
        offered.add(device.address)
    # Virtual functions selected by a rule of their own (their own vendor/product, as
    # Nova's type-VF rules) are offered on their physical function's provider.
    selected: dict[str, list[tuple[PciDevice, PciDeviceSpec]]] = defaultdict(list)
    for device in devices:
        pf = device.physical_function
        if pf is not None and pf not in offered and (spec := matching_spec(specs, device)):
            selected[pf].append((device, spec))
    for pf, functions in selected.items():
        first, spec = functions[0]
        parent = by_address.get(pf)
        node = parent.numa_node if parent is not None else first.numa_node
        offer = _offer(first, spec, len(functions), offers_vfs=False)
        offers.append(
            DeviceOffer(pf, offer.resource_class, offer.total, offer.traits, node),
        )
    return offers


def _offer(device: PciDevice, spec: PciDeviceSpec, units: int, offers_vfs: bool) -> DeviceOffer:
    return DeviceOffer(
        address=device.address,
        resource_class=spec.class_for(device, offers_vfs),
        total=units,
        traits=frozenset(spec.traits),
        numa_node=device.numa_node,
    )


def _vgpu_offers(
    devices: tuple[PciDevice, ...],
    mdevs: tuple[Mdev, ...],
    enabled: list[str],
    classes: Mapping[str, str],
    taken: set[str],
) -> list[DeviceOffer]:
    """One VGPU provider per GPU: the free instances of its first enabled type (in the
    order enabled) plus the mediated devices of that type already created (they hold
    allocations)."""
    offers = []
    for device in devices:
        if device.address in taken:
            continue
        offered = {t.type_id: t for t in device.mdev_types}
        mdev_type = next((offered[t] for t in enabled if t in offered), None)
        if mdev_type is None:
            continue
        created = sum(
            1
            for m in mdevs
            if m.parent_address == device.address and m.type_id == mdev_type.type_id
        )
        total = mdev_type.available + created
        if total > 0:
            resource_class = classes.get(mdev_type.type_id, VGPU)
            offers.append(
                DeviceOffer(device.address, resource_class, total, frozenset(), device.numa_node)
            )
    return offers
