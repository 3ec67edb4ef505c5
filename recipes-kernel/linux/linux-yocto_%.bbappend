# Android's Binder driver in Rust for linux-yocto, only when the distro asks for
# it: with "rust-binder" not in DISTRO_FEATURES this file changes nothing, so
# adding the layer leaves every task signature as it was (yocto-check-layer).
#
# The "%" matters: walnascar and whinlatter ship linux-yocto 6.12, wrynose only
# 6.18; a "_6.12" append would be a dangling append (a parse error) there. The
# class picks the patch series for 6.12, upstream's driver for 6.18+, and skips
# other versions. (oelint reads the empty expansion as a trailing space.)
# nooelint: oelint.spaces.lineend
require ${@bb.utils.contains('DISTRO_FEATURES', 'rust-binder', 'linux-yocto-rust-binder.inc', '', d)}
