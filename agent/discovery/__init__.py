"""Host discovery: libvirt answers in, plain host facts out."""

from agent.discovery.host import RawDomain, RawHost, build_host_facts
from agent.discovery.libvirt_reader import DiscoveryError, read_host
from agent.discovery.model import Domain, HostFacts, NumaCell

__all__ = [
    "DiscoveryError",
    "Domain",
    "HostFacts",
    "NumaCell",
    "RawDomain",
    "RawHost",
    "build_host_facts",
    "read_host",
]
