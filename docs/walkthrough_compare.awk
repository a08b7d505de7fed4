# The shape comparison of docs/run_walkthrough.sh (docs/testing.md#the-walkthrough): does the
# output a command printed (the input) have the shape of the block the page shows under it?
#
#   awk -v expected=BLOCK [-v write=FILE] -f docs/walkthrough_compare.awk OUTPUT
#
# Prints nothing when it does, else the first difference (exit 1). With -v write=FILE it also
# writes the block the page should show: the actual output, or for an excerpt ("…" lines) the
# actual lines of each piece. Both sides are compared as normalised lines:
#   - the machine's own facts masked: the values of the lines that describe the host (below), so
#     a page written on one machine checks on any other;
#   - every number masked as '#', runs of spaces as one, no trailing " *" (a benchmark row's
#     "noisy" mark); blank lines are left out.
# tests/walkthrough_compare_check.sh holds it to both halves of its job: outputs of other
# machines pass, and an output that lost or changed what the page teaches fails.

# The lines that describe the machine, by their label: their values are masked, their labels
# and the rest of the line are still compared.
#   CPU: MODEL, # hardware threads, # OpenMP threads, caches L2 SIZE, L3 SIZE   (bench kernels)
#   BLAS: the library, its thread count and build string, kernel family included (bench kernels)
#   GPU: NAME, …                                                                  (bench step)
#   urpe cpu|cuda, MODEL, # threads, BLAS: …, host code: FLAGS                   (bench step)
function host_facts(s) {
  if (s ~ /^CPU: /) {
    sub(/^CPU: .*, [0-9]+ hardware threads/, "CPU: <machine>, 0 hardware threads", s)
    sub(/caches L2 .*, L3 .*$/, "caches L2 <size>, L3 <size>", s)
  } else if (s ~ /^BLAS: /) {
    s = "BLAS: <machine>"
  } else if (s ~ /^GPU: /) {
    sub(/^GPU: [^,]*/, "GPU: <machine>", s)
  } else if (s ~ /^urpe (cpu|cuda), /) {
    sub(/, .*, [0-9]+ threads, BLAS: .*, host code: .*$/, ", <machine>, 0 threads, BLAS: <machine>, host code: <machine>", s)
  }
  return s
}
function norm(s) {
  s = host_facts(s)
  gsub(/[-+]?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?/, "#", s)
  gsub(/[ \t]+/, " ", s)
  sub(/^ /, "", s); sub(/ $/, "", s); sub(/ \*$/, "", s)
  return s
}
function trimmed(s) { sub(/[ \t]+$/, "", s); return s }
BEGIN { while ((getline line < expected) > 0) raw_e[++ne] = line }
{ raw_a[++na] = $0 }
END {
  # the actual output's non-blank lines
  for (i = 1; i <= na; i++) if (norm(raw_a[i]) != "") { a[++m] = norm(raw_a[i]); at[m] = i }
  # the expected block's pieces, split at lines "…"
  pieces = 1; excerpt = 0
  for (i = 1; i <= ne; i++) {
    if (raw_e[i] ~ /^[ \t]*…[ \t]*$/) { excerpt = 1; pieces++; continue }
    if (norm(raw_e[i]) == "") continue
    len[pieces]++; piece[pieces, len[pieces]] = norm(raw_e[i]); shown[pieces, len[pieces]] = raw_e[i]
  }
  if (!excerpt) {
    if (write != "") { last = na; while (last > 0 && raw_a[last] ~ /^[ \t]*$/) last--; for (i = 1; i <= last; i++) print trimmed(raw_a[i]) > write }
    k = 0
    for (i = 1; i <= len[1] || k < m; i++) {
      k++
      if (i > len[1]) { print "more output than the page shows, from: " raw_a[at[k]]; exit 1 }
      if (k > m) { print "the output ends before the page's line: " shown[1, i]; exit 1 }
      if (a[k] != piece[1, i]) { print "the page shows:  " shown[1, i]; print "the run printed: " raw_a[at[k]]; exit 1 }
    }
    exit 0
  }
  pos = 1
  for (p = 1; p <= pieces; p++) {
    if (len[p] == 0) { if (write != "" && p > 1) print "…" > write; continue }
    found = 0
    for (k = pos; k + len[p] - 1 <= m && !found; k++) {
      same = 1
      for (j = 1; j <= len[p] && same; j++) if (a[k + j - 1] != piece[p, j]) same = 0
      if (same) found = k
    }
    if (!found) { print "this excerpt line is not in the output (in this order): " shown[p, 1]; exit 1 }
    if (write != "") {
      if (p > 1) print "…" > write
      for (i = at[found]; i <= at[found + len[p] - 1]; i++) print trimmed(raw_a[i]) > write
    }
    pos = found + len[p]
  }
}
