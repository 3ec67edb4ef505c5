#
# SPDX-License-Identifier: MIT
#
# rust_binder_kernel_toolchain.bbclass: the Rust toolchain for a kernel build,
# for releases whose oe-core has no kernel-yocto-rust.bbclass (walnascar,
# whinlatter). Do not inherit it directly: rust_binder_kernel.bbclass picks
# oe-core's class where it exists and this one otherwise.
#
# It mirrors oe-core's kernel-yocto-rust.bbclass (wrynose): the same native
# dependencies (rustc, bindgen, libclang), "make rustavailable" at the end of
# do_kernel_configme, ccache off, debug path remapping. What it adds is the Rust
# standard library source: rust-native on these releases installs none, and
# the kernel builds its own "core" from it (RUST_LIB_SRC). The source comes
# from rust-kernel-src-native, which unpacks the very rustc tarball that the
# release's rust-native is built from.
#

RUST_KERNEL_DEPENDS ?= "clang-native rust-native bindgen-cli-native rust-kernel-src-native"
DEPENDS += "${RUST_KERNEL_DEPENDS}"
RUST_KERNEL_TASK_DEPENDS ?= "rust-native:do_populate_sysroot \
                             clang-native:do_populate_sysroot \
                             bindgen-cli-native:do_populate_sysroot \
                             rust-kernel-src-native:do_populate_sysroot"
do_kernel_configme[depends] += "${RUST_KERNEL_TASK_DEPENDS}"

# Where rust-kernel-src-native installs library/ (core, alloc, ...): the place
# "rustc --print sysroot" points at, so it is also the kernel's default.
RUST_KERNEL_LIB_SRC ?= "${STAGING_LIBDIR_NATIVE}/rustlib/src/rust/library"

# The tools by absolute path, so that no host rustc or bindgen can be picked up.
RUST_KERNEL_RUSTC ?= "${STAGING_BINDIR_NATIVE}/rustc"
RUST_KERNEL_BINDGEN ?= "${STAGING_BINDIR_NATIVE}/bindgen"

RUST_KERNEL_DEBUG_REMAP ?= "--remap-path-prefix=${WORKDIR}=${TARGET_DBGSRC_DIR} \
                            --remap-path-prefix=${TMPDIR}/work-shared=${TARGET_DBGSRC_DIR}"
KRUSTFLAGS ?= "${RUST_KERNEL_DEBUG_REMAP}"

EXTRA_OEMAKE:append = " RUSTC=${RUST_KERNEL_RUSTC} HOSTRUSTC=${RUST_KERNEL_RUSTC}"
EXTRA_OEMAKE:append = " BINDGEN=${RUST_KERNEL_BINDGEN} RUST_LIB_SRC=${RUST_KERNEL_LIB_SRC}"
EXTRA_OEMAKE:append = " KRUSTFLAGS='${KRUSTFLAGS}'"

# Fail at configuration time, with the kernel's own diagnosis, rather than
# silently losing CONFIG_RUST in olddefconfig.
do_kernel_configme:append() {
    oe_runmake -C ${S} O=${B} rustavailable
}

# The kernel's Rust build does not work through ccache (rustc is handed
# $HOSTCC as a linker path); oe-core's kernel-yocto-rust does the same.
CCACHE_DISABLE ?= "1"

# walnascar's oe-core has no clang-native and no bindgen-cli-native (whinlatter
# and later have both); meta-clang provides them. Without it every target
# fails with "Nothing PROVIDES 'clang-native'", which does not say what to do:
# stop the parse with the fix instead.
# A parse-time check needs anonymous python.
# nooelint: oelint.task.noanonpython
python __anonymous() {
    import os
    if 'clang-layer' in (d.getVar('BBFILE_COLLECTIONS') or '').split():
        return
    if os.path.isdir(os.path.join(d.getVar('COREBASE'), 'meta', 'recipes-devtools', 'clang')):
        return
    bb.fatal("rust-binder: %s needs clang-native and bindgen-cli-native for the kernel's "
             "Rust, and this release's oe-core (%s) has neither. Add meta-clang (branch "
             "of the same release, e.g. walnascar; layer collection clang-layer) to "
             "bblayers.conf, as kas/walnascar.yml of meta-rust-binder does."
             % (d.getVar('PN'), d.getVar('DISTRO_CODENAME') or d.getVar('LAYERSERIES_CORENAMES')))
}
