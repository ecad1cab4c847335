# Shared helpers of the shell test suites (not a suite: test/*.sh are the suites). Source it
# after setting $tmp (a scratch folder) and fail=0; each helper prints "ok   <what>" or "FAIL <what>", and a failure sets fail=1.
ok() { echo "ok   $1"; }
bad() { # bad <description> [detail]: the detail (a command's output), its first 12 lines indented
  echo "FAIL $1"; [ -z "${2:-}" ] || printf '%s\n' "$2" | head -12 | sed 's/^/     /'; fail=1
}
check() { # check <description> <expected status> <command...>: stdout/stderr in $tmp/out, $tmp/err
  local desc=$1 want=$2; shift 2
  "$@" >"$tmp/out" 2>"$tmp/err"; local got=$?
  if [ "$got" -ne "$want" ]; then
    bad "$desc: exit $got, want $want"; sed 's/^/     /' "$tmp/err" "$tmp/out" | tail -8
  else ok "$desc"; fi
}
has() { # has <description> <file> <substring>
  if grep -qF -- "$3" "$2"; then ok "$1"; else bad "$1: '$3' not in $2"; head -5 "$2" | sed 's/^/     /'; fi
}
matches() { # matches <description> <file> <extended regex>
  if grep -qE -- "$3" "$2"; then ok "$1"; else bad "$1: /$3/ not in $2"; head -5 "$2" | sed 's/^/     /'; fi
}
hasnt() { # hasnt <description> <file> <substring>
  if grep -qF -- "$3" "$2"; then bad "$1: '$3' in $2"; else ok "$1"; fi
}
same() { # same <description> <file> <file>
  if cmp -s "$2" "$3"; then ok "$1"; else bad "$1: $2 and $3 differ" "$(diff -- "$2" "$3" 2>&1)"; fi
}
filecheck_path() { # FileCheck: $FILECHECK, else FileCheck-19 or FileCheck on PATH; empty if none
  command -v "${FILECHECK:-FileCheck-19}" || command -v FileCheck || true
}
missing() { # missing <what is not checked> <why>: a tool CI's machine has (tools/install-deps.sh,
  # the CUDA toolkit) is absent. A failure (CI has every such tool), or a visible skip with FXC_ALLOW_SKIPS=1.
  if [ "${FXC_ALLOW_SKIPS:-}" = 1 ]; then echo "SKIP $1: $2"
  else bad "$1: $2 (CI has it: tools/install-deps.sh, or the CUDA toolkit in /usr/local/cuda; FXC_ALLOW_SKIPS=1 skips instead)"; fi
}
