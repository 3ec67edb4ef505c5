# Progress lines for the harness's long steps; sourced, not run.
# shellcheck shell=sh
#
#	progress_start LABEL [FUNCTION]
#	... the long step ...
#	progress_stop
#
# While the step runs, every $MRB_PROGRESS seconds (default 60; 0 turns it
# off) a line "== LABEL: 2m00s[, what FUNCTION prints]" goes to stderr, so a
# cold kernel build or a boot never leaves the terminal silent for minutes.
# FUNCTION (a shell function or command, run in the ticker) says how far the
# step is. progress_stop ends the ticker and, if it printed anything, says
# "== LABEL: done in 6m12s". Nothing goes to stdout (callers capture it), and
# the ticker ends by itself within seconds if its script dies without
# calling progress_stop. One ticker at a time per script.

# elapsed SECONDS: "45s", "6m12s", "1h02m".
elapsed() {
	if [ "$1" -lt 60 ]; then
		echo "${1}s"
	elif [ "$1" -lt 3600 ]; then
		printf '%dm%02ds\n' $(($1 / 60)) $(($1 % 60))
	else
		printf '%dh%02dm\n' $(($1 / 3600)) $(($1 % 3600 / 60))
	fi
}

progress_start() {
	_p_label=$1 _p_what=${2:-} _p_t0=$(date +%s) _p_pid=""
	_p_every=${MRB_PROGRESS:-60}
	[ "$_p_every" != 0 ] || return 0
	_p_mark=$(mktemp)
	# The ticker checks every 2 s that this script still runs ($$ is the
	# script's pid in the subshell too) and prints every $_p_every seconds.
	(
		next=$((_p_t0 + _p_every))
		while kill -0 $$ 2>/dev/null; do
			sleep 2
			now=$(date +%s)
			[ "$now" -ge "$next" ] || continue
			next=$((next + _p_every))
			what=""
			[ -z "$_p_what" ] || what=$($_p_what 2>/dev/null) || true
			kill -0 $$ 2>/dev/null || break
			echo "== $_p_label: $(elapsed $((now - _p_t0)))${what:+, $what}" >&2
			: >"$_p_mark"
		done
		rm -f "$_p_mark"
	) </dev/null >/dev/null &
	_p_pid=$!
	rm -f "$_p_mark"
}

progress_stop() {
	[ -n "${_p_pid:-}" ] || return 0
	kill "$_p_pid" 2>/dev/null || true
	wait "$_p_pid" 2>/dev/null || true
	_p_pid=""
	if [ -e "$_p_mark" ]; then
		rm -f "$_p_mark"
		echo "== $_p_label: done in $(elapsed $(($(date +%s) - _p_t0)))" >&2
	fi
}
