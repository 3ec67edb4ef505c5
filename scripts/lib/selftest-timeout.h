/* SPDX-License-Identifier: MIT */
/*
 * Force-included by scripts/build-ptests when it builds the kernel's
 * binderfs selftest for the harness: under TCG with KASAN and lockdep the
 * guest runs ten or more times slower than hardware, and binderfs_stress
 * can outlast kselftest's 30 s per-test default on a loaded host. The test
 * itself is unchanged; only the harness's hang detector is scaled.
 */
#include "kselftest_harness.h"
#undef TEST_TIMEOUT_DEFAULT
#define TEST_TIMEOUT_DEFAULT 300
