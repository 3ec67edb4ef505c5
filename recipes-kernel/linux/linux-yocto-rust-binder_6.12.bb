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

# Version: 6.12.69, the upstream stable release the layer's test harness
# builds and tests the rust-binder series on. KBRANCH, SRCREV_machine and
# SRCREV_meta are whinlatter's linux-yocto_6.12.bb at LINUX_VERSION 6.12.69,
# read from oe-core commit d2588fad20a1b0e5b8c58112ee084721331f8acf
# ("linux-yocto/6.12: update to v6.12.69", branch whinlatter; the recipe's
# pins are unchanged from there to whinlatter's head 8751ec83421192fc).
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

SRCREV_machine:qemuarm64 ?= "a7fbaf7533ae7ebc35f56c0dfb86970eda4d721c"
SRCREV_machine:qemux86-64 ?= "a7fbaf7533ae7ebc35f56c0dfb86970eda4d721c"
SRCREV_machine ?= "a7fbaf7533ae7ebc35f56c0dfb86970eda4d721c"
SRCREV_meta ?= "5b1ff7df002df6e7069a53b361d9e8f5f9df3aac"

LINUX_VERSION ?= "6.12.69"
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
