# nooelint: oelint.var.mandatoryvar.HOMEPAGE
# (HOMEPAGE: this layer's own code, which has no web page of its own.)
SUMMARY = "Fuzzer and regression tests for Linux binder drivers"
DESCRIPTION = "Known-bug regression tests, allocation-failure tests (with \
               the kernel's fault injection), a load test and a seeded, \
               time-bounded multi-process fuzz run against the running \
               kernel's binder driver. Installed as a ptest; the same \
               run-ptest is what the layer's QEMU harness runs."
SECTION = "devel"
LICENSE = "MIT"
# userspace/ carries no license text (Cargo.toml says MIT): oe-core's copy.
# nooelint: oelint.var.licenseremotefile
LIC_FILES_CHKSUM = "file://${COMMON_LICENSE_DIR}/MIT;md5=0835ade698e0bcf8506ecda2f7b4f302"

# Crates first (bitbake's crate fetcher, so cargo builds offline with --frozen),
# then the source: the layer's own cargo workspace, userspace/ at the layer
# root, which the QEMU harness builds too.
require ${BPN}-crates.inc
# nooelint: oelint.vars.fileextrapaths,oelint.vars.outofcontext
FILESEXTRAPATHS:prepend := "${THISDIR}/../..:"
SRC_URI += "file://userspace \
            file://run-ptest \
            "

S = "${UNPACKDIR}/userspace"

inherit cargo cargo-update-recipe-crates ptest

CARGO_BUILD_FLAGS += "--package ${BPN}"

do_install() {
    install -d ${D}${bindir}
    install -m 0755 ${B}/target/${CARGO_TARGET_SUBDIR}/${BPN} ${D}${bindir}/${BPN}
}

# run-ptest runs ./binder-fuzz from the ptest directory.
do_install_ptest() {
    ln -sf ${bindir}/${BPN} ${D}${PTEST_PATH}/${BPN}
}
