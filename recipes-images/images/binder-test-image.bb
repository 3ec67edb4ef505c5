SUMMARY = "Minimal image that runs the binder ptests"
DESCRIPTION = "core-image-minimal plus ptest-runner and every binder ptest \
               that the layer's QEMU harness runs (conformance suite, the \
               kernel's binderfs selftest, fuzzer and regression tests, \
               benchmarks, rsbinder client), for QEMU or a board: boot it \
               and run ptest-runner, or let testimage do it."
LICENSE = "MIT"

require recipes-core/images/core-image-minimal.bb
inherit core-image features_check

REQUIRED_DISTRO_FEATURES = "ptest"

# The ptests of scripts/check, so that ptest-runner on a board lists the same
# packages as the harness in QEMU. With a lib32 multilib configured (see
# binder-conformance_0.1.bb), the 32-bit conformance suite as well.
BINDER_PTESTS = "binderfs-selftest-ptest binder-conformance-ptest binder-fuzz-ptest \
                 binder-bench-ptest binder-rsbinder-ptest \
                 ${@bb.utils.contains('MULTILIBS', 'multilib:lib32', 'lib32-binder-conformance-ptest', '', d)}"
IMAGE_INSTALL:append = " ptest-runner ${BINDER_PTESTS}"

# Room for the tests' scratch files, and memory for KASAN/lockdep test kernels.
IMAGE_ROOTFS_EXTRA_SPACE = "65536"
QB_MEM = "-m 1024"

# "bitbake -c testimage binder-test-image" runs the ptests in QEMU over ssh;
# the login it needs (root, no password) is set by kas.yml, not here.
IMAGE_FEATURES += "ssh-server-dropbear"
TEST_SUITES = "ping ssh ptest"
TEST_RUNQEMUPARAMS = "slirp nographic"
