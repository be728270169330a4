#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-2-Clause
# lake-catalog's DDL and reads, run against the source LAKE_TEST_SOURCE
# names (helpers/source.bash): create-namespace, create (every column
# type), list, show, resolve, drop and status round trips; the catalog
# generation; stable table ids; bad input (names, schemas, existing and
# missing objects) with its exit status and one-line diagnostics, leaving
# the catalog unchanged.

load helpers/common
load helpers/source

setup_file() { source_setup_file; }
teardown_file() { source_teardown_file; }

setup() {
  source_setup
}

teardown() {
  source_teardown
}

# The catalog as the source sees it now: its generation and every table.
catalog_state() {
  echo "generation=$(generation_now)"
  lake-catalog list
}

# --- round trips ------------------------------------------------------------

@test "--if-not-exists: create-namespace and create succeed, changing nothing, when the same exists; another schema is refused" {
  run --separate-stderr lake-catalog create-namespace --if-not-exists docs
  assert_clean_success
  run --separate-stderr lake-catalog create-namespace docs --if-not-exists
  assert_clean_success
  assert_output ""
  run --separate-stderr lake-catalog create --if-not-exists docs.p 'title TEXT, year INTEGER'
  assert_clean_success
  local before
  before=$(catalog_state)
  # the same schema, written differently: the same table
  run --separate-stderr lake-catalog create docs.p ' title text,year   integer' --if-not-exists
  assert_clean_success
  assert_output ""
  assert_equal "$(catalog_state)" "$before"
  assert_equal "$(lake-catalog resolve docs.p | jq .version)" 0

  # another schema: refused, nothing changed, the schema it has is shown
  run --separate-stderr lake-catalog create --if-not-exists docs.p 'title TEXT'
  assert_error lake-catalog 1 "docs.p exists with another schema ('title TEXT, year INTEGER')"
  run --separate-stderr lake-catalog create --if-not-exists docs.p 'year INTEGER, title TEXT'
  assert_error lake-catalog 1 "another schema"
  assert_equal "$(catalog_state)" "$before"

  # without the option an existing one is still an error (1)
  run --separate-stderr lake-catalog create-namespace docs
  assert_error lake-catalog 1 docs
  run --separate-stderr lake-catalog create docs.p 'title TEXT, year INTEGER'
  assert_error lake-catalog 1 docs.p
  # and a missing namespace is still 66
  run --separate-stderr lake-catalog create --if-not-exists nope.p 'a TEXT'
  assert_error lake-catalog 66 nope
  assert_equal "$(catalog_state)" "$before"
}

@test "create-namespace and create print nothing; show gives every column type upper-case" {
  run --separate-stderr lake-catalog create-namespace docs
  assert_clean_success
  assert_output ""

  run --separate-stderr lake-catalog create docs.papers \
    'Title text, year integer, score Real, raw blob, ok boolean, at timestamp, pdf file'
  assert_clean_success
  assert_output ""

  run --separate-stderr lake-catalog show docs.papers
  assert_clean_success
  assert_output "$(printf '%s\t%s\n' Title TEXT year INTEGER score REAL raw BLOB ok BOOLEAN \
    at TIMESTAMP pdf FILE)"

  # upper-case input is already canonical
  run --separate-stderr lake-catalog create docs.upper 'A INTEGER, B REAL, C TEXT, D BLOB, E BOOLEAN, F TIMESTAMP, G FILE'
  assert_clean_success
  run --separate-stderr lake-catalog show docs.upper
  assert_clean_success
  assert_output "$(printf '%s\t%s\n' A INTEGER B REAL C TEXT D BLOB E BOOLEAN F TIMESTAMP G FILE)"
}

@test "show -H adds a header row; show --json prints the schema as a JSON array" {
  make_docs
  run --separate-stderr lake-catalog -H show docs.papers
  assert_clean_success
  assert_output $'column\ttype\ntitle\tTEXT\nyear\tINTEGER\npdf\tFILE'

  # the global options may follow the command too
  run --separate-stderr lake-catalog show docs.papers -H
  assert_clean_success
  assert_line --index 0 $'column\ttype'

  run --separate-stderr lake-catalog --json show docs.papers
  assert_clean_success
  assert_equal "${#lines[@]}" 1
  assert_equal "$(jq -c . <<<"$output")" \
    '[{"name":"title","type":"TEXT"},{"name":"year","type":"INTEGER"},{"name":"pdf","type":"FILE"}]'
}

@test "list prints namespace<TAB>name for every table, sorted bytewise" {
  # created out of order, mixed case, a namespace that prefixes another
  lake-catalog create-namespace zeta
  lake-catalog create-namespace alpha
  lake-catalog create-namespace alpha_2
  lake-catalog create-namespace Beta
  lake-catalog create-namespace empty
  lake-catalog create zeta.a 'x TEXT'
  lake-catalog create alpha.z 'x TEXT'
  lake-catalog create alpha_2.a 'x TEXT'
  lake-catalog create alpha.b 'x TEXT'
  lake-catalog create alpha.B 'x TEXT'
  lake-catalog create alpha._x 'x TEXT'
  lake-catalog create Beta.q 'x TEXT'

  run --separate-stderr lake-catalog list
  assert_clean_success
  assert_output "$(printf '%s\t%s\n' Beta q alpha B alpha _x alpha b alpha z alpha_2 a zeta a)"
  # the same order sort(1) gives in the C locale
  assert_equal "$output" "$(LC_ALL=C sort -t "$(printf '\t')" -k1,1 -k2,2 <<<"$output")"
}

@test "list NS shows one namespace; an empty namespace lists nothing" {
  make_docs
  lake-catalog create-namespace other
  lake-catalog create-namespace empty
  lake-catalog create other.t 'x TEXT'

  run --separate-stderr lake-catalog list docs
  assert_clean_success
  assert_output "$DOCS_LIST"

  run --separate-stderr lake-catalog list other
  assert_clean_success
  assert_output $'other\tt'

  run --separate-stderr lake-catalog list empty
  assert_clean_success
  assert_output ""

  run --separate-stderr lake-catalog list
  assert_clean_success
  assert_output "$DOCS_LIST"$'\nother\tt'
}

@test "list -H adds a header row; list --json prints an array of {namespace, name}" {
  make_docs
  run --separate-stderr lake-catalog -H list
  assert_clean_success
  assert_output $'namespace\tname\n'"$DOCS_LIST"

  run --separate-stderr lake-catalog --json list
  assert_clean_success
  assert_equal "${#lines[@]}" 1
  assert_equal "$(jq -c . <<<"$output")" \
    '[{"namespace":"docs","name":"notes"},{"namespace":"docs","name":"papers"}]'

  run --separate-stderr lake-catalog --json list docs
  assert_clean_success
  assert_equal "$(jq -r 'map(.name) | join(",")' <<<"$output")" "notes,papers"

  # an empty lake: nothing, or an empty array; -H still prints its header
  lake-catalog drop docs.notes
  lake-catalog drop docs.papers
  run --separate-stderr lake-catalog list
  assert_clean_success
  assert_output ""
  run --separate-stderr lake-catalog -H list
  assert_clean_success
  assert_output $'namespace\tname'
  run --separate-stderr lake-catalog --json list
  assert_clean_success
  assert_output "[]"
}

@test "resolve prints the registration: id, version 0, the schema, no segments" {
  make_docs
  run --separate-stderr lake-catalog resolve docs.papers
  assert_clean_success
  assert_equal "${#lines[@]}" 1
  local reg=$output
  jq -e 'type == "object"' <<<"$reg" >/dev/null || fail "not a JSON object: $reg"
  [[ $(jq -r .id <<<"$reg") =~ ^[A-Za-z0-9]+$ ]] || fail "no id: $reg"
  assert_equal "$(jq -c .version <<<"$reg")" 0
  assert_equal "$(jq -c .schema <<<"$reg")" "$(lake-catalog --json show docs.papers)"
  assert_equal "$(jq -c .segments <<<"$reg")" "[]"
  assert_equal "$(jq -r '.namespace + "." + .name' <<<"$reg")" docs.papers

  run --separate-stderr lake-catalog resolve docs.papers --version 0
  assert_clean_success
  assert_equal "$(jq -cS . <<<"$output")" "$(jq -cS . <<<"$reg")"

  run --separate-stderr lake-catalog resolve --version 1 docs.papers
  assert_error lake-catalog 66 docs.papers
  assert_output ""

  # the other table has its own id
  [ "$(table_id docs.notes)" != "$(jq -r .id <<<"$reg")" ] || fail "two tables share an id"
}

@test "drop removes the table from list, show and resolve; dropping twice is 66" {
  make_docs
  run --separate-stderr lake-catalog drop docs.papers
  assert_clean_success
  assert_output ""

  run --separate-stderr lake-catalog list
  assert_clean_success
  assert_output $'docs\tnotes'

  run --separate-stderr lake-catalog show docs.papers
  assert_error lake-catalog 66 docs.papers
  assert_output ""

  run --separate-stderr lake-catalog resolve docs.papers
  assert_error lake-catalog 66 docs.papers
  assert_output ""

  run --separate-stderr lake-catalog resolve docs.papers --version 0
  assert_error lake-catalog 66 docs.papers
  assert_output ""

  run --separate-stderr lake-catalog drop docs.papers
  assert_error lake-catalog 66 docs.papers
  assert_output ""

  # the namespace stays, with its other table; the last drop empties it
  lake-catalog drop docs.notes
  run --separate-stderr lake-catalog list docs
  assert_clean_success
  assert_output ""
  run --separate-stderr lake-catalog drop docs.notes
  assert_error lake-catalog 66 docs.notes
}

@test "table ids are stable across calls and caches; a re-created table gets a new id" {
  make_docs
  local id
  id=$(table_id docs.papers)
  assert_equal "$(table_id docs.papers)" "$id"
  assert_equal "$(lake-catalog --max-age 0 resolve docs.papers | jq -r .id)" "$id"
  assert_equal "$(lake-catalog resolve docs.papers --version 0 | jq -r .id)" "$id"
  # a new host's cache asks the source afresh
  rm -rf "$XDG_CACHE_HOME"
  assert_equal "$(table_id docs.papers)" "$id"
  # other DDL does not disturb it
  lake-catalog create docs.more 'x TEXT'
  lake-catalog drop docs.notes
  assert_equal "$(lake-catalog --max-age 0 resolve docs.papers | jq -r .id)" "$id"

  lake-catalog drop docs.papers
  lake-catalog create docs.papers 'title TEXT'
  local id2
  id2=$(table_id docs.papers)
  [ -n "$id2" ] && [ "$id2" != "$id" ] || fail "re-created table kept id $id"
  run --separate-stderr lake-catalog show docs.papers
  assert_clean_success
  assert_output $'title\tTEXT'
  assert_equal "$(lake-catalog resolve docs.papers | jq -c '[.version, .segments]')" '[0,[]]'
}

@test "a change is visible to the next command at once, whatever the TTL" {
  export LAKE_CATALOG_TTL=3600
  run --separate-stderr lake-catalog list     # caches the empty directory
  assert_clean_success
  assert_output ""
  lake-catalog create-namespace docs
  lake-catalog create docs.papers 'title TEXT'
  run --separate-stderr lake-catalog list
  assert_clean_success
  assert_output $'docs\tpapers'
  lake-catalog drop docs.papers
  run --separate-stderr lake-catalog list
  assert_clean_success
  assert_output ""
  run --separate-stderr lake-catalog show docs.papers
  assert_error lake-catalog 66
}

# --- status and the generation -----------------------------------------------

@test "status prints source, generation, age_s, stale, last_error and endpoint as key=value lines" {
  make_docs
  run --separate-stderr lake-catalog status
  assert_clean_success
  assert_equal "${#lines[@]}" 6
  assert_line --index 0 "source=$SOURCE_NAME"
  assert_line --index 1 --regexp '^generation=[0-9]+$'
  assert_line --index 2 --regexp '^age_s=[0-9]+$'
  assert_line --index 3 "stale=no"
  assert_line --index 4 "last_error="
  # the endpoint that answered: the server's URL, none for the embedded lake
  if [ "$LAKE_TEST_SOURCE" = local ]; then assert_line --index 5 "endpoint="
  else assert_line --index 5 "endpoint=$SOURCE_NAME"; fi
  # the age of the snapshot the DDL just fetched
  [ "${lines[2]#age_s=}" -le 2 ] || fail "age of a snapshot just fetched: ${lines[2]}"

  local tsv_gen=${lines[1]#generation=}
  run --separate-stderr lake-catalog --json status
  assert_clean_success
  assert_equal "${#lines[@]}" 1
  assert_equal "$(jq -r .source <<<"$output")" "$SOURCE_NAME"
  assert_equal "$(jq -c .generation <<<"$output")" "$tsv_gen"
  assert_equal "$(jq -c '.age_s | type' <<<"$output")" '"number"'
  assert_equal "$(jq -c .stale <<<"$output")" false
  assert_equal "$(jq -c .last_error <<<"$output")" '""'

  # an expired snapshot is stale until asked again
  run --separate-stderr lake-catalog --max-age 0 status
  assert_clean_success
  assert_line --index 3 "stale=yes"
}

@test "status with nothing cached: empty generation and age, stale=yes, no call" {
  run --separate-stderr env LAKE_TRACE=1 lake-catalog status
  assert_success
  assert_equal "$(trace_count source)" 0
  assert_output "source=$SOURCE_NAME"$'\ngeneration=\nage_s=\nstale=yes\nlast_error=\nendpoint='
  run --separate-stderr lake-catalog --json status
  assert_clean_success
  assert_equal "$(jq -c '[.generation, .age_s, .stale, .last_error, .endpoint]' <<<"$output")" '[null,null,true,"",null]'
}

@test "the generation rises by exactly one per create-namespace, create and drop" {
  local g0
  g0=$(generation_now)
  [[ $g0 =~ ^[0-9]+$ ]] || fail "no generation: '$g0'"

  lake-catalog create-namespace docs
  assert_equal "$(cached_generation)" $((g0 + 1))
  lake-catalog create docs.papers 'title TEXT'
  assert_equal "$(cached_generation)" $((g0 + 2))
  lake-catalog create docs.notes 'body TEXT'
  assert_equal "$(cached_generation)" $((g0 + 3))
  lake-catalog drop docs.papers
  assert_equal "$(cached_generation)" $((g0 + 4))
  lake-catalog create-namespace more
  assert_equal "$(cached_generation)" $((g0 + 5))
  # the cache holds what the source says
  assert_equal "$(generation_now)" $((g0 + 5))

  # reads do not raise it
  lake-catalog list >/dev/null
  lake-catalog show docs.notes >/dev/null
  lake-catalog resolve docs.notes >/dev/null
  lake-catalog --max-age 0 list >/dev/null
  lake-catalog refresh
  assert_equal "$(generation_now)" $((g0 + 5))

  # and neither does a change that fails
  run lake-catalog drop docs.papers
  assert_failure 66
  run lake-catalog create docs.notes 'body TEXT'
  assert_failure 1
  run lake-catalog create-namespace docs
  assert_failure 1
  assert_equal "$(generation_now)" $((g0 + 5))
}

@test "concurrent changes: each raises the generation once; one of racing creates wins" {
  lake-catalog create-namespace docs
  local g0 i ok=0 exists=0
  g0=$(generation_now)
  local pids=()
  for i in $(seq 12); do
    lake-catalog create "docs.t$i" 'a TEXT' >"$T/out.$i" 2>"$T/err.$i" &
    pids+=($!)
  done
  wait "${pids[@]}" # only these: a test server may be a child too
  for i in $(seq 12); do
    assert_equal "t$i: $(cat "$T/out.$i" "$T/err.$i")" "t$i: "
  done
  assert_equal "$(generation_now)" $((g0 + 12))
  assert_equal "$(lake-catalog list docs | wc -l)" 12

  pids=()
  for i in $(seq 8); do
    (
      rc=0
      lake-catalog create docs.same 'a TEXT' 2>"$T/same.err.$i" || rc=$?
      echo $rc >"$T/same.rc.$i"
    ) &
    pids+=($!)
  done
  wait "${pids[@]}"
  for i in $(seq 8); do
    case $(cat "$T/same.rc.$i") in
      0) ok=$((ok + 1)) ;;
      1) exists=$((exists + 1))
         assert_equal "$(wc -l <"$T/same.err.$i")" 1
         assert_equal "$(cat "$T/same.err.$i")" "$(grep '^lake-catalog: .*docs.same' "$T/same.err.$i")" ;;
      *) fail "create $i exited $(cat "$T/same.rc.$i"): $(cat "$T/same.err.$i")" ;;
    esac
  done
  assert_equal "created: $ok, refused: $exists" "created: 1, refused: 7"
  assert_equal "$(generation_now)" $((g0 + 13))
  assert_equal "$(lake-catalog list docs | grep -c $'\tsame$')" 1
}

# --- bad input ----------------------------------------------------------------

@test "an unknown table or namespace is 66 with one line on stderr" {
  make_docs
  run --separate-stderr lake-catalog show docs.nope
  assert_error lake-catalog 66 docs.nope
  assert_output ""
  run --separate-stderr lake-catalog show nons.papers
  assert_error lake-catalog 66 nons.papers
  assert_output ""
  run --separate-stderr lake-catalog resolve docs.nope
  assert_error lake-catalog 66 docs.nope
  assert_output ""
  run --separate-stderr lake-catalog resolve nons.papers --version 0
  assert_error lake-catalog 66 nons.papers
  assert_output ""
  run --separate-stderr lake-catalog list nons
  assert_error lake-catalog 66 nons
  assert_output ""
  run --separate-stderr lake-catalog drop docs.nope
  assert_error lake-catalog 66 docs.nope
  run --separate-stderr lake-catalog drop nons.papers
  assert_error lake-catalog 66 nons.papers
}

@test "create in a missing namespace is 66 and creates nothing" {
  make_docs
  local before
  before=$(catalog_state)
  run --separate-stderr lake-catalog create nons.t 'x TEXT'
  assert_error lake-catalog 66 nons
  assert_output ""
  assert_equal "$(catalog_state)" "$before"
  run --separate-stderr lake-catalog list nons
  assert_failure 66
}

@test "a name that breaks [A-Za-z_][A-Za-z0-9_]* (at most 128 bytes) is 64 and creates nothing" {
  make_docs
  local before long128 long129 q
  before=$(catalog_state)
  long128=$(printf 'a%.0s' $(seq 128))
  long129=${long128}b

  for q in docs.x-y docs.1abc "docs.$long129" docs. .papers docs 'docs.a b' docs.a.b \
           "x-y.t" "1abc.t" "$long129.t"; do
    echo "# create '$q'"
    run --separate-stderr lake-catalog create "$q" 'x TEXT'
    assert_error lake-catalog 64
    assert_output ""
  done
  for q in x-y 1abc "$long129" "" 'a b' a.b; do
    echo "# create-namespace '$q'"
    run --separate-stderr lake-catalog create-namespace "$q"
    assert_error lake-catalog 64
    assert_output ""
  done
  # the messages name what was refused
  run --separate-stderr lake-catalog create docs.x-y 'x TEXT'
  assert_error lake-catalog 64 docs.x-y
  run --separate-stderr lake-catalog create-namespace 1abc
  assert_error lake-catalog 64 1abc
  assert_equal "$(catalog_state)" "$before"

  # reads refuse them the same way
  run --separate-stderr lake-catalog show docs.x-y
  assert_error lake-catalog 64
  run --separate-stderr lake-catalog resolve 1abc.t
  assert_error lake-catalog 64
  run --separate-stderr lake-catalog list x-y
  assert_error lake-catalog 64
  run --separate-stderr lake-catalog drop "docs.$long129"
  assert_error lake-catalog 64

  # 128 bytes is the limit, not over it
  run --separate-stderr lake-catalog create "docs.$long128" 'x TEXT'
  assert_clean_success
  run --separate-stderr lake-catalog create-namespace "_$(printf 'N%.0s' $(seq 127))"
  assert_clean_success
  run --separate-stderr lake-catalog list docs
  assert_clean_success
  assert_line $'docs\t'"$long128"
}

@test "a bad schema is 64 and creates nothing" {
  lake-catalog create-namespace docs
  local before s
  before=$(catalog_state)
  for s in 'a TEXT, b INT' 'a FLOAT' 'a TEXT, a TEXT' 'a TEXT, A INTEGER' 'a TEXT, A INT' \
           '' '   ' ',' 'a' 'a TEXT, b' 'a TEXT INTEGER' '1a TEXT' 'a-b TEXT' 'a TEXT,, b TEXT'; do
    echo "# schema '$s'"
    run --separate-stderr lake-catalog create docs.t "$s"
    assert_error lake-catalog 64
    assert_output ""
  done
  # the message names the culprit
  run --separate-stderr lake-catalog create docs.t 'a TEXT, b FLOAT'
  assert_error lake-catalog 64 FLOAT
  run --separate-stderr lake-catalog create docs.t 'a TEXT, Dup INTEGER, dUP TEXT'
  assert_error lake-catalog 64 dUP
  # a missing schema argument is a usage error too
  run --separate-stderr lake-catalog create docs.t
  assert_error lake-catalog 64

  assert_equal "$(catalog_state)" "$before"
  run --separate-stderr lake-catalog show docs.t
  assert_error lake-catalog 66 docs.t
}

@test "creating a table that exists is 1 and leaves it as it was" {
  make_docs
  local reg before
  reg=$(lake-catalog --max-age 0 resolve docs.papers)
  before=$(catalog_state)

  run --separate-stderr lake-catalog create docs.papers 'other TEXT'
  assert_error lake-catalog 1 docs.papers
  assert_output ""
  # the same definition is no excuse
  run --separate-stderr lake-catalog create docs.papers 'title TEXT, year INTEGER, pdf FILE'
  assert_error lake-catalog 1 docs.papers

  assert_equal "$(catalog_state)" "$before"
  # same id, same schema, as the source tells it (--max-age 0 asks)
  assert_equal "$(lake-catalog --max-age 0 resolve docs.papers | jq -cS .)" "$(jq -cS . <<<"$reg")"
  run --separate-stderr lake-catalog --max-age 0 show docs.papers
  assert_clean_success
  assert_output $'title\tTEXT\nyear\tINTEGER\npdf\tFILE'
}

@test "creating a namespace that exists is 1 and changes nothing" {
  make_docs
  local before
  before=$(catalog_state)
  run --separate-stderr lake-catalog create-namespace docs
  assert_error lake-catalog 1 docs
  assert_output ""
  assert_equal "$(catalog_state)" "$before"
}

@test "usage errors: no command, an unknown command, wrong arguments, bad options are 64" {
  local g0
  g0=$(generation_now)
  run --separate-stderr lake-catalog
  assert_error lake-catalog 64
  run --separate-stderr lake-catalog frobnicate
  assert_error lake-catalog 64 frobnicate
  run --separate-stderr lake-catalog show
  assert_error lake-catalog 64
  run --separate-stderr lake-catalog show docs.a docs.b
  assert_error lake-catalog 64
  run --separate-stderr lake-catalog list a b
  assert_error lake-catalog 64
  run --separate-stderr lake-catalog resolve docs.a --version x
  assert_error lake-catalog 64
  run --separate-stderr lake-catalog resolve docs.a --version -1
  assert_error lake-catalog 64
  run --separate-stderr lake-catalog --max-age soon list
  assert_error lake-catalog 64
  run --separate-stderr lake-catalog list --force
  assert_error lake-catalog 64
  run --separate-stderr lake-catalog --offline create-namespace docs
  assert_error lake-catalog 64
  # none of them touched the catalog
  assert_equal "$(generation_now)" "$g0"
}
