# Shared by the CLI tests: sourced after `set -u` with the test's arguments
# (<metronome binary> <source dir>). Sets bin, src and a scratch tmp removed on exit, with any
# background runs a test adds to bg killed then; fail counts a failed check and cases the checks
# made; expect_error checks one usage error; finish reports and sets the exit status.
bin=$(realpath "$1")
src=$(realpath "$2")
tmp=$(mktemp -d)
bg=()
trap 'for p in "${bg[@]}"; do kill -9 "$p" 2>/dev/null; done; rm -rf "$tmp"' EXIT
fails=0
cases=0
fail() {
  echo "FAIL: $*"
  fails=$((fails + 1))
}
# expect_error <regex> <args...>: exit 2, stderr matching the regex and under 1000 bytes (no value
# is dumped whole), nothing on stdout.
expect_error() {
  [[ $1 == -- ]] && shift  # before a pattern that starts with a dash
  local want=$1
  shift
  cases=$((cases + 1))
  "$bin" "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  if [[ $rc -ne 2 ]] || ! grep -Eq -- "$want" "$tmp/err" || [[ -s "$tmp/out" ]] ||
    (($(wc -c <"$tmp/err") > 1000)); then
    fail "metronome $* -> rc=$rc, want exit 2 and /$want/; stderr: $(head -c 600 "$tmp/err")"
  fi
}
# finish <name>: exit 1 if any check failed.
finish() {
  if ((fails)); then
    echo "$1: $fails of $cases check(s) failed"
    exit 1
  fi
  echo "$1: all $cases checks passed"
}
