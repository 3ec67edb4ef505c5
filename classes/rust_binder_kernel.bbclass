#
# SPDX-License-Identifier: MIT
#
# rust_binder_kernel.bbclass: Android's Binder driver in Rust for a 6.12 kernel.
#
# Inherit this from any kernel recipe that uses kernel-yocto (linux-yocto and
# the many vendor/CIP recipes built the same way):
#
#     inherit rust_binder_kernel
#
# It brings three things:
#   1. the layer's kernel metadata (the rust-binder feature: patch series and
#      config fragments) as a "kmeta" directory in SRC_URI;
#   2. the feature itself in KERNEL_FEATURES, chosen by kernel version;
#   3. the Rust toolchain for the kernel build: oe-core's kernel-yocto-rust
#      class where the release has it (wrynose and later), otherwise this
#      layer's rust_binder_kernel_toolchain class (walnascar, whinlatter).
#

# Which feature to add. Empty means "pick by kernel version": the patch series
# for 6.12; a kernel with upstream's Rust binder (6.18 and later) only needs
# the configuration, so no patches are applied there.
RUST_BINDER_FEATURE ??= ""
RUST_BINDER_FEATURE_6_12 ??= "features/rust-binder/rust-binder.scc"
RUST_BINDER_FEATURE_UPSTREAM ??= "features/rust-binder/rust-binder-upstream.scc"
# Set to "1" for the test kernel: KASAN, lockdep and Rust debug assertions.
RUST_BINDER_DEBUG ??= "0"
RUST_BINDER_FEATURE_6_12_DEBUG ??= "features/rust-binder/rust-binder-debug.scc"
# Set to "1" to leave the C driver out of a 6.12 kernel: only the Rust driver
# is built, and it serves binderfs whatever binder.impl= says.
RUST_BINDER_ONLY ??= "0"
RUST_BINDER_FEATURE_RUST_ONLY ??= "features/rust-binder/rust-binder-only.scc"
RUST_BINDER_FEATURE_RUST_ONLY_DEBUG ??= "features/rust-binder/rust-binder-only-debug.scc"

def rust_binder_kmeta_parent(d):
    import os
    scc = os.path.join(d.getVar('RUST_BINDER_KMETA_SUBDIR'), 'features', 'rust-binder', 'rust-binder.scc')
    found = bb.utils.which(d.getVar('BBPATH'), scc)
    if not found:
        bb.fatal("rust_binder_kernel: %s not found in BBPATH; is meta-rust-binder in bblayers.conf?" % scc)
    # .../recipes-kernel/linux/linux-yocto/features/rust-binder/rust-binder.scc -> .../recipes-kernel/linux
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(found))))

def rust_binder_kernel_series(d):
    import re
    version = d.getVar('LINUX_VERSION') or d.getVar('PV') or ''
    match = re.match(r'(\d+)\.(\d+)', version)
    if not match:
        return None
    return (int(match.group(1)), int(match.group(2)))

def rust_binder_feature(d):
    chosen = d.getVar('RUST_BINDER_FEATURE')
    if chosen:
        return chosen
    series = rust_binder_kernel_series(d)
    if series == (6, 12):
        debug = d.getVar('RUST_BINDER_DEBUG') == '1'
        if d.getVar('RUST_BINDER_ONLY') == '1':
            if debug:
                return d.getVar('RUST_BINDER_FEATURE_RUST_ONLY_DEBUG')
            return d.getVar('RUST_BINDER_FEATURE_RUST_ONLY')
        if debug:
            return d.getVar('RUST_BINDER_FEATURE_6_12_DEBUG')
        return d.getVar('RUST_BINDER_FEATURE_6_12')
    if series and series >= (6, 18):
        return d.getVar('RUST_BINDER_FEATURE_UPSTREAM')
    return ''

# The kmeta directory holding features/rust-binder/, found through BBPATH so
# that this class works from any recipe, in any layer. BBPATH and
# FILESEXTRAPATHS do not enter task signatures. (A class has to set
# FILESEXTRAPATHS for the recipes that inherit it, hence the suppression.)
RUST_BINDER_KMETA_SUBDIR = "recipes-kernel/linux/linux-yocto"
# nooelint: oelint.vars.fileextrapaths,oelint.vars.outofcontext
FILESEXTRAPATHS:prepend := "${@rust_binder_kmeta_parent(d)}:"
SRC_URI:append = " file://linux-yocto;type=kmeta;name=rust-binder-kmeta;destsuffix=linux-yocto"

KERNEL_FEATURES:append = " ${@rust_binder_feature(d)}"

# Toolchain: the release's own class if it has one. bb.utils.which() on BBPATH
# is evaluated at parse time, so a release without kernel-yocto-rust.bbclass
# never sees its name in an inherit line.
inherit_defer ${@'kernel-yocto-rust' if bb.utils.which(d.getVar('BBPATH'), 'classes-recipe/kernel-yocto-rust.bbclass') else 'rust_binder_kernel_toolchain'}

# A kernel built with TOOLCHAIN = "clang" (kas/debug.yml's) must compile with
# clang. oe-core's kernel-arch sets KERNEL_CC to ${HOST_PREFIX}gcc whatever
# the toolchain, while the clang toolchain puts clang-cross, not gcc-cross,
# into the kernel's sysroot. KERNEL_LD, KERNEL_OBJCOPY and KERNEL_STRIP stay
# binutils' (clang-cross depends on binutils-cross); clang assembles with its
# integrated assembler, and says so with -fintegrated-as: the kernel's
# Makefile adds that flag itself, but do_kernel_configcheck runs Kconfig with
# only CC from here, and without the flag scripts/as-version.sh cannot tell
# clang's assembler ("Sorry, this assembler is not supported").
# (toolchain-clang is the override TOOLCHAIN = "clang" sets, not a MACHINE or
# DISTRO one.)
# nooelint: oelint.vars.specific
KERNEL_CC:toolchain-clang = "${CCACHE}${HOST_PREFIX}clang ${HOST_CC_KERNEL_ARCH} \
 -fintegrated-as ${DEBUG_PREFIX_MAP} \
 -ffile-prefix-map=${STAGING_KERNEL_DIR}=${KERNEL_SRC_PATH} \
 -ffile-prefix-map=${STAGING_KERNEL_BUILDDIR}=${KERNEL_SRC_PATH} \
"
# do_package splits vmlinux's debug information with OBJCOPY, which the clang
# toolchain makes llvm-objcopy; it fails on the kernel ("Link field value 44
# in section .rela.dyn is not a symbol table"), binutils' does not (meta-clang
# sets OBJCOPY so for the kernel recipes it knows). Only in do_package, as
# kernel.bbclass hands do_package KERNEL_STRIP: the kernel's own build takes
# KERNEL_OBJCOPY, and OBJCOPY is exported into every task.
python do_package:prepend () {
    if d.getVar('TOOLCHAIN') == 'clang':
        d.setVar('OBJCOPY', d.expand('${HOST_PREFIX}objcopy'))
}

# Skipping a recipe needs anonymous python.
# nooelint: oelint.task.noanonpython
python __anonymous() {
    if not bb.data.inherits_class('kernel-yocto', d):
        bb.fatal("rust_binder_kernel: %s does not inherit kernel-yocto, and the rust-binder "
                 "feature is kernel metadata (.scc), which only kernel-yocto applies. Convert "
                 "the recipe: either add 'inherit kernel-yocto' after its 'inherit kernel' "
                 "(its defconfig then comes from SRC_URI as file://defconfig or from "
                 "KBUILD_DEFCONFIG), or build it on "
                 "oe-core's linux-yocto.inc ('require recipes-kernel/linux/linux-yocto.inc', "
                 "which inherits kernel and kernel-yocto) as linux-yocto_6.12.bb does" % d.getVar('PN'))
    series = rust_binder_kernel_series(d)
    if not d.getVar('RUST_BINDER_FEATURE') and series != (6, 12) and not (series and series >= (6, 18)):
        raise bb.parse.SkipRecipe("rust-binder needs a 6.12 kernel (patch series) or 6.18+ "
                                  "(upstream driver); this recipe is %s" % (d.getVar('LINUX_VERSION') or d.getVar('PV')))
}
