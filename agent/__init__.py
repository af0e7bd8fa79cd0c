"""Compute agent: reports a libvirt host's inventory and traits to Placement."""
