SUMMARY = "linux-yocto 6.12 with Android's Binder driver in Rust"
DESCRIPTION = "The linux-yocto v6.12 standard kernel with the rust-binder \
               feature, for releases that no longer ship linux-yocto 6.12 \
               (wrynose and later). It reuses oe-core's linux-yocto.inc and \
               kernel metadata from yocto-kernel-cache's yocto-6.12 branch, as \
               oe-core's own linux-yocto_6.12.bb does."
HOMEPAGE = "https://git.yoctoproject.org/linux-yocto/"
SECTION = "kernel"
LICENSE = "GPL-2.0-only"
LIC_FILES_CHKSUM = "file://COPYING;md5=6bc538ed5bd9a7fc9398086aedcd7e46"

# Branch and SRCREVs of oe-core's linux-yocto_6.12.bb (LINUX_VERSION 6.12.63).
KBRANCH ?= "v6.12/standard/base"

require recipes-kernel/linux/linux-yocto.inc
require linux-yocto-rust-binder.inc

# Optional: a release without 6.12 has no cve-exclusion_6.12.inc.
# nooelint: oelint.file.requireinclude
include recipes-kernel/linux/cve-exclusion.inc
# nooelint: oelint.file.requireinclude
include recipes-kernel/linux/cve-exclusion_6.12.inc

inherit features_check
REQUIRED_DISTRO_FEATURES = "rust-binder"

KBRANCH:qemuarm64 ?= "v6.12/standard/base"
KBRANCH:qemux86-64 ?= "v6.12/standard/base"

SRCREV_machine:qemuarm64 ?= "8b6eae329c7720386de14aa56db14b9c81f2e67d"
SRCREV_machine:qemux86-64 ?= "8b6eae329c7720386de14aa56db14b9c81f2e67d"
SRCREV_machine ?= "8b6eae329c7720386de14aa56db14b9c81f2e67d"
SRCREV_meta ?= "f7d83a5a4be20f4f4d3fcf3b1fbd23aa69bdc6ac"

LINUX_VERSION ?= "6.12.63"
PV = "${LINUX_VERSION}+git"

SRC_URI = "git://git.yoctoproject.org/linux-yocto.git;name=machine;branch=${KBRANCH};protocol=https \
           git://git.yoctoproject.org/yocto-kernel-cache;type=kmeta;name=meta;branch=yocto-6.12;destsuffix=${KMETA};protocol=https"

KMETA = "kernel-meta"
KCONF_BSP_AUDIT_LEVEL = "1"

# Rust in 6.12 is supported on these; the qemu machines are what the tests use.
COMPATIBLE_MACHINE = "^(qemuarm64|qemux86-64)$"

KERNEL_EXTRA_FEATURES ?= "features/netfilter/netfilter.scc"
KERNEL_FEATURES:append = " ${KERNEL_EXTRA_FEATURES}"
KERNEL_FEATURES:append:qemuall = " cfg/virtio.scc features/drm-bochs/drm-bochs.scc cfg/net/mdio.scc"
KERNEL_FEATURES:append:qemux86-64 = " cfg/sound.scc cfg/paravirt_kvm.scc"
