#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-2-Clause
# Grants (issue 29): who may read, write and modify which tables.  A real
# lake-metasrv over TLS (helpers/metasrv), on both registries.
#   - the generated matrix: every action a user's grants scope x the grant
#     it holds (none, on the namespace, on the table, to PUBLIC, to
#     role:user, on the whole catalog, granted then revoked) x the
#     privilege granted, against the table in lake-metasrv(8);
#   - the refusal is one redacted 403 whatever the table's existence;
#   - lake-catalog grant/revoke/grants/whoami, their refusals and exits;
#   - revocation at the authority's next request; a dropped table's
#     grants go with it; lake-query and lake-put as a scoped user.

load helpers/common
load helpers/metasrv

setup() {
  metasrv_setup
  ALICE=$(metasrv_token user alice)
  BOB=$(metasrv_token user bob)
}

teardown() {
  metasrv_stop
  common_teardown
}

# The privilege an action needs of a user (lake-metasrv(8) GRANTS).
privilege_of() {
  case $1 in
    resolve | history) echo read ;;
    append) echo write ;;
    compact | rewrite | rollback | alter | expire) echo modify ;;
  esac
}
SCOPED="resolve history append compact rewrite rollback alter expire"

# A request of ACTION on NS.t at VERSION: append adds alice's segment,
# compact replaces the admin's, rewrite deletes what compact put there.
body_for() {
  local action=$1 ns=$2 v=$3 seg="$STAGE_URL/tables/$2/seg"
  case $action in
    resolve) echo "{\"namespace\":\"$ns\",\"name\":\"t\"}" ;;
    history) echo "{\"namespace\":\"$ns\",\"name\":\"t\",\"limit\":2}" ;;
    append) echo "{\"namespace\":\"$ns\",\"name\":\"t\",\"expected_version\":$v,\"segments\":[$(metasrv_segment "${seg}_alice")],\"files\":[]}" ;;
    compact) echo "{\"namespace\":\"$ns\",\"name\":\"t\",\"expected_version\":$v,\"replace\":[\"${seg}_admin\"],\"segments\":[$(metasrv_segment "${seg}_c")],\"files\":[]}" ;;
    rewrite) echo "{\"namespace\":\"$ns\",\"name\":\"t\",\"expected_version\":$v,\"operation\":\"delete\",\"replace\":[\"${seg}_c\"],\"segments\":[],\"files\":[]}" ;;
    rollback) echo "{\"namespace\":\"$ns\",\"name\":\"t\",\"expected_version\":$v,\"version\":1}" ;;
    alter) echo "{\"namespace\":\"$ns\",\"name\":\"t\",\"operation\":\"add-column\",\"column\":\"c TEXT\"}" ;;
    expire) echo "{\"namespace\":\"$ns\",\"name\":\"t\",\"older_than\":86400}" ;;
  esac
}

# The grant of kind KIND and PRIVILEGE for namespace NS, as "ON TO".
grant_of() {
  case $1 in
    namespace | revoked) echo "$3 alice" ;;
    table) echo "$3.t alice" ;;
    public) echo "$3 PUBLIC" ;;
    role) echo "$3 role:user" ;;
    catalog) echo "* alice" ;;
  esac
}

# lake-catalog WORDS… exits 64 with MESSAGE: refused64 MESSAGE WORDS…
refused64() {
  local want=$1
  shift
  run --separate-stderr lake-catalog "$@"
  assert_equal "$*: exit $status: $stderr" "$*: exit 64: lake-catalog: $want"
}

admin_grant() { # grant|revoke PRIVILEGE ON GRANTEE
  metasrv_post "$ADMIN" "$1" "{\"privilege\":\"$2\",\"on\":\"$3\",\"grantee\":\"$4\"}"
  assert_equal "$1 $2 ON $3 TO $4: HTTP $HTTP_CODE" "$1 $2 ON $3 TO $4: HTTP 200"
}

@test "the grants matrix: every scoped action x no grant, namespace, table, PUBLIC, role:user, catalog, revoked x read, write, modify" {
  local kind priv action ns v on who want
  for kind in none namespace table public role catalog revoked; do
    for priv in read write modify; do
      ns=g_${kind}_$priv
      metasrv_post "$ADMIN" create_namespace "{\"namespace\":\"$ns\"}"
      metasrv_post "$ADMIN" create_table "{\"namespace\":\"$ns\",\"name\":\"t\",\"schema\":[{\"name\":\"a\",\"type\":\"TEXT\"}]}"
      metasrv_post "$ADMIN" append "{\"namespace\":\"$ns\",\"name\":\"t\",\"expected_version\":0,\"segments\":[$(metasrv_segment "$STAGE_URL/tables/$ns/seg_admin")],\"files\":[]}"
      assert_equal "$HTTP_CODE" 200
      on='' who=''
      if [ "$kind" != none ]; then
        read -r on who <<<"$(grant_of "$kind" "$priv" "$ns")"
        admin_grant grant "$priv" "$on" "$who"
        [ "$kind" != revoked ] || admin_grant revoke "$priv" "$on" "$who"
      fi
      v=1
      for action in $SCOPED; do
        echo "# $action with $priv granted ($kind${on:+: ON $on TO $who})"
        metasrv_post "$ALICE" "$action" "$(body_for "$action" "$ns" "$v")"
        want=403
        case $kind in none | revoked) ;; *) [ "$(privilege_of "$action")" != "$priv" ] || want=200 ;; esac
        if [ "$want" = 200 ]; then
          assert_equal "$action ($kind, $priv): HTTP $HTTP_CODE $HTTP_BODY" "$action ($kind, $priv): HTTP 200 $HTTP_BODY"
          case $action in append | compact | rewrite | rollback | alter) v=$((v + 1)) ;; esac
          # bob holds nothing unless the grant is PUBLIC's, role:user's
          metasrv_post "$BOB" "$action" "$(body_for "$action" "$ns" "$v")"
          case $kind in
            public | role)
              # let in: done, or refused only as the table now stands (409:
              # what he replaces is gone; 400: alice added his column)
              case $action:$HTTP_CODE in *:200 | *:409 | alter:400) ;;
                *) fail "bob, with a $kind grant: $action: HTTP $HTTP_CODE $HTTP_BODY" ;; esac
              # (bob's rollback makes a version of its own; his alter clashes)
              [ "$HTTP_CODE" != 200 ] || case $action in rollback | alter) v=$((v + 1)) ;; esac ;;
            *) metasrv_expect_error 403 permission_denied ;;
          esac
        else
          metasrv_expect_error 403 permission_denied
          assert_equal "$(jq -r .error.message <<<"$HTTP_BODY")" "alice holds no $(privilege_of "$action") privilege on $ns.t"
        fi
      done
      # the grant's effect is the table's: the version shows what was let in
      metasrv_post "$ADMIN" resolve "{\"namespace\":\"$ns\",\"name\":\"t\"}"
      case $kind:$priv in
        none:* | revoked:* | *:read) want=1 ;;
        *:write) want=2 ;; # append
        public:modify | role:modify) want=6 ;; # and bob's rollback (his alter clashes)
        *:modify) want=5 ;; # compact, rewrite, rollback, alter
      esac
      assert_equal "$ns: counted $v" "$ns: counted $want"
      assert_equal "$ns: version $(jq .version <<<"$HTTP_BODY")" "$ns: version $want"
      # the catalog-wide and PUBLIC grants would reach the next rounds' tables
      [ "$kind" = none ] || [ "$kind" = revoked ] || admin_grant revoke "$priv" "$on" "$who"
    done
  done
  metasrv_check_errors
}

@test "a user's refusal is the same for a table that exists and one that does not; a namespace grant lets it learn which" {
  lake-catalog create-namespace hr
  lake-catalog create hr.scans 'f FILE'
  local action a b
  for action in resolve history append rewrite alter; do
    metasrv_post "$ALICE" "$action" "$(body_for "$action" hr 0 | sed 's/"name":"t"/"name":"scans"/')"
    metasrv_expect_error 403 permission_denied
    a=$(jq -c '.error | del(.request_id)' <<<"$HTTP_BODY")
    metasrv_post "$ALICE" "$action" "$(body_for "$action" hr 0 | sed 's/"name":"t"/"name":"nosuch"/')"
    metasrv_expect_error 403 permission_denied
    b=$(jq -c '.error | del(.request_id)' <<<"$HTTP_BODY")
    assert_equal "${b//nosuch/scans}" "$a"
  done
  # in a namespace it may read, a missing table is a 404
  lake-catalog grant read ON hr TO alice
  metasrv_post "$ALICE" resolve '{"namespace":"hr","name":"nosuch"}'
  metasrv_expect_error 404 not_found
  metasrv_post "$ALICE" resolve '{"namespace":"hr","name":"scans"}'
  assert_equal "$HTTP_CODE" 200
  # every table-less action of a user is refused (expire of all tables)
  metasrv_post "$ALICE" expire '{}'
  metasrv_expect_error 403 permission_denied
  metasrv_check_errors
}

@test "lake-catalog grant, revoke and grants: refusals with their exits, listings, whoami, and the generation" {
  lake-catalog create-namespace hr
  lake-catalog create hr.scans 'f FILE'
  lake-catalog create-namespace logs
  lake-catalog create logs.app 'line TEXT'
  local gen
  gen=$(lake-catalog status | sed -n 's/^generation=//p')

  run --separate-stderr lake-catalog grant read ON hr TO alice
  assert_clean_success
  assert_equal "$(lake-catalog --max-age 0 status | sed -n 's/^generation=//p')" $((gen + 1))
  run --separate-stderr lake-catalog grant write on logs.app to role:user
  assert_clean_success
  run --separate-stderr lake-catalog grant modify ON logs TO public
  assert_clean_success
  # granted again: nothing changes, and it says so
  run --separate-stderr lake-catalog grant read ON hr TO alice
  assert_success
  assert_equal "$stderr" "lake-catalog: grant read ON hr TO alice: granted already; nothing changed"
  assert_equal "$(lake-catalog --max-age 0 status | sed -n 's/^generation=//p')" $((gen + 3))

  # bad input: one line and 64; a missing table 66; no admin 77
  refused64 "own: not a privilege (read, write, modify)" grant own ON hr TO alice
  refused64 "nobody: no such principal" grant read ON hr TO nobody
  refused64 "grantee: role:user is the one role grants scope (others hold what their role gives)" \
    grant read ON hr TO role:admin
  refused64 "on: '*' (the catalog), NS or NS.T" grant read ON a.b.c TO alice
  refused64 "usage: lake-catalog grant PRIV ON '*'|NS|NS.T TO PRINCIPAL|role:user|PUBLIC (see 'lake-catalog --help')" \
    grant read AT hr TO alice
  refused64 "usage: lake-catalog revoke PRIV ON '*'|NS|NS.T FROM PRINCIPAL|role:user|PUBLIC (see 'lake-catalog --help')" \
    revoke read ON hr TO alice
  run --separate-stderr lake-catalog grant read ON hr.nosuch TO alice
  assert_error lake-catalog 66 "hr.nosuch: no such table"
  run --separate-stderr lake-catalog grant read ON nons TO alice
  assert_error lake-catalog 66 "nons: no such namespace"
  run --separate-stderr env LAKE_TOKEN_FILE="$ALICE" lake-catalog grant read ON logs TO alice
  assert_error lake-catalog 77
  run --separate-stderr env LAKE_TOKEN_FILE="$ALICE" lake-catalog revoke read ON hr FROM alice
  assert_error lake-catalog 77

  # the listing: all (admin), on a namespace and its tables, on one table
  run --separate-stderr lake-catalog grants --header
  assert_clean_success
  assert_equal "$(cut -f1-3 <<<"$output")" $'on\tprivilege\tgrantee\nhr\tread\talice\nlogs\tmodify\tPUBLIC\nlogs.app\twrite\trole:user'
  [[ $(sed -n 2p <<<"$output" | cut -f4,5) == 20??-??-??T??:??:??Z$'\tadmin' ]] || fail "when and by whom: $output"
  assert_equal "$(lake-catalog grants logs | cut -f1-3)" $'logs\tmodify\tPUBLIC\nlogs.app\twrite\trole:user'
  assert_equal "$(lake-catalog grants hr.scans --json | jq -c 'map([.on, .privilege, .grantee])')" '[["hr","read","alice"]]'
  # a user sees the grants to itself, its role and PUBLIC; bob not alice's
  assert_equal "$(LAKE_TOKEN_FILE=$ALICE lake-catalog grants | cut -f1-3)" $'hr\tread\talice\nlogs\tmodify\tPUBLIC\nlogs.app\twrite\trole:user'
  assert_equal "$(LAKE_TOKEN_FILE=$BOB lake-catalog grants | cut -f1-3)" $'logs\tmodify\tPUBLIC\nlogs.app\twrite\trole:user'
  run --separate-stderr env LAKE_TOKEN_FILE="$ALICE" lake-catalog whoami
  assert_clean_success
  assert_equal "$(grep -v '^stage=' <<<"$output")" $'principal=alice\nrole=user\ngrant=read ON hr TO alice\ngrant=modify ON logs TO PUBLIC\ngrant=write ON logs.app TO role:user'

  # revoke: exactly as granted; one that is not there changes nothing
  run --separate-stderr lake-catalog revoke modify ON logs FROM PUBLIC
  assert_clean_success
  run --separate-stderr lake-catalog revoke modify ON logs FROM PUBLIC
  assert_success
  assert_equal "$stderr" "lake-catalog: revoke modify ON logs FROM PUBLIC: there was no such grant; nothing changed"
  assert_equal "$(lake-catalog grants | cut -f1-3)" $'hr\tread\talice\nlogs.app\twrite\trole:user'
}

@test "grants ON NS lists that namespace's grants exactly: '_' is no wildcard and 'A' is not 'a' (issue 41)" {
  local ns
  for ns in a A _ b; do lake-catalog create-namespace "$ns"; done
  lake-catalog create a.x 'v TEXT'
  lake-catalog create b.y 'v TEXT'
  lake-catalog grant read ON a.x TO alice
  lake-catalog grant write ON a TO bob
  lake-catalog grant read ON b.y TO bob
  # what a LIKE 'NS.%' matched: any one-letter namespace for '_', a.x for
  # 'A' (SQLite's LIKE folds case)
  assert_equal "$(lake-catalog grants _ | cut -f1-3)" ""
  assert_equal "$(lake-catalog grants A | cut -f1-3)" ""
  assert_equal "$(lake-catalog grants a | cut -f1-3)" $'a\twrite\tbob\na.x\tread\talice'
  lake-catalog grant modify ON A TO alice
  lake-catalog grant read ON _ TO bob
  assert_equal "$(lake-catalog grants A | cut -f1-3)" $'A\tmodify\talice'
  assert_equal "$(lake-catalog grants _ | cut -f1-3)" $'_\tread\tbob'
  # the action itself, as a client other than lake-catalog sends it
  metasrv_post "$ADMIN" grants '{"on":"_"}'
  assert_equal "$HTTP_CODE $(jq -c '[.grants[] | .on]' <<<"$HTTP_BODY")" '200 ["_"]'
}

@test "revocation takes effect at the authority's next request; a dropped table's grants go with it" {
  lake-catalog create-namespace hr
  lake-catalog create hr.scans 'a INTEGER'
  lake-query -q -c 'INSERT INTO hr.scans VALUES (1)'
  lake-catalog grant read ON hr.scans TO alice
  run --separate-stderr env LAKE_TOKEN_FILE="$ALICE" lake-query -c 'SELECT a FROM hr.scans'
  assert_clean_success
  assert_output 1
  lake-catalog revoke read ON hr.scans FROM alice
  # the next request that reaches the server is refused (a fresh cache
  # may answer what it holds until its TTL, as for any change)
  run --separate-stderr env LAKE_TOKEN_FILE="$ALICE" lake-catalog --max-age 0 resolve hr.scans
  assert_error lake-catalog 77 "alice holds no read privilege on hr.scans"
  assert_output ""

  lake-catalog grant read ON hr.scans TO alice
  lake-catalog drop hr.scans
  assert_equal "$(lake-catalog grants)" ""
  lake-catalog create hr.scans 'a INTEGER'
  run --separate-stderr env LAKE_TOKEN_FILE="$ALICE" lake-catalog --max-age 0 resolve hr.scans
  assert_error lake-catalog 77
}

@test "a scoped user through lake-query and lake-put: read selects, write inserts and puts, modify deletes; each refusal is 77 and appends nothing" {
  lake-catalog create-namespace docs
  lake-catalog create docs.papers 'title TEXT, pdf FILE'
  lake-query -q -c "INSERT INTO docs.papers(title) VALUES ('a')"
  lake-catalog grant read ON docs TO alice
  export LAKE_TOKEN_FILE=$ALICE
  run --separate-stderr lake-query -c 'SELECT title FROM docs.papers'
  assert_clean_success
  assert_output a
  local objects
  objects=$(find "$SRV/stage" -type f | sort)
  run --separate-stderr lake-query -c "INSERT INTO docs.papers(title) VALUES ('b')"
  assert_error lake-query 77 "alice holds no write privilege on docs.papers"
  printf 'bytes\n' >"$T/f.txt"
  run --separate-stderr lake-put --table docs.papers "$T/f.txt"
  assert_error lake-put 77 "alice holds no write privilege on docs.papers"
  # refused before anything was stored
  assert_equal "$(find "$SRV/stage" -type f | sort)" "$objects"
  LAKE_TOKEN_FILE=$ADMIN lake-catalog grant write ON docs.papers TO alice
  run --separate-stderr lake-query -c "INSERT INTO docs.papers(title) VALUES ('b')"
  assert_clean_success
  run --separate-stderr lake-put --table docs.papers --set title=c "$T/f.txt"
  assert_clean_success
  objects=$(find "$SRV/stage" -type f | sort)
  run --separate-stderr lake-query -c "DELETE FROM docs.papers WHERE title = 'a'"
  assert_error lake-query 77 "alice holds no modify privilege on docs.papers"
  assert_equal "$(find "$SRV/stage" -type f | sort)" "$objects"
  LAKE_TOKEN_FILE=$ADMIN lake-catalog grant modify ON docs.papers TO alice
  run --separate-stderr lake-query -c "DELETE FROM docs.papers WHERE title = 'a'"
  assert_equal "exit $status: $stderr" "exit 0: lake-query: docs.papers: 1 row deleted"
  assert_equal "$(lake-query -c 'SELECT title FROM docs.papers ORDER BY title')" $'b\nc'
  # what was refused appended nothing: versions 1 (admin), 2, 3 (alice), 4 (delete)
  assert_equal "$(LAKE_TOKEN_FILE=$ADMIN lake-catalog --max-age 0 resolve docs.papers | jq .version)" 4
}

@test "PUBLIC names every principal in a grant, so no principal may be called that" {
  local name
  for name in PUBLIC public Public; do
    run --separate-stderr lake-metasrv token create "${METASRV_REGOPT[@]}" --role user --name "$name"
    assert_error lake-metasrv 64 "token create: --name $name: the name PUBLIC is reserved for grants to everyone"
  done
  assert_equal "$(lake-metasrv token list "${METASRV_REGOPT[@]}" | cut -f1 | sort | paste -sd,)" admin,alice,bob
  # a grant to it, in any case, is the grant to everyone
  lake-catalog create-namespace hr
  lake-catalog grant read ON hr TO public
  assert_equal "$(lake-catalog grants | cut -f1-3)" $'hr\tread\tPUBLIC'
}

@test "the embedded lake stores grants to PUBLIC and role:user for a server to enforce later; it has no principals to name" {
  unset LAKE_METASRV LAKE_TOKEN_FILE LAKE_CA_FILE
  export LAKE_HOME=$T/home
  lake-catalog create-namespace hr
  lake-catalog create hr.scans 'f FILE'
  run --separate-stderr lake-catalog grant read ON hr TO PUBLIC
  assert_clean_success
  run --separate-stderr lake-catalog grant write ON hr.scans TO role:user
  assert_clean_success
  run --separate-stderr lake-catalog grant read ON hr TO alice
  assert_error lake-catalog 64 "alice: no such principal"
  assert_equal "$(lake-catalog grants | cut -f1-3,5)" $'hr\tread\tPUBLIC\tlocal:'"$(id -un)"$'\nhr.scans\twrite\trole:user\tlocal:'"$(id -un)"
  run --separate-stderr lake-catalog revoke read ON hr FROM PUBLIC
  assert_clean_success
  assert_equal "$(lake-catalog grants | cut -f1-3)" $'hr.scans\twrite\trole:user'
  # the embedded lake's own principal holds everything: a revoke limits no one here
  run --separate-stderr lake-query -c "SELECT count(*) FROM hr.scans"
  assert_clean_success
  assert_output 0
  # and a server started on that registry enforces what it stored
  assert_equal "$(sqlite3 "$LAKE_HOME/registry.db" "SELECT scope || ' ' || privilege || ' ' || grantee FROM grants")" "hr.scans write role:user"
}

@test "compact needs modify: a writer's compaction swapping a reader's rows for its own is refused (403, 77, one line), the rows unchanged; a modify holder compacts (issue 41)" {
  lake-catalog create-namespace hr
  lake-catalog create hr.t 'secret TEXT'
  lake-query -q -c "INSERT INTO hr.t VALUES ('TOPSECRET')"
  lake-catalog grant read ON hr.t TO alice
  lake-catalog grant write ON hr.t TO alice
  LAKE_TOKEN_FILE=$ALICE lake-query -q -c "INSERT INTO hr.t VALUES ('TAMPERED')"
  local reg top mine copy
  reg=$(lake-catalog --max-age 0 resolve hr.t)
  top=$(jq -r '.segments[0].location' <<<"$reg")
  mine=$(jq -r '.segments[1].location' <<<"$reg")
  # a copy of alice's segment under a name of its own: the same row count
  copy=${mine}_copy
  cp "$(loc_path "$mine")" "$(loc_path "$copy")"
  metasrv_post "$ALICE" compact "$(jq -c --arg top "$top" --arg copy "$copy" \
    '{namespace:"hr",name:"t",expected_version:.version,replace:[$top],
      segments:[.segments[1] | .location = $copy],files:[]}' <<<"$reg")"
  metasrv_expect_error 403 permission_denied
  assert_equal "$(jq -r .error.message <<<"$HTTP_BODY")" "alice holds no modify privilege on hr.t"
  run --separate-stderr env LAKE_TOKEN_FILE="$ALICE" lake-catalog compact hr.t
  assert_error lake-catalog 77 "alice holds no modify privilege on hr.t"
  assert_equal "${#stderr_lines[@]}" 1
  assert_equal "$(lake-query -c 'SELECT secret FROM hr.t ORDER BY secret')" $'TAMPERED\nTOPSECRET'
  assert_equal "$(lake-catalog --max-age 0 resolve hr.t | jq .version)" 2

  # modify lets the same user compact: the same rows, in one segment
  lake-catalog grant modify ON hr.t TO alice
  run --separate-stderr env LAKE_TOKEN_FILE="$ALICE" lake-catalog compact hr.t
  assert_equal "exit $status" "exit 0"
  reg=$(lake-catalog --max-age 0 resolve hr.t)
  assert_equal "$(jq -c '[.version, (.segments | length)]' <<<"$reg")" "[3,1]"
  assert_equal "$(lake-query -c 'SELECT secret FROM hr.t ORDER BY secret')" $'TAMPERED\nTOPSECRET'
}

@test "a writer's INSERT over the compaction threshold appends and leaves compaction to a modify holder: no warning, a trace line; with modify it compacts (issue 41)" {
  lake-catalog create-namespace hr
  lake-catalog create hr.t 'v INTEGER'
  lake-catalog grant read ON hr.t TO alice
  lake-catalog grant write ON hr.t TO alice
  export LAKE_COMPACT_THRESHOLD=1
  local i
  for i in 1 2; do
    run --separate-stderr env LAKE_TOKEN_FILE="$ALICE" LAKE_TRACE=1 lake-query -c "INSERT INTO hr.t VALUES ($i)"
    assert_equal "exit $status: $(untraced_stderr)" "exit 0: "
  done
  trace_lines compact | grep -qx 'trace: compact hr.t: not compacted: alice holds no modify privilege on hr.t' ||
    fail "no trace of the compaction left alone: $stderr"
  assert_equal "$(lake-catalog --max-age 0 resolve hr.t | jq -c '[.version, (.segments | length)]')" "[2,2]"
  lake-catalog grant modify ON hr.t TO alice
  run --separate-stderr env LAKE_TOKEN_FILE="$ALICE" lake-query -c "INSERT INTO hr.t VALUES (3)"
  assert_clean_success
  assert_equal "$(lake-catalog --max-age 0 resolve hr.t | jq -c '[.version, (.segments | length)]')" "[4,1]"
  assert_equal "$(lake-query -c 'SELECT group_concat(v) FROM hr.t')" "1,2,3"
}
