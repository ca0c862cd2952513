# Sourced by the CLI test scripts (after they set `cli`): failure counting and the check that a
# bad request is a one-line error with a non-zero exit.
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# expect_error NEEDLE ARGS...: `fp4gemm ARGS` must exit non-zero with at most two lines of output
# (CLI11 adds a "--help" hint to usage errors), one of them containing NEEDLE.
expect_error() {
  local needle=$1
  shift
  local output
  output=$("$cli" "$@" 2>&1)
  local status=$?
  [ $status -ne 0 ] || fail "'fp4gemm $*' should fail"
  [ "$(echo "$output" | wc -l)" -le 2 ] || fail "'fp4gemm $*' error is not one line: $output"
  grep -qF -- "$needle" <<< "$output" || fail "'fp4gemm $*' error lacks '$needle': $output"
}
