#!/usr/bin/env bash
# Make a real libvirtd with the QEMU driver available on a machine without
# systemd, for the agent's end-to-end test. Safe to repeat: every step is
# skipped when it is already done. Needs root (apt-get, /etc, /run).
#
# Exit status: 0 when libvirtd answers on its socket, 1 otherwise.
# Set LIBVIRTD_SKIP_INSTALL=1 to only start what is already installed.
set -euo pipefail

socket=/run/libvirt/libvirt-sock
packages=(libvirt-daemon libvirt-daemon-driver-qemu libvirt-clients qemu-system-x86)

if [ "$(id -u)" -ne 0 ]; then
  echo "install-libvirtd: needs root (packages, /etc/libvirt, /run/libvirt)" >&2
  exit 1
fi

missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q 'install ok installed' \
    || missing+=("$package")
done
if [ ${#missing[@]} -gt 0 ] && [ "${LIBVIRTD_SKIP_INSTALL:-0}" != 1 ]; then
  echo "install-libvirtd: installing ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
fi

# The QEMU driver refuses to load without this user and group.
getent group libvirt-qemu >/dev/null || groupadd --system libvirt-qemu
getent passwd libvirt-qemu >/dev/null \
  || useradd --system --no-create-home --gid libvirt-qemu --shell /usr/sbin/nologin libvirt-qemu

# libvirtd -d exits silently when its log directory is missing.
mkdir -p /var/log/libvirt /var/log/libvirt/qemu /run/libvirt

# Running guests as root avoids ownership trouble with files created by root.
qemu_conf=/etc/libvirt/qemu.conf
mkdir -p /etc/libvirt
touch "$qemu_conf"
grep -q '^user = "root"' "$qemu_conf" || echo 'user = "root"' >>"$qemu_conf"
grep -q '^group = "root"' "$qemu_conf" || echo 'group = "root"' >>"$qemu_conf"

# A root-only /dev/kvm makes libvirt re-probe QEMU on every call.
if [ -e /dev/kvm ]; then
  getent group kvm >/dev/null || groupadd --system kvm
  chgrp kvm /dev/kvm && chmod 0660 /dev/kvm || true
fi

running() { pgrep -x "$1" >/dev/null 2>&1; }

# Domains do not start without virtlogd.
running virtlogd || virtlogd -d
running libvirtd || libvirtd -d

for _ in $(seq 1 60); do
  if [ -S "$socket" ] && virsh -c qemu:///system version >/dev/null 2>&1; then
    echo "install-libvirtd: libvirtd is answering on $socket"
    exit 0
  fi
  sleep 0.5
done
echo "install-libvirtd: libvirtd did not answer on $socket within 30 s" >&2
exit 1
