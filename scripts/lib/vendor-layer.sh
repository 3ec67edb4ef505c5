# shellcheck shell=bash
# A BSP vendor's layer as docs/yocto.md ("Adding the layer to a BSP") tells a
# vendor to write it: its own 6.12 kernel recipe on oe-core's linux-yocto.inc,
# and a bbappend of it in one of the forms the docs offer. scripts/check-layer
# parses it in each form; scripts/yocto-build builds it. Needs $ycache (the
# Yocto trees) and $top (this layer).
# shellcheck disable=SC2154 # ycache and top: set by the script that sources this

# vendor_pins RELEASE: "KBRANCH LINUX_VERSION SRCREV_machine SRCREV_meta" of
# the release's own linux-yocto_6.12.bb; on a release without one (wrynose),
# of this layer's linux-yocto-rust-binder_6.12.bb, which is modelled on it.
vendor_pins() {
	local recipe=$ycache/$1/openembedded-core/meta/recipes-kernel/linux/linux-yocto_6.12.bb v out=
	[ -d "$ycache/$1/poky" ] && recipe=$ycache/$1/poky/meta/recipes-kernel/linux/linux-yocto_6.12.bb
	[ -f "$recipe" ] || recipe=$top/recipes-kernel/linux/linux-yocto-rust-binder_6.12.bb
	for v in KBRANCH LINUX_VERSION SRCREV_machine SRCREV_meta; do
		v=$(sed -n "s/^$v ?= \"\\([^\"]*\\)\"\$/\\1/p" "$recipe" | head -n 1)
		[ -n "$v" ] || return 1
		out="$out $v"
	done
	echo "${out# }"
}

# vendor_layer DIR RELEASE FORM: the vendor's layer, bbappend in FORM
vendor_layer() {
	local dir=$1 kbranch version machine meta
	# shellcheck disable=SC2046
	set -- "$1" "$2" "$3" $(vendor_pins "$2")
	[ $# -eq 7 ] || { echo "vendor-layer: no linux-yocto 6.12 pins found for $2"; return 1; }
	kbranch=$4 version=$5 machine=$6 meta=$7
	mkdir -p "$dir/conf" "$dir/recipes-kernel/linux"
	cat >"$dir/conf/layer.conf" <<-LAYER
	# A BSP vendor's layer (docs/yocto.md, "Adding the layer to a BSP")
	BBPATH .= ":\${LAYERDIR}"
	BBFILES += "\${LAYERDIR}/recipes-*/*/*.bb \${LAYERDIR}/recipes-*/*/*.bbappend"
	BBFILE_COLLECTIONS += "vendor-bsp"
	BBFILE_PATTERN_vendor-bsp = "^\${LAYERDIR}/"
	BBFILE_PRIORITY_vendor-bsp = "7"
	LAYERDEPENDS_vendor-bsp = "core"
	LAYERSERIES_COMPAT_vendor-bsp = "$2"
	LAYER
	cat >"$dir/recipes-kernel/linux/linux-vendor_6.12.bb" <<-RECIPE
	# A vendor's 6.12 kernel on oe-core's linux-yocto.inc, pinned as the
	# release's linux-yocto 6.12 ($version).
	SUMMARY = "A BSP vendor's linux-yocto based 6.12 kernel"
	LICENSE = "GPL-2.0-only"
	LIC_FILES_CHKSUM = "file://COPYING;md5=6bc538ed5bd9a7fc9398086aedcd7e46"

	KBRANCH ?= "$kbranch"

	require recipes-kernel/linux/linux-yocto.inc

	SRCREV_machine ?= "$machine"
	SRCREV_meta ?= "$meta"

	SRC_URI = "git://git.yoctoproject.org/linux-yocto.git;name=machine;branch=\${KBRANCH};protocol=https \\
	           git://git.yoctoproject.org/yocto-kernel-cache;type=kmeta;name=meta;branch=yocto-6.12;destsuffix=\${KMETA};protocol=https"

	LINUX_VERSION ?= "$version"
	PV = "\${LINUX_VERSION}+git"

	KMETA = "kernel-meta"
	KCONF_BSP_AUDIT_LEVEL = "1"

	COMPATIBLE_MACHINE = "^(qemuarm64|qemux86-64)\$"
	RECIPE
	case $3 in
	inherit)
		echo 'inherit rust_binder_kernel' ;;
	require)
		# shellcheck disable=SC2016
		echo 'require ${@bb.utils.contains('"'DISTRO_FEATURES', 'rust-binder', 'recipes-kernel/linux/linux-yocto-rust-binder.inc', ''"', d)}' ;;
	esac >"$dir/recipes-kernel/linux/linux-vendor_%.bbappend"
}
