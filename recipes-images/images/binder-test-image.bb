SUMMARY = "Minimal image that runs the binder ptests"
DESCRIPTION = "core-image-minimal plus ptest-runner and the binder test \
               packages (conformance suite, the kernel's binderfs selftest), \
               for QEMU or a board: boot it and run ptest-runner, or let \
               testimage do it."
LICENSE = "MIT"

require recipes-core/images/core-image-minimal.bb
inherit core-image features_check

REQUIRED_DISTRO_FEATURES = "ptest"

IMAGE_INSTALL:append = " ptest-runner binder-conformance-ptest binderfs-selftest-ptest"

# Room for the tests' scratch files, and memory for KASAN/lockdep test kernels.
IMAGE_ROOTFS_EXTRA_SPACE = "65536"
QB_MEM = "-m 1024"

# "bitbake -c testimage binder-test-image" runs the ptests in QEMU over ssh;
# the login it needs (root, no password) is set by kas.yml, not here.
IMAGE_FEATURES += "ssh-server-dropbear"
TEST_SUITES = "ping ssh ptest"
TEST_RUNQEMUPARAMS = "slirp nographic"
