# bash completion for the lake programs                    -*- shell-script -*-
#
# One file for every program: it is installed under each program's name (so
# bash-completion's on-demand loader finds it) and registers all of them, so
# sourcing it once from ~/.bashrc works too.
#
# Each program is described by two variables, named after the program with
# '-' turned into '_':
#   _lake_opts_<prog>  every option --help prints
#   _lake_args_<prog>  the options among them that take an argument
# To add a program, define its two variables, add it to _lake_programs and,
# if one of its arguments deserves special completion, a case to
# _lake_complete_value.  tests/bats/completions.bats checks the lists against
# each program's --help, so they cannot drift.

_lake_programs='lake-put lake-get'

_lake_opts_lake_put='-q --quiet --name --content-type --size --sha256 --stage
    --progress --no-progress -h --help --version'
_lake_args_lake_put='--name --content-type --size --sha256 --stage'

_lake_opts_lake_get='-q --quiet -o --output --no-verify --stage
    --progress --no-progress -h --help --version'
_lake_args_lake_get='-o --output --stage'

# Complete the argument of option $2 of program $1 from the word $3.
_lake_complete_value() {
    case $2 in
    -o | --output)
        compopt -o filenames 2>/dev/null
        COMPREPLY=($(compgen -d -- "$3"))
        ;;
    *)
        # --name, --content-type, --size, --sha256, --stage: free text
        COMPREPLY=()
        ;;
    esac
}

# Complete an operand of program $1 from the word $2.
_lake_complete_operand() {
    case $1 in
    *)
        # lake-put: files to store; lake-get: REFs, but a path is handy too
        compopt -o filenames 2>/dev/null
        COMPREPLY=($(compgen -f -- "$2"))
        ;;
    esac
}

_lake_complete() {
    local prog=${COMP_WORDS[0]##*/}
    local key=${prog//-/_}
    local opts_var=_lake_opts_$key args_var=_lake_args_$key
    local opts=${!opts_var-} args=${!args_var-}
    local cur=${COMP_WORDS[COMP_CWORD]} prev= i
    local IFS=$' \t\n'
    COMPREPLY=()
    [ "$COMP_CWORD" -gt 0 ] && prev=${COMP_WORDS[COMP_CWORD - 1]}

    # "--opt=value": '=' is in COMP_WORDBREAKS, so bash splits the word.
    if [ "$cur" = "=" ] && [[ $prev == --* ]]; then
        cur=
    elif [ "$prev" = "=" ] && [ "$COMP_CWORD" -gt 1 ]; then
        prev=${COMP_WORDS[COMP_CWORD - 2]}
    elif [[ $cur == --*=* ]]; then
        # '=' taken out of COMP_WORDBREAKS: the word stays whole.
        prev=${cur%%=*}
        cur=${cur#*=}
        if [[ " $args " == *" $prev "* ]]; then
            _lake_complete_value "$prog" "$prev" "$cur"
            COMPREPLY=("${COMPREPLY[@]/#/$prev=}")
        fi
        return 0
    fi

    # After "--" every word is an operand.
    for ((i = 1; i < COMP_CWORD; i++)); do
        if [ "${COMP_WORDS[i]}" = "--" ]; then
            _lake_complete_operand "$prog" "$cur"
            return 0
        fi
    done

    case " ${args//$'\n'/ } " in
    *" $prev "*)
        _lake_complete_value "$prog" "$prev" "$cur"
        return 0
        ;;
    esac

    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$opts" -- "$cur"))
        return 0
    fi
    _lake_complete_operand "$prog" "$cur"
    return 0
}

for _lake_p in $_lake_programs; do
    complete -F _lake_complete "$_lake_p"
done
unset _lake_p
