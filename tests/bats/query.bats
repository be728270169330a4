#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-2-Clause
# lake-query over real lake tables: imports, SELECT in every format, INSERT
# with FILE values, the FILE functions, pinning and the segment cache.  The
# source is a parameter (tests/run runs this against the embedded registry
# and against a real lake-metasrv).

load helpers/common
load helpers/source

setup_file() { source_setup_file; }
teardown_file() { source_teardown_file; }

setup() {
  source_setup
  lake-catalog create-namespace docs
  lake-catalog create docs.papers 'title TEXT, year INTEGER, pdf FILE'
}

teardown() {
  source_teardown
}

@test "--import CSV, then SELECT in tsv, csv, json, jsonl and table" {
  printf 'title,year\nA lake,2026\n"B, with ""quotes""",2025\n' >"$T/in.csv"
  run --separate-stderr lake-query --import docs.papers <"$T/in.csv"
  assert_success
  [[ $stderr == *"2 rows appended"* ]]
  run --separate-stderr lake-query -c "SELECT title, year FROM docs.papers ORDER BY year"
  assert_success
  assert_output $'B, with "quotes"\t2025\nA lake\t2026'
  run lake-query -H -f csv -c "SELECT title, year FROM docs.papers ORDER BY year"
  assert_output $'title,year\n"B, with ""quotes""",2025\nA lake,2026'
  run lake-query -f jsonl -c "SELECT title, year, pdf FROM docs.papers ORDER BY year"
  assert_line --index 0 '{"title":"B, with \"quotes\"","year":2025,"pdf":null}'
  run lake-query -f json -c "SELECT count(*) AS n FROM docs.papers"
  assert_output $'[\n{"n":2}\n]'
  run lake-query -f table -c "SELECT title, year FROM docs.papers ORDER BY year"
  assert_line --index 0 --regexp '^title +year$'
  assert_line --index 2 --regexp '^B, with "quotes"  2025$'
}

@test "--import JSON Lines is detected by its first byte; a bad line is 65 naming it, nothing appended" {
  printf '{"title":"x","year":1}\n{"title":"y","year":2}\n' | lake-query -q --import docs.papers
  run lake-query -c "SELECT sum(year) FROM docs.papers"
  assert_output 3
  local v0
  v0=$(lake-catalog resolve docs.papers | jq .version)
  run --separate-stderr lake-query --import docs.papers <<<$'{"title":"z","year":3}\n{"title":"w","year":"abc"}'
  assert_failure 65
  [[ $stderr == *"line 2"* ]] || fail "no line number: $stderr"
  assert_equal "$(lake-catalog resolve docs.papers | jq .version)" "$v0"
  run lake-query -c "SELECT sum(year) FROM docs.papers"
  assert_output 3
}

@test "INSERT with a FILE value; the FILE functions; rows piped to lake-get" {
  printf 'hello\n' >"$T/a.txt"
  f=$(lake-put "$T/a.txt")
  run --separate-stderr lake-query -c "INSERT INTO docs.papers VALUES ('doc', 2026, '$f')"
  assert_success
  run lake-query -c "SELECT fl_get_size(pdf), fl_get_file_name(pdf), fl_get_etag(pdf) = '$(json_field sha256 "$f")' FROM docs.papers"
  assert_output $'6\ta.txt\t1'
  run lake-query -f jsonl -c "SELECT pdf FROM docs.papers"
  [[ $output == '{"pdf":{"location":'* ]] || fail "FILE not an object: $output"
  run bash -c "lake-query -f jsonl -c 'SELECT pdf FROM docs.papers' | lake-get"
  assert_success
  assert_output hello
  mkdir "$T/out"
  run bash -c "lake-query -f jsonl -c 'SELECT pdf FROM docs.papers WHERE title LIKE \"d%\"' | lake-get -o '$T/out'"
  assert_success
  cmp "$T/a.txt" "$T/out/a.txt"
}

@test "a segment and a FILE object whose bytes were replaced in the stage fail their SHA-256: 65, one line, nothing used" {
  # remote-s3: replaced in the bucket by another S3 client, behind lake's back
  printf 'hello\n' >"$T/a.txt"
  f=$(lake-put "$T/a.txt")
  lake-query -c "INSERT INTO docs.papers VALUES ('doc', 2026, '$f')"
  v=$(lake-query -f jsonl -c "SELECT pdf FROM docs.papers" | jq -c .pdf)
  # the FILE object: other bytes of the same size
  floc=$(json_field location "$v")
  printf 'HELLO\n' >"$T/other"
  stage_replace "$floc" "$T/other"
  mkdir "$T/out"
  run_to "$T/got" lake-get -o "$T/out" "$v"
  assert_error lake-get 65 "$floc: SHA-256 mismatch (expected $(json_field sha256 "$f"), got $(sha_of "$T/other"))"
  assert_equal "$(ls -A "$T/out")" ""
  # the segment: other bytes of the same size, asked for with an empty
  # segment cache
  seg=$(lake-catalog resolve docs.papers | jq -c '.segments[0]')
  loc=$(jq -r .location <<<"$seg")
  head -c "$(jq -r .size <<<"$seg")" /dev/urandom >"$T/seg"
  stage_replace "$loc" "$T/seg"
  rm -rf "$XDG_CACHE_HOME/lake/segments"
  run_to "$T/rows" lake-query -c "SELECT title FROM docs.papers"
  assert_error lake-query 65 "$loc: SHA-256 mismatch (expected $(jq -r .sha256 <<<"$seg"), got $(sha_of "$T/seg"))"
  assert_equal "$(cat "$T/rows")" ""
  assert_equal "$(find "$XDG_CACHE_HOME" -name "$(jq -r .sha256 <<<"$seg")*")" ""
}

@test "a FILE column refuses a value outside the stage or malformed; nothing appended" {
  local v0
  v0=$(lake-catalog resolve docs.papers | jq .version)
  bad='{"location":"file:///etc/passwd","size":1,"sha256":"'$(printf '%064d' 0)'"}'
  run --separate-stderr lake-query -c "INSERT INTO docs.papers VALUES ('x', 1, '$bad')"
  assert_failure
  [[ $stderr == *"outside the managed stage"* ]] || fail "$stderr"
  run --separate-stderr lake-query -c "INSERT INTO docs.papers VALUES ('x', 1, 'not json')"
  assert_failure
  assert_equal "$(lake-catalog resolve docs.papers | jq .version)" "$v0"
}

@test "INSERT ... SELECT appends one version; UPDATE and DELETE make one version each" {
  printf 'title,year\na,2025\nb,2025\n' | lake-query -q --import docs.papers
  v1=$(lake-catalog resolve docs.papers | jq .version)
  run lake-query -c "INSERT INTO docs.papers SELECT title, year + 1, pdf FROM docs.papers WHERE year = 2025"
  assert_success
  assert_equal "$(lake-catalog resolve docs.papers | jq .version)" $((v1 + 1))
  run lake-query -c "SELECT year, count(*) FROM docs.papers GROUP BY year"
  assert_output $'2025\t2\n2026\t2'
  run --separate-stderr lake-query -c "UPDATE docs.papers SET year = 1 WHERE year = 2026"
  assert_equal "exit $status: $stderr" "exit 0: lake-query: docs.papers: 2 rows updated"
  run --separate-stderr lake-query -c "DELETE FROM docs.papers WHERE year = 2025"
  assert_equal "exit $status: $stderr" "exit 0: lake-query: docs.papers: 2 rows deleted"
  assert_equal "$(lake-catalog resolve docs.papers | jq .version)" $((v1 + 3))
  run lake-query -c "SELECT year, count(*) FROM docs.papers GROUP BY year"
  assert_output $'1\t2'
}

@test "concurrent INSERTs all land: a conflict is retried against the new version" {
  local pids=() i
  for i in $(seq 6); do
    lake-query -c "INSERT INTO docs.papers VALUES ('t$i', $i, NULL)" 2>"$T/err.$i" &
    pids+=($!)
  done
  for i in "${!pids[@]}"; do wait "${pids[$i]}" || fail "insert $i failed: $(cat "$T/err.$((i + 1))")"; done
  run lake-query -c "SELECT count(*), sum(year) FROM docs.papers"
  assert_output $'6\t21'
  assert_equal "$(lake-catalog resolve docs.papers | jq .version)" 6
}

@test "segments are fetched once: a second query makes no stage request" {
  printf 'title,year\na,1\n' | lake-query -q --import docs.papers
  run --separate-stderr env LAKE_TRACE=1 lake-query -c "SELECT count(year) FROM docs.papers"
  assert_output 1
  [ "$(grep -c '^trace: stage GET' <<<"$stderr")" -eq 1 ]
  run --separate-stderr env LAKE_TRACE=1 lake-query -c "SELECT count(year) FROM docs.papers"
  assert_output 1
  [ "$(grep -c '^trace: stage GET' <<<"$stderr")" -eq 0 ]
}

@test "a statement that names no lake table reads no directory or table; unknown tables 66, bad SQL 65" {
  lake-query -c "SELECT 0" >/dev/null # a fresh cache (and, remote, the stage from whoami)
  run --separate-stderr env LAKE_TRACE=1 lake-query -c "SELECT 1 + 1"
  assert_output 2
  [ "$(grep -c '^trace: source' <<<"$stderr")" -eq 0 ]
  run --separate-stderr lake-query -c "SELECT * FROM docs.nope"
  assert_failure 66
  assert_equal "$stderr" "lake-query: no such table: docs.nope"
  run --separate-stderr lake-query -c "SELEC 1"
  assert_failure 65
  lake-catalog create docs.all 'n INTEGER' # a keyword: only quoted in SQL
  run lake-query -c 'INSERT INTO "docs"."all" VALUES (1); SELECT count(*) FROM [docs] . `all`, "docs".papers'
  assert_success
  assert_output 0
  [[ $stderr == "lake-query: "*"syntax error"* ]] || fail "$stderr"
}

@test "read-your-writes: the INSERT's version is what the next query sees, even with a long TTL" {
  export LAKE_CATALOG_TTL=3600
  lake-query -c "SELECT count(*) FROM docs.papers" >/dev/null # resolves and caches version 0
  lake-query -c "INSERT INTO docs.papers VALUES ('x', 1, NULL)"
  run lake-query -c "SELECT count(*) FROM docs.papers"
  assert_output 1
}

@test "INSERTs inside BEGIN ... COMMIT append once, at COMMIT" {
  run --separate-stderr lake-query -c "BEGIN; INSERT INTO docs.papers(title) VALUES ('x'); INSERT INTO docs.papers(title) VALUES ('y'); COMMIT"
  assert_success
  assert_equal "$(lake-catalog resolve docs.papers | jq .version)" 1
  run lake-query -c "SELECT group_concat(title) FROM docs.papers"
  assert_output "x,y"
}

@test "lake-put --table adds one row per object in one append; bad --set or --column changes nothing" {
  printf a >"$T/a.pdf"; printf bb >"$T/b.pdf"
  run --separate-stderr lake-put --table docs.papers --set year=2026 --set title=scan "$T/a.pdf" "$T/b.pdf"
  assert_success
  assert_equal "${#lines[@]}" 2
  assert_equal "$(lake-catalog resolve docs.papers | jq .version)" 1
  run lake-query -c "SELECT title, year, fl_get_file_name(pdf), fl_get_size(pdf) FROM docs.papers ORDER BY 4"
  assert_output $'scan\t2026\ta.pdf\t1\nscan\t2026\tb.pdf\t2'
  run --separate-stderr lake-put --table docs.papers --set year=abc "$T/a.pdf"
  assert_failure 65
  [[ $stderr == *"column year"* ]] || fail "$stderr"
  run --separate-stderr lake-put --table docs.papers --set nope=1 "$T/a.pdf"
  assert_failure 64
  run --separate-stderr lake-put --table docs.papers --column title "$T/a.pdf"
  assert_failure 64
  run --separate-stderr lake-put --table docs.nope "$T/a.pdf"
  assert_failure 66
  assert_equal "$(lake-catalog resolve docs.papers | jq .version)" 1
}

@test "lake-put --table checks every --column and --set before reading any input, with plain messages" {
  lake-catalog create docs.nofile 'title TEXT, year INTEGER'
  head -c 3000000 /dev/zero >"$T/big"
  local v0
  v0=$(lake-catalog resolve docs.papers | jq .version)
  # each refusal: one line, the documented status, nothing stored or printed
  refused() { # refused CODE TEXT ARGS...: lake-put ARGS $T/big is refused so
    local code=$1 text=$2
    shift 2
    run --separate-stderr lake-put "$@" - <"$T/big"
    assert_error lake-put "$code" "$text"
    assert_equal "$output" ""
    assert_no_objects
  }
  refused 65 "--set year=abc: column year: 'abc' is not an INTEGER" --table docs.papers --set year=abc
  refused 65 "--set year=: column year: '' is not an INTEGER" --table docs.papers --set year=
  refused 65 "--set year=1.5: column year" --table docs.papers --set year=1.5
  refused 64 "--set nope=1: docs.papers has no column 'nope'" --table docs.papers --set nope=1
  refused 64 "--set year: not COL=VALUE" --table docs.papers --set year
  refused 64 "--set pdf=x: docs.papers.pdf is the FILE column that receives each object" --table docs.papers --set pdf=x
  refused 64 "--column nope: docs.papers has no column 'nope'" --table docs.papers --column nope
  refused 64 "--column year: docs.papers.year is INTEGER, not FILE" --table docs.papers --column year
  refused 64 "docs.nofile has no FILE column" --table docs.nofile
  assert_equal "$(lake-catalog resolve docs.papers | jq .version)" "$v0"
  # and a good --set still works, on a value of the column's type
  run --separate-stderr lake-put --table docs.papers --column pdf --set year=-7 --set title= - <"$T/big"
  assert_success
  run lake-query -c "SELECT year, quote(title), fl_get_size(pdf) FROM docs.papers"
  assert_output $'-7\t\'\'\t3000000'
}
