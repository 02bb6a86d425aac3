# Shared by the perf scripts that own a section of perf/RESULTS.md.
# write_section NAME TEXT: TEXT (which starts with `<!-- NAME:begin -->` and ends
# with `<!-- NAME:end -->`) replaces that section of perf/RESULTS.md, or is
# appended when the file has none. write_results.py keeps such sections when it
# regenerates the benchmark tables.
write_section() {
  local name=$1 text=$2 results
  results=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/RESULTS.md
  touch "$results"
  if grep -q "<!-- $name:begin -->" "$results"; then
    awk -v t="$text" -v b="<!-- $name:begin -->" -v e="<!-- $name:end -->" \
      '$0 == b { print t; skip = 1; next } $0 == e { skip = 0; next } !skip' "$results" > "$results.tmp"
    mv "$results.tmp" "$results"
  else
    printf '\n%s\n' "$text" >> "$results"
  fi
}

# start_load NAME: prints the 1-minute load average, and warns on stderr when
# it is above 0.5 (other work shares the machine: the numbers are not results).
start_load() {
  local load
  load=$(cut -d' ' -f1 /proc/loadavg)
  awk -v l="$load" 'BEGIN { exit !(l > 0.5) }' && echo "$1: warning: load average $load; numbers are not results" >&2
  echo "$load"
}
