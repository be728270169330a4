# SPDX-License-Identifier: BSD-2-Clause
# symbols.awk - debian/liblake0.symbols from lib/api/liblake.map (make symbols).
#
#   awk -v version=VERSION -f lib/api/symbols.awk debian/liblake0.symbols lib/api/liblake.map
#
# Prints the symbols file dpkg-gensymbols checks liblake0 against: every
# name of every version node of the map as NAME@NODE, and each node's own
# NODE@NODE, with the version it first appeared in.  A name already in the
# old symbols file (the first argument; /dev/null for none) keeps its
# version; a new one gets VERSION, the Makefile's.  A name of the old file
# that the map no longer has is an error (exit 1): removing or moving a
# symbol breaks the ABI, which takes a new soname (liblake(3), STABILITY).

# the old symbols file: " NAME@NODE VERSION" lines
FILENAME == ARGV[1] && /^ [^ ]+@[^ ]+ / { old[$1] = $2; order_old[++nold] = $1; next }
FILENAME == ARGV[1] { next }

# the map: C comments dropped (they may span lines), then one token at a time
{
    line = $0
    while (line != "") {
        if (incomment) {
            if ((i = index(line, "*/")) == 0) { line = ""; break }
            line = substr(line, i + 2); incomment = 0; continue
        }
        if ((i = index(line, "/*")) > 0) {
            text = substr(line, 1, i - 1); line = substr(line, i + 2); incomment = 1
        } else { text = line; line = "" }
        gsub(/[{};]/, " & ", text)
        n = split(text, tok, /[ \t]+/)
        for (k = 1; k <= n; k++) token(tok[k])
    }
}

function token(t) {
    if (t == "") return
    if (node == "") {                       # NODE {
        if (t != "{") { pending = t; return }
        node = pending; scope = ""; add(node "@" node); return
    }
    if (t == "}") { node = ""; return }
    if (t == "global:" || t == "local:") { scope = t; return }
    if (t == ";") return
    if (scope == "global:") add(t "@" node)
}

function add(s) {
    if (s in seen) return
    seen[s] = 1; names[++nnames] = s
}

END {
    if (node != "" || incomment) { print "symbols.awk: the map ends inside a node or a comment" > "/dev/stderr"; exit 1 }
    bad = 0
    for (k = 1; k <= nold; k++)
        if (!(order_old[k] in seen)) {
            print "symbols.awk: " order_old[k] " is in the symbols file but not in the map: removing or moving a symbol breaks liblake.so.0's ABI" > "/dev/stderr"
            bad = 1
        }
    if (bad) exit 1
    print "liblake.so.0 liblake0 #MINVER#"
    print "* Build-Depends-Package: liblake-dev"
    # sorted, as dpkg-gensymbols writes them
    cmd = "LC_ALL=C sort"
    for (k = 1; k <= nnames; k++)
        printf " %s %s\n", names[k], (names[k] in old ? old[names[k]] : version) | cmd
    close(cmd)
}
