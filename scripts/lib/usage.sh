# The usage of the harness's scripts; sourced, not run, by sh and bash alike.
# shellcheck shell=sh
# Sourcing it does nothing but define the function, so a script sources it
# and answers -h/--help before any set-up (scripts/lib/common.sh included).

# usage_from_header FILE: FILE's header comment (the comment lines after the
# shebang, up to the first line that is not a comment) without the leading
# "# " or "#", on stdout. A script's header is its documentation:
#	case "${1:-}" in -h | --help) usage_from_header "$0"; exit 0 ;; esac
usage_from_header() {
	sed -n '1{/^#!/d;}; /^#/!q; s/^# \{0,1\}//; p' "$1"
}
