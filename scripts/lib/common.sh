# Shared settings of the harness scripts; sourced, not run.
# Every path outside the clone lives under $MRB_CACHE.

top=$(cd "$(dirname "$0")/.." && pwd)
MRB_CACHE=${MRB_CACHE:-/var/cache/meta-rust-binder}
# The kernel version: 6.12 (the layer's target) or 7.2 (Debian unstable's,
# with upstream's own Rust binder: the reference; scripts/setup-host --reference).
KVER=${KVER:-6.12}
# The 6.12 base: pristine upstream 6.12.y, the version whinlatter's
# linux-yocto_6.12.bb pins (and the layer's wrynose recipe with it), from
# Debian's orig tarball (scripts/fetch-upstream; scripts/setup-host fetches it).
KBASE=${KBASE:-6.12.69}
case "$KVER" in
*,*) ;; # several kernels: scripts/check runs a check per kernel, which sets these
6.12) KSRC_TARBALL=${KSRC_TARBALL:-$MRB_CACHE/dl/linux_$KBASE.orig.tar.xz} ;;
*) KSRC_TARBALL=${KSRC_TARBALL:-$MRB_CACHE/linux-source-$KVER-pkg/usr/src/linux-source-$KVER.tar.xz} ;;
esac
# The pristine tree (a git repository, base commit tagged "base") that
# scripts/check resets and patches; developers edit a worktree of it.
case "$KVER" in
*,*) ;;
*)
	KTREE=${KTREE:-$MRB_CACHE/linux-$KVER}
	KDEVTREE=${KDEVTREE:-$MRB_CACHE/linux-$KVER-dev}
	;;
esac
FEATURE_DIR=$top/recipes-kernel/linux/linux-yocto/features/rust-binder
BUILD=${BUILD:-$top/build}
# Cargo target folders of this checkout. Cargo decides what to rebuild from
# file times, not contents: two checkouts sharing one target folder (git
# worktrees, a clean clone beside a working copy) can be handed each other's
# binaries. Each checkout gets folders of its own: arm64, armhf, rsbinder.
CARGO_DIR=$MRB_CACHE/cargo/$(printf %s "$top" | md5sum | cut -c1-12)

# The kernel's Makefile names its tools plainly (rustc, bindgen, clang), and
# merge_config.sh cannot pass make variables: PATH decides. Debian's rustc-web
# (matching rust-web-src) must win over a rustup toolchain; bindgen comes
# from cargo install.
export PATH="/usr/lib/llvm-19/bin:/usr/bin:/bin:$PATH:${CARGO_HOME:-$HOME/.cargo}/bin"
export ARCH=arm64
# MRB_CC (the scripts' --cc): the compiler of the kernel's C code. gcc, the
# default for 6.12, is what a Yocto build uses (TOOLCHAIN = "gcc" for
# kernels): Debian's cross gcc for arm64, the host's for x86_64, with GNU
# binutils. clang is LLVM=1 (clang, ld.lld, llvm-*), as kas/debug.yml builds,
# and the default for the 7.2 reference kernels (docs/oracle.md measured them
# so). Rust is rustc either way; with gcc, bindgen's libclang is given gcc's
# flags (rust/Makefile drops those it does not know). Build folders and
# results of a gcc kernel end in -gcc. Not exported unless given: a script
# that runs another for a kernel of its own gets that kernel's default.
cc_default() {
	case "$KVER" in
	7.2) echo clang ;;
	*) echo gcc ;;
	esac
}
# cc_for_kver: the compiler of $KVER (MRB_CC if given, else $KVER's default)
# and its toolchain variables, for $KVER as it is now.
cc_for_kver() {
	[ "${MRB_CC_DEFAULTED:-}" != yes ] || MRB_CC=$(cc_default)
	set_cc
}
set_cc() {
	case "$MRB_CC" in
	clang) export LLVM=1 CROSS_COMPILE="" ;;
	gcc)
		unset LLVM
		case "$ARCH" in
		arm64) export CROSS_COMPILE=aarch64-linux-gnu- ;;
		*) export CROSS_COMPILE="" ;;
		esac
		;;
	*) die "MRB_CC (--cc) is gcc or clang, not '$MRB_CC'" ;;
	esac
	CC_SUFFIX=""
	[ "$MRB_CC" = clang ] || CC_SUFFIX=-$MRB_CC
}
if [ -z "${MRB_CC:-}" ]; then
	MRB_CC_DEFAULTED=yes
fi
# MRB_PROFILE=yocto (the scripts' --profile yocto): the hot-path options a
# Yocto kernel has and the harness's allnoconfig-based one lacks
# (scripts/lib/qemuarm64-yocto-hotpath.cfg: LSE atomics, jump labels, full
# preemption, pointer authentication and BTI, vmapped stacks) on a guest CPU
# with LSE atomics (QEMU_CPU=neoverse-n1, ARMv8.2) instead of cortex-a57
# (ARMv8.0). Build folders and results end in -yocto.
case "${MRB_PROFILE:-}" in
yocto)
	PROFILE_SUFFIX=-yocto
	export QEMU_CPU=${QEMU_CPU:-neoverse-n1}
	;;
'') PROFILE_SUFFIX="" ;;
*) echo "MRB_PROFILE (--profile) is yocto or unset, not '$MRB_PROFILE'" >&2 && exit 1 ;;
esac
# MRB_RT=1 (the scripts' --rt): the 6.12 kernels are PREEMPT_RT
# (scripts/lib/qemuarm64-rt.cfg) instead of PREEMPT, as linux-yocto-rt
# builds them; their build folders and results end in -rt.
case "${MRB_RT:-}" in
1) RT_SUFFIX=-rt ;;
'' | 0) RT_SUFFIX="" ;;
*) echo "MRB_RT (--rt) is 1 or unset, not '$MRB_RT'" >&2 && exit 1 ;;
esac
# MRB_KCOV=1 (scripts/build-kernel --kcov): the fuzz kernel of
# scripts/syzkaller, the 6.12 kernel plus scripts/lib/qemuarm64-kcov.cfg and
# KCOV in the Rust driver's crate (KCOV_RUSTFLAGS below); build folders end in
# -kcov.
case "${MRB_KCOV:-}" in
1) KCOV_SUFFIX=-kcov ;;
'' | 0) KCOV_SUFFIX="" ;;
*) echo "MRB_KCOV (--kcov) is 1 or unset, not '$MRB_KCOV'" >&2 && exit 1 ;;
esac
# The flags upstream's scripts/Makefile.kcov gives rustc from 6.14 on
# (trace-pc edges and comparisons, as KCOV_ENABLE_COMPARISONS does for C),
# given by kernel_make to rust_binder.o alone through Kbuild's per-object
# RUSTFLAGS_<object> variable.
KCOV_RUSTFLAGS="-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=3 \
-Cllvm-args=-sanitizer-coverage-trace-pc -Cllvm-args=-sanitizer-coverage-trace-compares"
export RUSTC=/usr/bin/rustc RUSTDOC=/usr/bin/rustdoc
export RUST_LIB_SRC=/usr/lib/rustlib/src/rust/library
JOBS=${JOBS:-$(($(nproc) + 1))}

die() { echo "$(basename "$0"): $*" >&2; exit 1; }
cc_for_kver

# apt_state_opts DIR: apt options for a private apt state in DIR (its own
# sources.list, lists and archives; the host's dpkg status and /etc/apt
# untouched), for apt-get/apt-cache calls that must not depend on the host's
# sources (scripts/fetch-upstream, scripts/setup-rustc).
apt_state_opts() {
	echo -o Dir::Etc::SourceList="$1/sources.list" -o Dir::Etc::SourceParts=/nonexistent \
		-o Dir::State::Lists="$1/lists" -o Dir::Cache::Archives="$1/archives" \
		-o Dir::State::Status=/dev/null -o Debug::NoLocking=1
}
log() { echo "== $*" >&2; }

# MRB_RUSTC=VERSION builds with another Debian rustc-web (scripts/setup-rustc
# unpacks it into the cache), in build folders of its own.
if [ -n "${MRB_RUSTC:-}" ]; then
	_r=$MRB_CACHE/rustc-$MRB_RUSTC
	[ -x "$_r/bin/rustc" ] || die "no rustc $MRB_RUSTC in $_r: run scripts/setup-rustc $MRB_RUSTC"
	export PATH="$_r/bin:$PATH"
	export RUSTC=$_r/bin/rustc RUSTDOC=$_r/bin/rustdoc HOSTRUSTC=$_r/bin/rustc
	export RUST_LIB_SRC=$_r/usr/lib/rustlib/src/rust/library
fi

# scc_walk FILE KIND: print the files of KIND ("patch" or "kconf") that an
# .scc lists, in order, following "include" lines, as absolute paths.
scc_walk() {
	_dir=$(dirname "$1")
	while read -r kw a b _; do
		case "$kw" in
		include) scc_walk "$_dir/$a" "$2" ;;
		patch) [ "$2" = patch ] && echo "$_dir/$a" ;;
		kconf) [ "$2" = kconf ] && echo "$_dir/$b" ;;
		esac
	done <"$1"
	return 0
}

# machine_frags: the harness's machine fragments for $KVER, before a feature's
# own: qemuarm64.cfg, and on 6.12 the 32-bit userspace support that the
# lib32-binder-conformance ptest needs (qemuarm64-compat.cfg) and a security
# module for binder's security contexts (qemuarm64-lsm.cfg), and tracefs with
# the binder events (qemuarm64-trace.cfg).
machine_frags() {
	echo "$top/scripts/lib/qemuarm64.cfg"
	if [ "$KVER" = 6.12 ]; then
		echo "$top/scripts/lib/qemuarm64-compat.cfg"
		echo "$top/scripts/lib/qemuarm64-lsm.cfg"
		echo "$top/scripts/lib/qemuarm64-trace.cfg"
	fi
}

# feature_frags FEATURE: every config fragment of FEATURE's kernel on $KVER,
# in merge order (the machine's, the feature's, then on 6.12 for a debug
# feature the harness's kmemleak fragment).
feature_frags() {
	machine_frags
	scc_walk "$FEATURE_DIR/$1.scc" kconf
	# The 6.12 test kernels (the *-debug features) also get kmemleak, hang
	# detection and full preemption, harness-only fragments (why: their
	# headers); with MRB_RT=1 every 6.12 kernel is PREEMPT_RT instead.
	case "$KVER:$1" in
	6.12:*-debug) echo "$top/scripts/lib/qemuarm64-kmemleak.cfg" "$top/scripts/lib/qemuarm64-hang.cfg" ;;
	esac
	if [ -n "$RT_SUFFIX" ]; then
		[ "$KVER" = 6.12 ] || die "--rt (MRB_RT) builds the 6.12 kernels only"
		echo "$top/scripts/lib/qemuarm64-rt.cfg"
	else
		case "$KVER:$1" in
		6.12:*-debug) echo "$top/scripts/lib/qemuarm64-preempt.cfg" ;;
		esac
	fi
	[ -z "$PROFILE_SUFFIX" ] || echo "$top/scripts/lib/qemuarm64-yocto-hotpath.cfg"
	if [ -n "$KCOV_SUFFIX" ]; then
		[ "$KVER" = 6.12 ] || die "--kcov (MRB_KCOV) builds the 6.12 kernels only"
		echo "$top/scripts/lib/qemuarm64-kcov.cfg"
	fi
}

# config_stamp FEATURE: the stamp that scripts/build-kernel writes into the
# build folder once it has configured FEATURE's kernel: the patches applied
# to $KTREE (its series-stamp) and the fragments.
config_stamp() {
	# shellcheck disable=SC2046
	cat "$KTREE/.git/series-stamp" $(feature_frags "$1") 2>/dev/null | sha256sum | cut -c1-16
}

# build_dir FEATURE: the build folder of FEATURE's kernel for $KVER, the
# compiler (MRB_CC), the rustc (MRB_RUSTC), the preemption model (MRB_RT) and
# the profile (MRB_PROFILE).
build_dir() {
	echo "$MRB_CACHE/build-$KVER-$1$CC_SUFFIX${MRB_RUSTC:+-rustc$MRB_RUSTC}$RT_SUFFIX$PROFILE_SUFFIX$KCOV_SUFFIX"
}

# The driver(s) scripts/check tests by default: both, from one test image
# (binder.impl= picks the driver at boot), and every test must give the same
# result on C and on Rust (apart from the known defects of C,
# userspace/known-defects-$KVER.txt).
DEFAULT_DRIVER=${DEFAULT_DRIVER:-both}

# kernel_feature DRIVER: the feature (.scc) whose kernel serves DRIVER on
# $KVER. On 6.12 one test image carries both drivers (binder.impl= picks);
# "rust-only" is the Rust driver in a kernel without the C one (the
# rust-binder-only feature). On 7.2 upstream makes the Rust driver exclude
# the C one: two images, no patches of ours.
kernel_feature() {
	case "$KVER:$1" in
	6.12:rust-only) echo rust-binder-only-debug ;;
	6.12:*) echo rust-binder-debug ;;
	*:c) echo binder-c ;;
	*:rust) echo rust-binder-upstream ;;
	esac
}

# results_name DRIVER: the folder of build/results/ for DRIVER on $KVER.
results_name() {
	if [ "$KVER" = 6.12 ]; then echo "$1-arm64$CC_SUFFIX$RT_SUFFIX$PROFILE_SUFFIX"; else echo "$1-arm64-$KVER$CC_SUFFIX$PROFILE_SUFFIX"; fi
}

# config_survived CONFIG FRAG...: every option the fragments ask for (set or
# "is not set") must be so in CONFIG, after Kconfig's dependencies (when
# fragments disagree, the later one wins, as in merge_config.sh). Names each
# option that did not survive, with the fragment that asked; fails if any.
config_survived() {
	_cfg=$1
	shift
	_bad=0
	_wanted=$(cat "$@" | sed -nE 's/^(CONFIG_[A-Za-z0-9_]+)=.*/\1 &/p; s/^# (CONFIG_[A-Za-z0-9_]+) is not set/\1 &/p' |
		awk '{ opt = $1; sub(/^[^ ]+ /, ""); want[opt] = $0; if (!(opt in seen)) { seen[opt] = 1; order[++n] = opt } }
		END { for (i = 1; i <= n; i++) print want[order[i]] }')
	while IFS= read -r _want; do
		[ -n "$_want" ] || continue
		_opt=$(echo "$_want" | sed -E 's/^# //; s/[= ].*//')
		_have=$(grep -E "^(# )?$_opt[= ]" "$_cfg" || echo "# $_opt is not set")
		if [ "$_have" != "$_want" ]; then
			echo "$(grep -lE "^(# )?$_opt[= ]" "$@" | xargs -n1 basename | tail -1): asked for '$_want', got '$_have'" >&2
			_bad=1
		fi
	done <<EOF_WANTED
$_wanted
EOF_WANTED
	return $_bad
}

# kernel_config TREE O FRAG...: configure the kernel of TREE in build folder O
# as the harness does: allnoconfig plus the fragments, in order
# (merge_config.sh -n; its log in O/merge_config.log). Kconfig leaves an
# unchanged .config alone, so running it again rebuilds nothing.
kernel_config() {
	_tree=$1 _o=$2
	shift 2
	(cd "$_tree" && scripts/kconfig/merge_config.sh -n -O "$_o" "$@") >"$_o/merge_config.log" 2>&1 ||
		{ cat "$_o/merge_config.log" >&2; die "merge_config.sh failed"; }
}

# kernel_make TREE O LOG TARGET...: make TARGET(s) of TREE in O with the
# toolchain above, all output into LOG; fails as make does.
kernel_make() {
	_tree=$1 _o=$2 _log=$3
	shift 3
	# Kbuild does not notice a new bindgen: regenerate the bindings when it changes.
	_tools="$(bindgen --version) / $($RUSTC --version)"
	if [ "$(cat "$_o/.toolchain" 2>/dev/null)" != "$_tools" ]; then
		rm -f "$_o"/rust/bindings/bindings_generated*.rs "$_o"/rust/uapi/uapi_generated.rs
		echo "$_tools" >"$_o/.toolchain"
	fi
	if [ -n "$KCOV_SUFFIX" ]; then
		set -- "RUSTFLAGS_rust_binder.o=$KCOV_RUSTFLAGS" "$@"
	fi
	make -s -C "$_tree" O="$_o" -j"$JOBS" RUSTC="$RUSTC" RUSTDOC="$RUSTDOC" "$@" >"$_log" 2>&1
}
