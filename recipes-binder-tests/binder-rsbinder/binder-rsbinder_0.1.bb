# nooelint: oelint.var.mandatoryvar.HOMEPAGE
# (HOMEPAGE: this layer's own code, which has no web page of its own.)
SUMMARY = "rsbinder service manager, AIDL echo service and client as a binder ptest"
DESCRIPTION = "A client of the binder driver that this layer did not write: \
               rsbinder's service manager rsb_hub, and an AIDL echo service \
               and client on rsbinder (register, look up, call, pass a binder \
               back, death notification). Installed as a ptest; the same \
               run-ptest is what the layer's QEMU harness runs."
SECTION = "devel"
# Our code is MIT (userspace-rsbinder/ carries no license text: oe-core's
# copy); rsbinder and rsb_hub, linked in, are Apache-2.0.
LICENSE = "MIT & Apache-2.0"
# nooelint: oelint.var.licenseremotefile
LIC_FILES_CHKSUM = "file://${COMMON_LICENSE_DIR}/MIT;md5=0835ade698e0bcf8506ecda2f7b4f302 \
                    file://${COMMON_LICENSE_DIR}/Apache-2.0;md5=89aea4e17d99a7cacdbeed46a0096b10"

# Crates first (bitbake's crate fetcher, so cargo builds offline with --frozen),
# then the source: userspace-rsbinder/ at the layer root, a cargo workspace
# of its own (its Cargo.lock pins rsbinder), which the QEMU harness builds too.
require ${BPN}-crates.inc
# nooelint: oelint.vars.fileextrapaths,oelint.vars.outofcontext
FILESEXTRAPATHS:prepend := "${THISDIR}/../..:"
SRC_URI += "file://userspace-rsbinder \
            file://run-ptest \
            "

S = "${UNPACKDIR}/userspace-rsbinder"

inherit cargo cargo-update-recipe-crates ptest

# rsb_hub is a binary of the rsbinder-tools dependency, built from our lock.
RSBINDER_BINS = "rsb_hub rsb_echo_service rsb_echo_client"
CARGO_BUILD_FLAGS += "--package rsb-echo --package rsbinder-tools \
                      ${@' '.join('--bin ' + b for b in d.getVar('RSBINDER_BINS').split())}"

do_install() {
    install -d ${D}${bindir}
    for b in ${RSBINDER_BINS}; do
        install -m 0755 ${B}/target/${CARGO_TARGET_SUBDIR}/$b ${D}${bindir}/$b
    done
}

# run-ptest runs ./rsb_hub, ./rsb_echo_service and ./rsb_echo_client from the
# ptest directory.
do_install_ptest() {
    for b in ${RSBINDER_BINS}; do
        ln -sf ${bindir}/$b ${D}${PTEST_PATH}/$b
    done
}
