# Shared by the CLI tests: sourced after `set -u` with the test's arguments
# (<metronome binary> <source dir>). Sets bin, src and a scratch tmp removed on exit; fail counts a
# failed check; expect_error checks one usage error; finish reports and sets the exit status.
bin=$(realpath "$1")
src=$(realpath "$2")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() {
  echo "FAIL: $*"
  fails=$((fails + 1))
}
# expect_error <regex> <args...>: exit 2, stderr matching the regex, nothing on stdout.
expect_error() {
  local want=$1
  shift
  "$bin" "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  if [[ $rc -ne 2 ]] || ! grep -Eq -- "$want" "$tmp/err" || [[ -s "$tmp/out" ]]; then
    fail "metronome $* -> rc=$rc, want exit 2 and /$want/; stderr: $(head -c 600 "$tmp/err")"
  fi
}
# finish <name>: exit 1 if any check failed.
finish() {
  if ((fails)); then
    echo "$1: $fails check(s) failed"
    exit 1
  fi
  echo "$1: all checks passed"
}
