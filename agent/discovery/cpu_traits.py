"""Turn CPU feature names (libvirt's spelling) into standard os-traits names.

libvirt names x86 features after the Linux ``/proc/cpuinfo`` flags, while
os-traits names instruction-set families; the table below joins the two.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

import os_traits

_X86_FEATURE_TRAITS: dict[str, str] = {
    "3dnow": "3DNOW",
    "abm": "ABM",
    "aes": "AESNI",
    "amd-no-ssb": "AMD_NO_SSB",
    "amd-ssbd": "AMD_SSBD",
    "amx-bf16": "AMXBF16",
    "amx-int8": "AMXINT8",
    "amx-tile": "AMXTILE",
    "avx": "AVX",
    "avx2": "AVX2",
    "avx512-vpopcntdq": "AVX512VPOPCNTDQ",
    "avx512bitalg": "AVX512BITALG",
    "avx512bw": "AVX512BW",
    "avx512cd": "AVX512CD",
    "avx512dq": "AVX512DQ",
    "avx512er": "AVX512ER",
    "avx512f": "AVX512F",
    "avx512ifma": "AVX512IFMA",
    "avx512pf": "AVX512PF",
    "avx512vbmi": "AVX512VBMI",
    "avx512vbmi2": "AVX512VBMI2",
    "avx512vl": "AVX512VL",
    "avx512vnni": "AVX512VNNI",
    "bmi1": "BMI",
    "bmi2": "BMI2",
    "f16c": "F16C",
    "fma": "FMA3",
    "fma4": "FMA4",
    "hle": "TSX",
    "ibpb": "AMD_IBPB",
    "md-clear": "INTEL_MD_CLEAR",
    "mmx": "MMX",
    "mpx": "MPX",
    "pclmuldq": "CLMUL",
    "pcid": "INTEL_PCID",
    "pdpe1gb": "PDPE1GB",
    "pni": "SSE3",
    "rtm": "TSX",
    "sgx": "SGX",
    "sha-ni": "SHA",
    "spec-ctrl": "INTEL_SPEC_CTRL",
    "ssbd": "INTEL_SSBD",
    "sse": "SSE",
    "sse2": "SSE2",
    "sse4.1": "SSE41",
    "sse4.2": "SSE42",
    "sse4a": "SSE4A",
    "ssse3": "SSSE3",
    "stibp": "STIBP",
    "svm": "SVM",
    "tbm": "TBM",
    "virt-ssbd": "AMD_VIRT_SSBD",
    "vmx": "VMX",
    "xop": "XOP",
}

# os-traits files VAES, GFNI and VPCLMULQDQ under AVX-512. CPUs such as AMD
# Zen 3 have the 256-bit forms without any AVX-512, so claiming the traits
# there would promise instructions a guest cannot run.
_AVX512_FORMS: dict[str, str] = {
    "vaes": "AVX512VAES",
    "gfni": "AVX512GFNI",
    "vpclmulqdq": "AVX512VPCLMULQDQ",
}

_X86_ARCHES = frozenset({"x86_64", "i686"})
_ARCH_SPELLINGS = {"armv6l": "ARMV6", "armv7l": "ARMV7"}
_ENABLED_POLICIES = frozenset({"require", "force", "optional"})
_STANDARD_TRAITS = frozenset(os_traits.get_traits())


def parse_expanded_cpu(xml: str) -> frozenset[str]:
    """Feature names a ``baselineCPU(..., EXPAND_FEATURES)`` result enables."""
    root = ET.fromstring(xml)
    return frozenset(
        name
        for feature in root.iter("feature")
        if (name := feature.get("name")) and feature.get("policy", "require") in _ENABLED_POLICIES
    )


def cpu_feature_traits(arch: str, features: frozenset[str]) -> frozenset[str]:
    if arch not in _X86_ARCHES:
        return frozenset()
    names = {_X86_FEATURE_TRAITS[f] for f in features if f in _X86_FEATURE_TRAITS}
    if "avx512f" in features:
        names |= {_AVX512_FORMS[f] for f in features if f in _AVX512_FORMS}
    return frozenset(_known_trait(f"HW_CPU_X86_{name}") for name in names)


def arch_trait(arch: str) -> str | None:
    """``HW_ARCH_*`` for a libvirt architecture name, None when os-traits has none."""
    trait = f"HW_ARCH_{_ARCH_SPELLINGS.get(arch, arch.upper())}"
    return trait if trait in _STANDARD_TRAITS else None


def _known_trait(name: str) -> str:
    if name not in _STANDARD_TRAITS:
        raise LookupError(f"{name} is not an os-traits trait; the feature table is wrong")
    return name
