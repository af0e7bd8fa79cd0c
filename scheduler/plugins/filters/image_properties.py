"""Image architecture against the host's traits: ``hw_architecture`` needs the
matching ``HW_ARCH_*`` trait (the host's own CPU architecture),
``hw_emulation_architecture`` the matching ``COMPUTE_ARCH_*`` trait."""

from __future__ import annotations

from scheduler.placement.host_state import HostState
from scheduler.plugins.base import PASS, HostFilter, Verdict, reject
from scheduler.plugins.cycle import Cycle

# Names images use for an architecture, mapped to the canonical one.
_ALIASES = {
    "amd64": "x86_64",
    "x64": "x86_64",
    "x86-64": "x86_64",
    "arm64": "aarch64",
    "i386": "i686",
    "i486": "i686",
    "i586": "i686",
    "x86": "i686",
    "ppc64el": "ppc64le",
    "armv7l": "armv7",
}
_PROPERTY_TRAIT_PREFIX = {
    "hw_architecture": "HW_ARCH_",
    "hw_emulation_architecture": "COMPUTE_ARCH_",
}


def architecture_trait(prefix: str, architecture: str) -> str:
    canonical = _ALIASES.get(architecture.lower(), architecture.lower())
    return prefix + canonical.upper().replace("-", "_")


class ImagePropertiesFilter(HostFilter):
    name = "image_properties"
    description = "Keeps hosts whose architecture traits match the image's properties."

    def applies(self, context: Cycle) -> bool:
        return context.image is not None

    def verdict(self, host: HostState, context: Cycle) -> Verdict:
        if context.image is None:
            return PASS
        for prop, prefix in _PROPERTY_TRAIT_PREFIX.items():
            wanted = getattr(context.image, prop)
            if not wanted:
                continue
            trait = architecture_trait(prefix, wanted)
            if trait not in host.traits:
                has = sorted(t for t in host.traits if t.startswith(prefix)) or ["none"]
                return reject(f"image wants {prop}={wanted} ({trait}); host has {', '.join(has)}")
        return PASS
