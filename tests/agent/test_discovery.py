"""Discovery is a pure function of libvirt's answers: recorded XML in, host facts out."""

from __future__ import annotations

from pathlib import Path

import libvirt
import pytest

from agent.discovery import RawDomain, RawHost, build_host_facts, read_host
from agent.discovery.capabilities import CapabilitiesError, parse_capabilities
from agent.discovery.cpu_traits import arch_trait, cpu_feature_traits, parse_expanded_cpu
from agent.discovery.libvirt_reader import DiscoveryError
from tests.agent.nodes import DATA, node_uri

QEMU_CAPABILITIES = (DATA / "qemu-capabilities.xml").read_text()
TWO_CELL_CAPABILITIES = (DATA / "capabilities-two-cells.xml").read_text()


def expand(cpu_xml: str) -> str:
    """libvirt's own CPU map expands the model; the test driver needs no daemon."""
    connection = libvirt.openReadOnly(node_uri(DATA / "small-host.xml"))
    try:
        expanded: str = connection.baselineCPU(
            [cpu_xml], libvirt.VIR_CONNECT_BASELINE_CPU_EXPAND_FEATURES
        )
        return expanded
    finally:
        connection.close()


def test_recorded_qemu_capabilities_give_arch_model_and_one_numa_cell():
    capabilities = parse_capabilities(QEMU_CAPABILITIES)

    assert capabilities.cpu.arch == "x86_64"
    assert capabilities.cpu.model == "kvm64"
    assert capabilities.cpu.vendor == "AMD"
    assert len(capabilities.numa_cells) == 1
    cell = capabilities.numa_cells[0]
    assert (cell.cell_id, cell.memory_mib, cell.cpu_ids) == (0, 5859540 // 1024, (0, 1))


def test_numa_cells_are_read_with_their_memory_units_and_cpus():
    cells = parse_capabilities(TWO_CELL_CAPABILITIES).numa_cells

    assert [(c.cell_id, c.memory_mib, c.cpu_ids) for c in cells] == [
        (0, 16384, (0, 1)),
        (1, 8192, (2, 3)),
    ]


def test_capabilities_without_host_cpu_are_rejected():
    with pytest.raises(CapabilitiesError):
        parse_capabilities("<capabilities><host/></capabilities>")


def test_expanded_kvm64_host_cpu_maps_to_standard_x86_traits():
    cpu_xml = parse_capabilities(QEMU_CAPABILITIES).cpu.xml
    features = parse_expanded_cpu(expand(cpu_xml))

    traits = cpu_feature_traits("x86_64", features)

    # kvm64 itself only implies SSE2; the rest come from the listed host features.
    expected = {"SSE", "SSE2", "SSE3", "SSSE3", "SSE41", "SSE42", "SSE4A", "AVX", "AVX2"}
    expected |= {"AESNI", "CLMUL", "FMA3", "F16C", "BMI", "BMI2", "SHA", "ABM", "PDPE1GB"}
    assert {f"HW_CPU_X86_{name}" for name in expected} <= traits
    assert all(trait.startswith("HW_CPU_X86_") for trait in traits)


def test_vector_aes_without_avx512_is_not_reported_as_an_avx512_trait():
    # The recorded AMD host has vaes and vpclmulqdq but no AVX-512 at all.
    features = parse_expanded_cpu(parse_capabilities(QEMU_CAPABILITIES).cpu.xml)
    assert {"vaes", "vpclmulqdq"} <= features

    traits = cpu_feature_traits("x86_64", features)

    assert not any("AVX512" in trait for trait in traits)
    with_avx512 = cpu_feature_traits("x86_64", features | {"avx512f"})
    assert {"HW_CPU_X86_AVX512VAES", "HW_CPU_X86_AVX512VPCLMULQDQ"} <= with_avx512


def test_model_features_come_from_libvirt_expansion():
    haswell = "<cpu><arch>x86_64</arch><model>Haswell-noTSX</model><vendor>Intel</vendor></cpu>"

    features = parse_expanded_cpu(expand(haswell))

    assert {"avx2", "fma", "bmi2", "sse4.2"} <= features
    assert "HW_CPU_X86_AVX2" in cpu_feature_traits("x86_64", features)


def test_disabled_features_are_not_reported():
    xml = "<cpu><feature policy='disable' name='avx2'/><feature policy='require' name='avx'/></cpu>"

    assert parse_expanded_cpu(xml) == {"avx"}


def test_cpu_feature_traits_are_only_x86_traits_on_x86_hosts():
    assert cpu_feature_traits("aarch64", frozenset({"aes", "sha-ni"})) == frozenset()


@pytest.mark.parametrize(
    ("arch", "trait"),
    [("x86_64", "HW_ARCH_X86_64"), ("i686", "HW_ARCH_I686"), ("aarch64", "HW_ARCH_AARCH64"),
     ("armv7l", "HW_ARCH_ARMV7"), ("ppc64le", "HW_ARCH_PPC64LE"), ("riscv128", None)],
)  # fmt: skip
def test_arch_trait_uses_os_traits_names(arch, trait):
    assert arch_trait(arch) == trait


def raw_host(**changes) -> RawHost:
    values = {
        "hostname": "compute-7",
        "node_info": ["x86_64", 5338, 2, 2596, 1, 1, 2, 1],
        "memory_stats": {"total": 24684096, "free": 1000},
        "cpu_stats": None,
        "read_at": 0.0,
        "capabilities_xml": QEMU_CAPABILITIES,
        "expanded_cpu_xml": None,
        "domains": [],
        "instances_disk_bytes": 100 * 1024**3 + 5,
    }
    return RawHost(**(values | changes))


def test_memory_comes_from_node_memory_stats_when_the_driver_has_them():
    assert build_host_facts(raw_host()).memory_mib == 24684096 // 1024


def test_memory_falls_back_to_node_info_without_memory_stats():
    assert build_host_facts(raw_host(memory_stats=None)).memory_mib == 5338


def test_disk_is_whole_gib_of_the_instances_filesystem():
    assert build_host_facts(raw_host()).disk_gib == 100


def test_domains_carry_vcpus_and_promised_memory():
    domain = RawDomain("uuid-1", "db", True, [1, 4194304, 2097152, 4, 0])

    facts = build_host_facts(raw_host(domains=[domain]))

    assert [(d.name, d.vcpus, d.memory_mib, d.active) for d in facts.domains] == [
        ("db", 4, 4096, True)
    ]


def test_test_driver_host_is_read_through_libvirt(tmp_path: Path):
    facts = build_host_facts(read_host(node_uri(DATA / "small-host.xml"), tmp_path))

    assert facts.logical_cpus == 4
    assert facts.memory_mib == 8192
    assert facts.topology.cores == 2
    assert facts.topology.threads == 2
    assert {(d.name, d.active, d.vcpus, d.memory_mib) for d in facts.domains} == {
        ("web-1", True, 2, 1024),
        ("stopped-1", False, 1, 512),
    }
    assert [d.name for d in facts.running_domains] == ["web-1"]


def test_unreachable_libvirt_is_a_discovery_error(tmp_path: Path):
    with pytest.raises(DiscoveryError, match="cannot connect"):
        read_host(node_uri(tmp_path / "missing-node.xml"), tmp_path)


def test_missing_instances_path_reports_no_disk(tmp_path: Path):
    facts = build_host_facts(read_host(node_uri(DATA / "large-host.xml"), tmp_path / "absent"))

    assert facts.disk_gib == 0
    assert facts.logical_cpus == 64
