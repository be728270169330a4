# SPDX-License-Identifier: BSD-2-Clause
# bash completion for the lake programs                    -*- shell-script -*-
#
# One file for every program: it is installed under each program's name (so
# bash-completion's on-demand loader finds it) and registers all of them, so
# sourcing it once from ~/.bashrc works too.
#
# Each program is described by variables named after the program with '-'
# turned into '_':
#   _lake_opts_<prog>      every option --help prints
#   _lake_args_<prog>      the options among them that take an argument
# and a program with commands (lake-catalog, lake-metasrv) also by
#   _lake_commands_<prog>  its commands, as --help lists them
#   _lake_opts_<prog>_<command>, _lake_args_<prog>_<command>
#                          the command's own options ('prog command --help'
#                          prints them after the global ones)
# To add a program, define its variables, add it to _lake_programs and, if
# one of its arguments deserves special completion, a case to
# _lake_complete_value or _lake_complete_operand.
# tests/bats/completions.bats checks the lists against each program's and
# each command's --help, so they cannot drift.

_lake_programs='lake-put lake-get lake-catalog lake-query lake-metasrv'

_lake_opts_lake_put='-q --quiet --name --content-type --size --sha256 --part-size
    --jobs --table --column --set --archive --max-skipped --stage --progress --no-progress -h --help
    --version'
_lake_args_lake_put='--name --content-type --size --sha256 --part-size --jobs --table --column --set
    --max-skipped --stage'

_lake_opts_lake_get='-q --quiet -o --output --archive --presign --no-verify --jobs --part-size
    --stage --progress --no-progress -h --help --version'
_lake_args_lake_get='-o --output --presign --jobs --part-size --stage'

_lake_opts_lake_catalog='-q --quiet --json -H --header --max-age --offline
    --strict -h --help --version'
_lake_args_lake_catalog='--max-age'
_lake_commands_lake_catalog='list show resolve history rollback alter expire refresh status purge-cache
    create-namespace create drop grant revoke grants whoami actions gc compact'
_lake_opts_lake_catalog_gc='--dry-run --grace'
_lake_args_lake_catalog_gc='--grace'
_lake_opts_lake_catalog_compact='--target-size'
_lake_args_lake_catalog_compact='--target-size'
_lake_opts_lake_catalog_resolve='--version'
_lake_args_lake_catalog_resolve='--version'
_lake_opts_lake_catalog_rollback='--to-version'
_lake_args_lake_catalog_rollback='--to-version'
_lake_opts_lake_catalog_expire='--older-than'
_lake_args_lake_catalog_expire='--older-than'
_lake_opts_lake_catalog_refresh='--force'
_lake_opts_lake_catalog_create='--if-not-exists'
_lake_opts_lake_catalog_create_namespace='--if-not-exists'

_lake_opts_lake_query='-q --quiet -f --format -H --header --explain -c --command --import
    --csv --jsonl --strict --progress --no-progress -h --help --version'
_lake_args_lake_query='-f --format -c --command --import'

# lake-metasrv takes every option before or after its command, so all of
# them are global; "token" takes create, list or revoke as its operand.
_lake_opts_lake_metasrv='-q --quiet --db --registry --stage --listen --tls-cert
    --tls-key --tls-priority --insecure-listen --threads --pool --max-waiting --max-connections --timeout
    --max-body --snapshot-permits --max-entries --max-bytes --max-schema-bytes
    --presign-expires --presign-max --retention --audit-retention --auth-failures --role --name --expires
    --since --principal --action --result --json -H --header -h --help --version'
_lake_args_lake_metasrv='--db --registry --stage --listen --tls-cert --tls-key
    --tls-priority --threads --pool --max-waiting --max-connections --timeout --max-body
    --snapshot-permits --max-entries --max-bytes --max-schema-bytes --presign-expires
    --presign-max --retention --audit-retention --auth-failures --role --name --expires --since --principal
    --action --result'
_lake_commands_lake_metasrv='init serve token audit'

# COMPREPLY from compgen ARGS..., one word a line: word splitting would
# cut a file name "my dir" into "my" and "dir".  (-W lists are of words
# without blanks: options, commands, table names.)
_lake_compgen() {
    mapfile -t COMPREPLY < <(compgen "$@" 2>/dev/null)
}

# The word $1 as the shell will read it: without the quote it opens ("my,
# 'my) or the backslashes that escape its characters (my\ d; inside double
# quotes only \$ \` \" \\).  compgen -f takes the name itself, and readline
# quotes what it inserts again.
_lake_dequote() {
    local w=$1 out='' i c dq=''
    case $w in
    \'*) printf '%s' "${w#\'}"; return ;;
    \"*) w=${w#\"} dq=1 ;;
    esac
    for ((i = 0; i < ${#w}; i++)); do
        c=${w:i:1}
        if [ "$c" = "\\" ] && { [ -z "$dq" ] || [[ ${w:i+1:1} == [\$\`\"\\] ]]; }; then
            i=$((i + 1))
            c=${w:i:1}
        fi
        out+=$c
    done
    printf '%s' "$out"
}

# Complete file names (-f) or directories (-d), $1, from the word $2.
_lake_files() {
    compopt -o filenames 2>/dev/null
    _lake_compgen "$1" -- "$(_lake_dequote "$2")"
}

# Complete the argument of option $2 of program $1 from the word $3.
_lake_complete_value() {
    case $2 in
    -o | --output)
        _lake_files -d "$3"
        ;;
    --db | --tls-cert | --tls-key)
        # lake-metasrv's registry, certificate and key files
        _lake_files -f "$3"
        ;;
    --registry)
        # a URL: offer the schemes
        _lake_compgen -W 'sqlite: postgresql://' -- "$3"
        ;;
    --role)
        _lake_compgen -W 'admin query-service metadata-peer user' -- "$3"
        ;;
    -f | --format)
        _lake_compgen -W 'tsv csv json jsonl table' -- "$3"
        ;;
    --import | --table)
        # lake-query --import, lake-put --table: an existing table, from the
        # snapshot cache alone
        _lake_compgen -W "$(_lake_catalog_cached | tr '\t' '.')" -- "$3"
        ;;
    -c | --command)
        # lake-query's SQL: the table name being typed ("FROM docs.pa"),
        # from the snapshot cache; the rest of the word is kept as it is.
        # The SQL goes on after the name: no space, and inside an open
        # quote no closing quote either.  Readline closes the quote of a
        # word with one match, whatever nospace says, so one match gets a
        # twin with a blank after it: readline inserts what the two have
        # in common, the name, and stops (as zsh does).
        local tok=${3##*[!A-Za-z0-9_.]} t
        compopt -o nospace 2>/dev/null
        if [ -n "$tok" ]; then
            _lake_compgen -W "$(_lake_catalog_cached | tr '\t' '.')" -- "$tok"
            for t in "${!COMPREPLY[@]}"; do
                COMPREPLY[t]=${3%"$tok"}${COMPREPLY[t]}
            done
        fi
        if [ "${#COMPREPLY[@]}" = 1 ] && [[ $3 == [\"\']* ]]; then
            COMPREPLY+=("${COMPREPLY[0]} ")
        fi
        ;;
    *)
        # --name, --content-type, --size, --sha256, --part-size, --jobs,
        # --max-skipped, --stage, --max-age, resolve's --version N,
        # lake-metasrv's --listen, --tls-priority, --name, audit's filters
        # and numbers: free text
        COMPREPLY=()
        ;;
    esac
}

# The tables lake-catalog has cached, "namespace<TAB>name" a line.
# --offline answers from the snapshot cache, whatever its age, and never
# calls the metadata source: pressing TAB costs no request.  A user token,
# which may not take the snapshot, gets its cached listing (the tables it
# may read) and the tables it resolved on this host.
_lake_catalog_cached() {
    local exe=${COMP_WORDS[0]}
    # lake-query's --import: the lake-catalog next to it
    [[ $exe == */lake-query || $exe == */lake-put ]] && exe=${exe%/*}/lake-catalog
    [[ $exe == */* && -x $exe ]] || exe=lake-catalog
    "$exe" --offline list 2>/dev/null
}

# The columns of table $1 as the snapshot cache has them, one a line (no
# request either).
_lake_catalog_columns() {
    local exe=${COMP_WORDS[0]}
    [[ $exe == */* && -x $exe ]] || exe=lake-catalog
    "$exe" --offline show "$1" 2>/dev/null | cut -f1
}

# Complete operand number $4 (from 1) of command $3 of program $1 from the
# word $2; $3 is empty for programs without commands.
_lake_complete_operand() {
    local list
    case $1 in
    lake-catalog)
        case $3:$4 in
        show:1 | resolve:1 | history:1 | rollback:1 | alter:1 | expire:1 | drop:1 | compact:1 | purge-cache:1)
            list=$(_lake_catalog_cached | tr '\t' '.')
            _lake_compgen -W "$list" -- "$2"
            ;;
        alter:2)
            _lake_compgen -W 'add-column rename-column drop-column' -- "$2"
            ;;
        alter:3)
            # rename-column and drop-column name a column of the table;
            # add-column's 'COL TYPE' is new text
            local i
            for ((i = 1; i < COMP_CWORD; i++)); do [ "${COMP_WORDS[i]}" != alter ] || break; done
            case ${COMP_WORDS[i + 2]-} in
            rename-column | drop-column)
                list=$(_lake_catalog_columns "${COMP_WORDS[i + 1]-}")
                _lake_compgen -W "$list" -- "$2"
                ;;
            *) COMPREPLY=() ;;
            esac
            ;;
        list:1)
            list=$(_lake_catalog_cached | cut -f1 | uniq)
            _lake_compgen -W "$list" -- "$2"
            ;;
        grant:1 | revoke:1)
            _lake_compgen -W 'read write modify' -- "$2"
            ;;
        grant:2 | revoke:2)
            _lake_compgen -W 'ON' -- "$2"
            ;;
        grant:3 | revoke:3 | grants:1)
            # the whole catalog ('*' for grant), a namespace or a table
            list=$(_lake_catalog_cached | cut -f1 | uniq; _lake_catalog_cached | tr '\t' '.')
            _lake_compgen -W "$list" -- "$2"
            # '*' is offered quoted, as the shell must be given it (compgen
            # would take the quotes off and leave a glob)
            if [ "$3" != grants ] && [[ "'*'" == "$2"* || "*" == "$2"* ]]; then COMPREPLY+=("'*'"); fi
            ;;
        grant:4)
            _lake_compgen -W 'TO' -- "$2"
            ;;
        revoke:4)
            _lake_compgen -W 'FROM' -- "$2"
            ;;
        grant:5 | revoke:5)
            # a principal's name is typed; these two are words of their own
            _lake_compgen -W 'PUBLIC role:user' -- "$2"
            ;;
        create:1)
            # a new table: offer "namespace." and let the name be typed
            list=$(_lake_catalog_cached | cut -f1 | uniq | sed 's/$/./')
            _lake_compgen -W "$list" -- "$2"
            compopt -o nospace 2>/dev/null
            ;;
        *)
            # create-namespace NS and create's schema are new text
            COMPREPLY=()
            ;;
        esac
        ;;
    lake-metasrv)
        case $3:$4 in
        token:1) _lake_compgen -W 'create list revoke' -- "$2" ;;
        *) COMPREPLY=() ;; # init, serve and audit take no operands
        esac
        ;;
    lake-query)
        # one SQL-FILE (or -); with --import, or after -c, none
        case " ${COMP_WORDS[*]} " in
        *" --import "* | *" --import="* | *" -c "* | *" --command "* | *" --command="*)
            COMPREPLY=()
            ;;
        *)
            [ "$4" != 1 ] || _lake_files -f "$2"
            ;;
        esac
        ;;
    *)
        # lake-put: files to store; lake-get: REFs, but a path is handy too
        _lake_files -f "$2"
        ;;
    esac
}

_lake_complete() {
    local prog=${COMP_WORDS[0]##*/}
    local key=${prog//-/_}
    local opts_var=_lake_opts_$key args_var=_lake_args_$key cmds_var=_lake_commands_$key
    local opts=${!opts_var-} args=${!args_var-} cmds=${!cmds_var-}
    local cur=${COMP_WORDS[COMP_CWORD]} prev='' i w cmd='' operands=0 dashdash=0
    local IFS=$' \t\n'
    COMPREPLY=()
    [ "$COMP_CWORD" -gt 0 ] && prev=${COMP_WORDS[COMP_CWORD - 1]}

    # The words before the current one: skip options and their arguments,
    # find the command (for a program with commands) and count operands.
    # "--opt=value" arrives as three words, "--opt" "=" "value", because
    # '=' is in COMP_WORDBREAKS.
    for ((i = 1; i < COMP_CWORD; i++)); do
        w=${COMP_WORDS[i]}
        if [ "$dashdash" = 0 ] && [ "$w" = "--" ]; then
            dashdash=1
        elif [ "$dashdash" = 0 ] && [[ $w == -?* ]]; then
            if [[ " ${args//$'\n'/ } " == *" $w "* ]]; then
                if [ "${COMP_WORDS[i + 1]-}" = "=" ]; then i=$((i + 2)); else i=$((i + 1)); fi
            fi
        elif [ -n "$cmds" ] && [ -z "$cmd" ]; then
            cmd=$w
            local cmd_opts=${opts_var}_${cmd//-/_} cmd_args=${args_var}_${cmd//-/_} o
            # the command's own options; one may share a global name
            # (resolve's --version N), so add each name once
            for o in ${!cmd_opts-}; do
                [[ " ${opts//$'\n'/ } " == *" $o "* ]] || opts="$opts $o"
            done
            args="$args ${!cmd_args-}"
        else
            operands=$((operands + 1))
        fi
    done

    if [ "$dashdash" = 0 ]; then
        if [ "$cur" = "=" ] && [[ $prev == --* ]]; then
            cur=
        elif [ "$prev" = "=" ] && [ "$COMP_CWORD" -gt 1 ]; then
            prev=${COMP_WORDS[COMP_CWORD - 2]}
        elif [[ $cur == --*=* ]]; then
            # '=' taken out of COMP_WORDBREAKS: the word stays whole.
            prev=${cur%%=*}
            cur=${cur#*=}
            if [[ " ${args//$'\n'/ } " == *" $prev "* ]]; then
                _lake_complete_value "$prog" "$prev" "$cur"
                COMPREPLY=("${COMPREPLY[@]/#/$prev=}")
            fi
            return 0
        fi

        case " ${args//$'\n'/ } " in
        *" $prev "*)
            _lake_complete_value "$prog" "$prev" "$cur"
            return 0
            ;;
        esac

        if [[ $cur == -* ]]; then
            _lake_compgen -W "$opts" -- "$cur"
            return 0
        fi
    fi

    if [ -n "$cmds" ] && [ -z "$cmd" ]; then
        _lake_compgen -W "$cmds" -- "$cur"
        return 0
    fi
    _lake_complete_operand "$prog" "$cur" "$cmd" $((operands + 1))
    return 0
}

for _lake_p in $_lake_programs; do
    complete -F _lake_complete "$_lake_p"
done
unset _lake_p
