"""Node files for libvirt's test driver, written by tests that change the host between passes."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from xml.sax.saxutils import escape

# qemu-capabilities.xml there is a copy of ../shared/testdata/libvirt/qemu-capabilities.xml,
# captured from a QEMU host, so the tests do not depend on a path outside the repository.
DATA = Path(__file__).parent / "data"


@dataclass(frozen=True)
class NodeDomain:
    uuid: str
    name: str
    vcpus: int = 1
    memory_mib: int = 256
    running: bool = True


def node_uri(node_file: Path) -> str:
    return f"test://{node_file.resolve()}"


def write_node(
    path: Path, cpus: int, memory_mib: int, domains: tuple[NodeDomain, ...] = ()
) -> Path:
    domain_xml = "".join(_domain(domain) for domain in domains)
    path.write_text(
        f"""<node>
  <cpu>
    <mhz>2400</mhz><model>x86_64</model><active>{cpus}</active>
    <nodes>1</nodes><sockets>1</sockets><cores>{cpus}</cores><threads>1</threads>
  </cpu>
  <memory>{memory_mib * 1024}</memory>
{domain_xml}</node>
"""
    )
    return path


def _domain(domain: NodeDomain) -> str:
    runstate = "" if domain.running else "<test:runstate>5</test:runstate>"
    return f"""  <domain type="test" xmlns:test="http://libvirt.org/schemas/domain/test/1.0">
    <name>{escape(domain.name)}</name><uuid>{domain.uuid}</uuid>
    <memory unit="MiB">{domain.memory_mib}</memory>
    <currentMemory unit="MiB">{domain.memory_mib}</currentMemory>
    <vcpu>{domain.vcpus}</vcpu><os><type>hvm</type></os>{runstate}
  </domain>
"""
