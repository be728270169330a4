#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-2-Clause
# Bad input to lake-put and lake-get: each is the exit status of DESIGN §1,
# exactly one line on stderr prefixed with the program name, nothing on
# stdout, and nothing left under a final name.

load helpers/common

setup() {
  common_setup
  mkdir -p "$T/in" "$T/out"
}

teardown() {
  common_teardown
}

# Put a small text object; sets V (its FILE value) and P (its path).
put_sample() {
  printf 'hello world\n' >"$T/in/sample"
  V=$(lake-put --name sample.txt <"$T/in/sample")
  P=$(loc_path "$(json_field location "$V")")
  assert_file_exists "$P"
}

# ---- lake-put ---------------------------------------------------------------

@test "lake-put: a missing input file is 66" {
  run --separate-stderr lake-put "$T/in/missing"
  assert_error lake-put 66 "$T/in/missing"
  assert_output ""
  assert_no_objects
}

@test "lake-put: a directory as input is 66" {
  mkdir "$T/in/dir"
  run --separate-stderr lake-put "$T/in/dir"
  assert_error lake-put 66 "$T/in/dir"
  assert_output ""
  assert_no_objects
}

@test "lake-put: an unknown option is 64" {
  printf 'x' >"$T/in/x"
  run --separate-stderr lake-put --no-such-option "$T/in/x"
  assert_error lake-put 64 "--no-such-option"
  assert_output ""
  assert_no_objects
}

@test "lake-put: a --size that is not a number is 64" {
  run --separate-stderr lake-put --size 12kb </dev/null
  assert_error lake-put 64 "12kb"
  assert_output ""
  assert_no_objects
}

@test "lake-put: a --sha256 mismatch is 65 and leaves no object" {
  printf 'abc' >"$T/in/abc"
  run --separate-stderr lake-put --sha256 "$(printf 'abd' | sha256sum | cut -c1-64)" <"$T/in/abc"
  assert_error lake-put 65 "SHA-256"
  assert_output ""
  assert_no_objects
}

@test "lake-put: a --sha256 mismatch on a file argument leaves no object" {
  head -c 2M /dev/urandom >"$T/in/r"
  run --separate-stderr lake-put --sha256 "$(printf '0%.0s' $(seq 64))" "$T/in/r"
  assert_error lake-put 65 "$T/in/r"
  assert_output ""
  assert_no_objects
}

@test "lake-put: input shorter than --size is 65 and leaves no object" {
  printf 'abc' >"$T/in/abc"
  run --separate-stderr lake-put --size 4 <"$T/in/abc"
  assert_error lake-put 65 "4"
  assert_output ""
  assert_no_objects
}

@test "lake-put: input longer than --size is 65 and leaves no object" {
  printf 'abc' >"$T/in/abc"
  run --separate-stderr lake-put --size 2 <"$T/in/abc"
  assert_error lake-put 65 "2"
  assert_output ""
  assert_no_objects
}

@test "lake-put: a truncated pipe caught by --size (3 MiB of a stated 4 MiB) leaves no object" {
  run --separate-stderr bash -c 'head -c 3M /dev/urandom | lake-put --size 4194304'
  assert_error lake-put 65 "4194304"
  assert_output ""
  assert_no_objects
}

# Past the put's 1 MiB ring, a second thread writes while the input is
# read and hashed (lake-put(1)): a failure found by the reading side stops it.
@test "lake-put: a pipe longer than --size (9 MiB of a stated 5 MiB) is 65 mid-stream and leaves no object" {
  run --separate-stderr bash -c 'head -c 9M /dev/urandom | lake-put --size 5242880'
  assert_error lake-put 65 "stdin: more than the stated 5242880 bytes"
  assert_output ""
  assert_no_objects
}

@test "lake-put: a --sha256 mismatch on a 16 MiB pipe is 65 and leaves no object" {
  head -c 16M /dev/urandom >"$T/in/r"
  local sum other
  sum=$(sha_of "$T/in/r")
  other=$(printf 'other' | sha256sum | cut -c1-64)
  run --separate-stderr bash -c 'cat "$1" | lake-put --sha256 "$2"' _ "$T/in/r" "$other"
  assert_error lake-put 65 "stdin: SHA-256 is $sum, not the stated $other"
  assert_output ""
  assert_no_objects
  # the same bytes with their digest are stored whole
  run --separate-stderr bash -c 'cat "$1" | lake-put --sha256 "$2"' _ "$T/in/r" "$sum"
  assert_clean_success
  assert_equal "$(sha_of "$(loc_path "$(json_field location "$output")")")" "$sum"
}

@test "lake-put: a LAKE_HOME that cannot be created is 1, naming the path" {
  : >"$T/plain"
  export LAKE_HOME="$T/plain/lake"
  run --separate-stderr lake-put </dev/null
  assert_error lake-put 1 "$T/plain/lake"
  assert_output ""
  assert_equal "$(stat -c %s "$T/plain")" 0
  assert_file_not_exists "$T/plain/lake"
}

@test "lake-put: a stage directory that cannot be created is 1, naming the path" {
  put_sample
  # the month directory of the next put is blocked by a regular file
  local month
  month=$(dirname "$P")
  rm -rf "$STAGE/files"
  mkdir -p "$(dirname "$month")"
  : >"$month"
  printf 'x' >"$T/in/x"
  run --separate-stderr lake-put "$T/in/x"
  assert_error lake-put 1 "$month"
  assert_output ""
  assert_equal "$(files_under)" "$month"
  assert_equal "$(stat -c %s "$month")" 0
}

# ---- lake-get: locations outside the stage --------------------------------
# Each is refused before any I/O.  Where the target is ours, it is a FIFO
# with no writer: opening it would block, so "timeout" turning the run into
# 124 would show it was opened.

# refuse_get REF [TEXT...]: 65, one line containing each TEXT, nothing read,
# to stdout and with -o DIR.
refuse_get() {
  local ref=$1
  shift
  run --separate-stderr timeout 10 lake-get "$ref"
  assert_error lake-get 65 "$@"
  assert_output ""
  run --separate-stderr timeout 10 lake-get -o "$T/out" "$ref"
  assert_error lake-get 65 "$@"
  assert_output ""
  assert_equal "$(ls -A "$T/out")" ""
}

# refuse_outside REF [TEXT...]: refuse_get with "outside the managed stage".
refuse_outside() {
  refuse_get "$1" "outside the managed stage" "${@:2}"
}

@test "lake-get: file:///etc/passwd is 65 before any read" {
  refuse_outside file:///etc/passwd "file:///etc/passwd"
  # a FILE value with the right size and digest changes nothing
  refuse_outside "$(file_value_for file:///etc/passwd /etc/passwd)" "file:///etc/passwd"
  # nor does it on stdin
  run --separate-stderr lake-get <<<"file:///etc/passwd"
  assert_error lake-get 65 "file:///etc/passwd" "outside the managed stage"
  assert_output ""
}

@test "lake-get: a path with .. that lexically escapes the stage is 65, nothing opened" {
  put_sample
  mkfifo "$LAKE_HOME/x"
  refuse_outside "file://$STAGE/files/../../x" "file://$STAGE/files/../../x"
  # .. that would stay inside is still refused: no .. at all
  refuse_outside "file://$STAGE/files/../$(realpath --relative-to="$STAGE" "$P")"
}

@test "lake-get: a percent-encoded .. (%2e%2e, %2E%2E) is 65, nothing opened" {
  put_sample
  mkfifo "$LAKE_HOME/x"
  refuse_outside "file://$STAGE/files/%2e%2e/%2e%2e/x"
  refuse_outside "file://$STAGE/files/%2E%2E/%2e%2E/x"
  refuse_outside "file://$STAGE/%2e%2e%2fx"
}

@test "lake-get: a sibling prefix of the stage (\${STAGE}2) is 65 though the file exists" {
  put_sample
  mkdir -p "${STAGE}2/files"
  cp "$P" "${STAGE}2/files/x"
  # only containment can refuse this one: the bytes and digest are right
  refuse_outside "file://${STAGE}2/files/x" "file://${STAGE}2/files/x"
  refuse_outside "$(file_value_for "file://${STAGE}2/files/x" "${STAGE}2/files/x")"
  mkfifo "${STAGE}2/fifo"
  refuse_outside "file://${STAGE}2/fifo"
  # the stage root itself is no object either
  run --separate-stderr timeout 10 lake-get "file://$STAGE"
  assert_error lake-get 65
  assert_output ""
}

@test "lake-get: a symlink inside the stage pointing to /etc/passwd is 65, nothing read" {
  put_sample
  local dir
  dir=$(dirname "$P")
  ln -s /etc/passwd "$dir/evil"
  refuse_get "file://$dir/evil" "file://$dir/evil"
  refuse_get "$(file_value_for "file://$dir/evil" /etc/passwd)"
  # one pointing at a FIFO outside shows it is not even opened
  mkfifo "$T/fifo"
  ln -s "$T/fifo" "$dir/evil2"
  refuse_get "file://$dir/evil2"
}

@test "lake-get: a symlinked directory inside the stage is 65, nothing read" {
  put_sample
  mkdir "$T/outside"
  cp "$P" "$T/outside/x"
  mkfifo "$T/outside/fifo"
  ln -s "$T/outside" "$STAGE/files/link"
  refuse_get "file://$STAGE/files/link/x" "file://$STAGE/files/link/x"
  refuse_get "$(file_value_for "file://$STAGE/files/link/x" "$T/outside/x")"
  refuse_get "file://$STAGE/files/link/fifo"
}

@test "lake-get: non-file:// URLs (s3://, http://) are 65 in local mode" {
  refuse_outside s3://b/k "s3://b/k"
  refuse_outside http://x "http://x"
  refuse_outside "$(file_value_for s3://b/k /etc/passwd)" "s3://b/k"
  refuse_outside "file:relative/x"
}

@test "lake-get: a location that does not exist inside the stage is 66" {
  mkdir -p "$STAGE/files"
  run --separate-stderr lake-get "file://$STAGE/files/2026/12/01M8VJSJF3JXW9YN5R4BJWAF43"
  assert_error lake-get 66 "file://$STAGE/files/2026/12/01M8VJSJF3JXW9YN5R4BJWAF43"
  assert_output ""
}

# ---- lake-get: objects altered in the stage -------------------------------

@test "lake-get: an object altered in place (same size) is 65 on stdout" {
  put_sample
  printf 'HELLO' 1<>"$P"   # overwrite in place: same inode, same size
  assert_equal "$(stat -c %s "$P")" 12
  run --separate-stderr lake-get "$V"
  assert_error lake-get 65 "$(json_field location "$V")" "SHA-256"
}

@test "lake-get: an object altered in place (other size) is 65 on stdout" {
  put_sample
  printf 'hello\n' >"$P"
  run --separate-stderr lake-get "$V"
  assert_error lake-get 65 "$(json_field location "$V")"
  run --separate-stderr lake-get <<<"$V"
  assert_error lake-get 65 "$(json_field location "$V")"
}

@test "lake-get -o: an altered object leaves no file, final or temporary" {
  put_sample
  printf 'HELLO' 1<>"$P"
  run --separate-stderr lake-get -o "$T/out" "$V"
  assert_error lake-get 65 "$(json_field location "$V")"
  assert_output ""
  assert_file_not_exists "$T/out/sample.txt"
  assert_equal "$(ls -A "$T/out")" ""
  # and a larger one (several buffers written before the mismatch shows)
  # (its first byte is not X, so writing X there alters it: random data
  # began with X once in 256 runs, and the test failed on an object intact)
  { printf 'a'; head -c 5M /dev/urandom; } >"$T/in/big"
  local v p
  v=$(lake-put --name big.bin <"$T/in/big")
  p=$(loc_path "$(json_field location "$v")")
  printf 'X' 1<>"$p"
  run --separate-stderr lake-get -o "$T/out" <<<"$v"
  assert_error lake-get 65 "$(json_field location "$v")"
  assert_equal "$(ls -A "$T/out")" ""
}

@test "lake-get -o: an existing file is kept when the object is refused" {
  put_sample
  printf 'keep me\n' >"$T/out/sample.txt"
  printf 'HELLO' 1<>"$P"
  run --separate-stderr lake-get -o "$T/out" "$V"
  assert_error lake-get 65
  assert_equal "$(cat "$T/out/sample.txt")" "keep me"
  assert_equal "$(ls -A "$T/out")" sample.txt
}

# ---- lake-get: malformed REFs, options, directories -----------------------

@test "lake-get: malformed JSON on stdin is 65, naming the line" {
  put_sample
  printf 'second\n' >"$T/in/second"
  local v2
  v2=$(lake-put --name second <"$T/in/second")
  # lines 1 and 3 are fine, 2 is blank, 4 is broken, 5 is never read
  printf '%s\n\n%s\n{"location": "file://x", \n%s\n' "$V" "$v2" "$V" >"$T/refs"
  run_to "$T/got" lake-get <"$T/refs"
  assert_error lake-get 65 "stdin:4"
  [[ ${stderr_lines[0]} != *"stdin:1"* && ${stderr_lines[0]} != *"stdin:3"* ]] ||
    fail "names the wrong line: $stderr"
  # the REFs before the bad line were streamed, nothing after it
  cat "$T/in/sample" "$T/in/second" >"$T/want"
  cmp "$T/want" "$T/got"
}

@test "lake-get: malformed JSON on the first line of stdin is 65, stdin:1" {
  run --separate-stderr lake-get <<<'{not json'
  assert_error lake-get 65 "stdin:1"
  assert_output ""
  run --separate-stderr lake-get -o "$T/out" <<<'{not json'
  assert_error lake-get 65 "stdin:1"
  assert_equal "$(ls -A "$T/out")" ""
}

@test "lake-get: a FILE value with a bad sha256 field is 65" {
  put_sample
  run --separate-stderr lake-get "$(jq -c '.sha256 = "xyz"' <<<"$V")"
  assert_error lake-get 65 "sha256"
  assert_output ""
}

@test "lake-get: an unknown option is 64" {
  put_sample
  run --separate-stderr lake-get --no-such-option "$V"
  assert_error lake-get 64 "--no-such-option"
  assert_output ""
}

@test "lake-get: -o into a directory that does not exist is 66" {
  put_sample
  run --separate-stderr lake-get -o "$T/nope" "$V"
  assert_error lake-get 66 "$T/nope"
  assert_output ""
  assert_file_not_exists "$T/nope"
}

@test "diagnostics fold what they quote: bad UTF-8 and C0 as \\xNN, C1 as \\u00NN, DEL; one line" {
  run --separate-stderr bash -c "printf 'ab\\xff\\x9b31m\\xc2\\x9b31m\\x1b[1m\\x7f\\n' | lake-get"
  assert_error lake-get 65 'stdin:1: ab\xff\x9b31m\u009b31m\x1b[1m\x7f: outside the managed stage'
  run --separate-stderr lake-put --$'a\xc2\x9b\xff\nb'
  assert_error lake-put 64 "unknown option '--a\\u009b\\xff b'"
  run --separate-stderr lake-catalog show $'t.a\xc2\x85\x1b]0;x\x07'
  [ "$status" -ne 0 ]
  assert_equal "${#stderr_lines[@]}" 1
  [[ $stderr == *'t.a\u0085\x1b]0;x\x07'* ]] || fail "not folded: $stderr"
  run --separate-stderr lake-query -c $'SELECT \xc2\x9b1m FROM x'
  [ "$status" -ne 0 ]
  assert_equal "${#stderr_lines[@]}" 1
  # nothing raw left: no byte 0x80-0x9f after C2, no invalid UTF-8, no C0
  ! LC_ALL=C grep -qP '[\x00-\x08\x0b-\x1f\x7f]|\xc2[\x80-\x9f]' <<<"$stderr" || fail "raw: $stderr"
  iconv -f UTF-8 -t UTF-8 <<<"$stderr" >/dev/null
}
