# Android's Binder driver in Rust for linux-yocto-rt (PREEMPT_RT), only when
# the distro asks for it: the same gate and the same include as
# linux-yocto_%.bbappend, so adding the layer changes no task signature.
# Every release ships a linux-yocto-rt (6.12 on walnascar and whinlatter,
# 6.18 on wrynose), so this append never dangles; the class picks the series
# for 6.12 and upstream's driver for 6.18+.
# nooelint: oelint.spaces.lineend
require ${@bb.utils.contains('DISTRO_FEATURES', 'rust-binder', 'linux-yocto-rust-binder.inc', '', d)}
