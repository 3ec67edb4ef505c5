# nooelint: oelint.file.underscores,oelint.var.mandatoryvar.SRC_URI
# (No version in the file name: PV is that of the release's rust recipe, found
# at parse time; SRC_URI comes from oe-core's rust-source.inc.)
SUMMARY = "Rust standard library sources for building Rust code in the Linux kernel"
DESCRIPTION = "Installs library/ (core, alloc, ...) of the rustc source that the \
release's rust-native is built from, at rustc's own sysroot path, so that the \
kernel's RUST_LIB_SRC and 'make rustavailable' find it. Only needed on releases \
whose rust-native ships no library sources and which have no \
kernel-yocto-rust.bbclass (walnascar, whinlatter)."
HOMEPAGE = "https://www.rust-lang.org"
SECTION = "devel"
LICENSE = "MIT | Apache-2.0"
# The rustc tarball's COPYRIGHT changes from release to release; the library
# is dual MIT/Apache-2.0, so point at the common license texts.
# nooelint: oelint.var.licenseremotefile
LIC_FILES_CHKSUM = "file://${COMMON_LICENSE_DIR}/MIT;md5=0835ade698e0bcf8506ecda2f7b4f302 \
                    file://${COMMON_LICENSE_DIR}/Apache-2.0;md5=89aea4e17d99a7cacdbeed46a0096b10"

# The version of oe-core's rust recipe next to its rust-source.inc, honouring
# PREFERRED_VERSION_rust-native (tcmode-default.inc sets it from RUSTVERSION).
def rust_kernel_src_version(d):
    import glob
    import os
    import re
    inc = bb.utils.which(d.getVar('BBPATH'), 'recipes-devtools/rust/rust-source.inc')
    if not inc:
        return '0'
    versions = []
    for recipe in glob.glob(os.path.join(os.path.dirname(inc), 'rust_*.bb')):
        match = re.match(r'rust_([0-9][0-9.]*)\.bb$', os.path.basename(recipe))
        if match:
            versions.append(match.group(1))
    preferred = (d.getVar('PREFERRED_VERSION_rust-native') or '').rstrip('%')
    if preferred:
        versions = [v for v in versions if v.startswith(preferred)] or versions
    if not versions:
        return '0'
    return sorted(versions, key=lambda v: [int(x) for x in v.split('.') if x])[-1]

def rust_kernel_src_oecore_files(d):
    import os
    inc = bb.utils.which(d.getVar('BBPATH'), 'recipes-devtools/rust/rust-source.inc')
    return os.path.join(os.path.dirname(inc), 'files') if inc else ''

PV = "${@rust_kernel_src_version(d)}"

# rust-source.inc lists the rustc tarball (with its checksum) and oe-core's
# patches to it; the patches live beside oe-core's rust recipe.
# nooelint: oelint.vars.fileextrapaths,oelint.vars.outofcontext
FILESEXTRAPATHS:prepend := "${@rust_kernel_src_oecore_files(d)}:"
require recipes-devtools/rust/rust-source.inc

inherit_defer native

S = "${RUSTSRC}"

do_configure[noexec] = "1"
do_compile[noexec] = "1"

do_install() {
    install -d ${D}${libdir}/rustlib/src/rust
    cp -R --no-preserve=ownership ${S}/library ${D}${libdir}/rustlib/src/rust/
    if [ -f ${S}/Cargo.lock ]; then
        install -m 0644 ${S}/Cargo.lock ${D}${libdir}/rustlib/src/rust/
    fi
}

# Skipping a recipe needs anonymous python.
# nooelint: oelint.task.noanonpython
python __anonymous() {
    if bb.utils.which(d.getVar('BBPATH'), 'classes-recipe/kernel-yocto-rust.bbclass'):
        raise bb.parse.SkipRecipe("this release's rust-native installs the library sources itself")
    if d.getVar('PV') == '0':
        raise bb.parse.SkipRecipe("oe-core's rust recipe was not found")
}
