#!/usr/bin/env bash
# man_pages_test.sh IXSUBMIT IXCTL IX_NODE_AGENT SOURCE_DIR
#
# Keeps the hand-written man pages in SOURCE_DIR/docs/man honest:
# - every long option (--name) that a program's help prints (top level, each
#   command's --help and each subcommand's, found from the help itself) is in
#   that program's page, as rendered text;
# - every command of ixsubmit and ixctl has its own .SS "PROG COMMAND";
# - spank_inferencex.8 has every option of spank_plugin/dispatch.cc (kOptions)
#   and every plugstack.conf key of spank_plugin/plugin_args.cc (kKeys), and
#   no page names an --inferencex-* option that the plugin does not have;
# - each page renders with `groff -man -ww -z` without a warning, and its .TH
#   names the version the programs print.
# Prints every page and what it lacks, then exits 1; exits 0 when all hold.
set -euo pipefail

if [[ $# -ne 4 ]]; then
  echo "usage: $0 IXSUBMIT IXCTL IX_NODE_AGENT SOURCE_DIR" >&2
  exit 2
fi
readonly IXSUBMIT=$1 IXCTL=$2 AGENT=$3 SRC=$4
readonly MAN_DIR=$SRC/docs/man
export LC_ALL=C  # sort and comm agree on the order

# One line per problem; a file, so that problems found in a subshell count.
FAILURES=$(mktemp /tmp/man_pages_test.XXXXXX)
readonly FAILURES
trap 'rm -f "$FAILURES"' EXIT

fail() {
  echo "FAIL: $*" | tee -a "$FAILURES" >&2
}

count() {
  grep -c . || true
}

# The long options in text on stdin, one a line, sorted (a trailing '-', as
# in "--inferencex-*", is not part of a name).
long_options() {
  { grep -oE -- '--[A-Za-z0-9][A-Za-z0-9-]*' || true; } | sed 's/-*$//' | sort -u
}

# A page as a reader sees it: plain text, no bold or underline.
rendered() {
  groff -man -Tascii -P-cbou "$1" 2>/dev/null
}

# The help of `PROG ARGS... --help`, stdout and stderr (some commands print
# their usage on stderr and exit 2); fails when there is none.
help_of() {
  local out
  out=$("$@" --help 2>&1 || true)
  if [[ -z $out ]]; then
    fail "'$* --help' printed nothing"
    return 0
  fi
  printf '%s\n' "$out"
}

# The commands a top-level help lists under "Commands:", up to a blank line.
commands_of() {
  awk '/^Commands:/ { on = 1; next } on && /^[[:space:]]*$/ { exit } on { print $1 }'
}

# The subcommands of `NAME CMD` its help names in usage lines such as
# "ixctl ports lease --owner ..." (lowercase words only: MODE, SWEEP_ID are
# placeholders).
subcommands_of() {
  local name=$1 cmd=$2
  { grep -oE -- "(^|[[:space:]])$name $cmd [a-z][a-z0-9-]*" || true; } | awk '{ print $NF }' | sort -u
}

# Every help text of a program: top level, each command, each subcommand.
all_help() {
  local prog=$1 name top cmd sub text
  name=$(basename "$prog")
  top=$(help_of "$prog")
  printf '%s\n' "$top"
  for cmd in $(printf '%s\n' "$top" | commands_of); do
    text=$(help_of "$prog" "$cmd")
    printf '%s\n' "$text"
    for sub in $(printf '%s\n' "$text" | subcommands_of "$name" "$cmd"); do
      help_of "$prog" "$cmd" "$sub"
    done
  done
}

# The page's .TH must be dated and carry the programs' version.
check_th() {
  local page=$1 version=$2
  if ! grep -qE "^\.TH .* \"December 2026\" \"inferencex-slurm $version\"" "$page"; then
    fail "$(basename "$page"): .TH does not name \"inferencex-slurm $version\" (the programs' version)"
  fi
}

check_renders_clean() {
  local page=$1 warnings
  warnings=$(groff -man -ww -z "$page" 2>&1)
  if [[ -n $warnings ]]; then
    fail "$(basename "$page"): groff -man -ww warns:"
    printf '    %s\n' "$warnings" >&2
  fi
}

# Every long option of the program's help is in its page.
check_program() {
  local prog=$1 page=$2 name help in_page missing cmd
  name=$(basename "$prog")
  help=$(all_help "$prog")
  local wanted
  wanted=$(printf '%s\n' "$help" | long_options)
  if [[ $(printf '%s\n' "$wanted" | count) -lt 3 ]]; then
    fail "$name: its help lists almost no options; is $prog the program?"
    return 0
  fi
  in_page=$(rendered "$page" | long_options)
  missing=$(comm -23 <(printf '%s\n' "$wanted") <(printf '%s\n' "$in_page"))
  if [[ -n $missing ]]; then
    fail "$(basename "$page") lacks these options of '$name ... --help':" $missing
  fi
  for cmd in $(help_of "$prog" | commands_of); do
    if ! grep -qE "^\.SS \"?$name $cmd\"?[[:space:]]*$" "$page"; then
      fail "$(basename "$page") has no section .SS \"$name $cmd\" for the command '$cmd'"
    fi
  done
}

# The plugin: its srun options and plugstack.conf keys, from the source.
check_plugin() {
  local page=$1 text options keys missing key stray
  text=$(rendered "$page")
  options=$(sed -n '/kOptions\[\] = {/,/^};/p' "$SRC/spank_plugin/dispatch.cc" |
    { grep -oE '"inferencex-[a-z0-9-]+"' || true; } | tr -d '"' | sed 's/^/--/' | sort -u)
  keys=$(sed -n '/kKeys = {/,/};/p' "$SRC/spank_plugin/plugin_args.cc" |
    { grep -oE '"[a-z_]+"' || true; } | tr -d '"' | sort -u)
  if [[ $(printf '%s\n' "$options" | count) -lt 3 || $(printf '%s\n' "$keys" | count) -lt 3 ]]; then
    fail "cannot read the plugin's options (dispatch.cc kOptions) or keys (plugin_args.cc kKeys)"
    return 0
  fi
  missing=$(comm -23 <(printf '%s\n' "$options") <(printf '%s\n' "$text" | long_options))
  if [[ -n $missing ]]; then
    fail "$(basename "$page") lacks these options of spank_plugin/dispatch.cc:" $missing
  fi
  for key in $keys; do
    if ! printf '%s\n' "$text" | grep -qE "(^|[^A-Za-z0-9_])$key="; then
      fail "$(basename "$page") lacks the plugstack.conf argument '$key=' (spank_plugin/plugin_args.cc)"
    fi
  done
  # The other way round, in every page: no --inferencex-* the plugin lacks.
  local other
  for other in "$MAN_DIR"/*.[18]; do
    stray=$(comm -13 <(printf '%s\n' "$options") \
      <(rendered "$other" | long_options | { grep -E '^--inferencex-' || true; }))
    if [[ -n $stray ]]; then
      fail "$(basename "$other") names options the plugin does not have:" $stray
    fi
  done
}

version=$("$IXSUBMIT" --version | awk '{ print $NF }')
for page in ixsubmit.1 ixctl.8 ix-node-agent.8 spank_inferencex.8; do
  if [[ ! -f $MAN_DIR/$page ]]; then
    fail "$MAN_DIR/$page does not exist"
    continue
  fi
  check_renders_clean "$MAN_DIR/$page"
  check_th "$MAN_DIR/$page" "$version"
done
[[ -f $MAN_DIR/ixsubmit.1 ]] && check_program "$IXSUBMIT" "$MAN_DIR/ixsubmit.1"
[[ -f $MAN_DIR/ixctl.8 ]] && check_program "$IXCTL" "$MAN_DIR/ixctl.8"
[[ -f $MAN_DIR/ix-node-agent.8 ]] && check_program "$AGENT" "$MAN_DIR/ix-node-agent.8"
[[ -f $MAN_DIR/spank_inferencex.8 ]] && check_plugin "$MAN_DIR/spank_inferencex.8"

problems=$(count <"$FAILURES")
if [[ $problems -gt 0 ]]; then
  echo "$problems problem(s) with the man pages in $MAN_DIR" >&2
  exit 1
fi
echo "man pages: every option and key documented, every page renders without a warning"
