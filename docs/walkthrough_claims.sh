# The claims docs/walkthrough.md's text makes about numbers and pictures, each checked on the
# numbers a run of docs/run_walkthrough.sh produced (that script sources this file; `claim`,
# `output_of` and $OUT come from it). A claim is `claim any|full "the page's words" CHECK`:
# `full` ones need the full training (they are skipped by --quick), `any` ones hold after any
# run. When a regenerated run breaks one, change the page's sentence, not the check.

# A number in awk from a string like "3.12%".
num_awk='function num(s) { gsub(/[%,]/, "", s); return s + 0 }'

# Whether the text on stdin has a line that grep's arguments match, reading all of it. Not
# `grep -q` at the end of a pipe: it exits at the first match, and a writer still writing (bash's
# printf writes line by line, a program its buffers) then dies of SIGPIPE, which fails the claim
# under run_walkthrough.sh's pipefail, now and then: a CI run on 2 busy cores lost step 2's claim
# to it (2026-11-28), and 134 of 200 tries of a 20000-line printf into `grep -q` fail.
has_line() { grep "$@" >/dev/null; }

# ---- step 1 ----
step1_row_sums_checked() {
  output_of 'test-case="C = ones' | has_line 'SUCCESS: CHECK( s == doctest::Approx(1.0)'
}
claim any "step 1: the core's test checks that a softmax row sums to 1, and it passes" step1_row_sums_checked

# ---- step 2: the untrained probe. Rows: "pi-tiny (untrained, pe = X)  X  step  layer  spread  [acc]" ----
probe_rows() {  # pe layer spread accuracy, one line per row of the probe's table
  awk '/^pi-tiny \(untrained, pe = / { sub(/^[^)]*\)/, ""); print $1, $3, $4, ($5 == "" ? "-" : $5) }'
}
step2_theorem_holds() {
  output_of "theory probe --preset" | probe_rows | awk "$num_awk"'
    $1 == "none" || $1 == "rpe" || $1 == "urpe" {
      rows++
      if (num($3) > 1e-6) bad = bad " " $1 " layer " $2 " spread " $3
      if ($4 != "-" && $4 != "3.12%") bad = bad " " $1 " accuracy " $4
    }
    END { if (bad != "" || rows != 9) { print "  " rows " rows;" bad > "/dev/stderr"; exit 1 } }'
}
claim any "step 2: noPE, RPE and URPE spread at most 1e-5 at every layer (below 1e-6 here), accuracy 1/32 = 3.12%" step2_theorem_holds
step2_ape_differs() {
  output_of "theory probe --preset" | probe_rows | awk "$num_awk"'
    $1 == "ape" { rows++; if (num($3) <= 1) bad = 1 } END { exit (bad || rows != 3) }'
}
claim any "step 2: APE's spread is above 1 at every layer" step2_ape_differs
step2_urpe_is_rpe() {
  local rows
  rows=$(output_of "theory probe --preset" | probe_rows)
  [ -n "$(printf '%s\n' "$rows" | awk '$1 == "rpe"')" ] &&
    [ "$(printf '%s\n' "$rows" | awk '$1 == "rpe" { print $2, $3, $4 }')" = \
      "$(printf '%s\n' "$rows" | awk '$1 == "urpe" { print $2, $3, $4 }')" ]
}
claim any "step 2: the untrained URPE model computes exactly what RPE computes, digit for digit" step2_urpe_is_rpe
step2_verdicts() {
  local out
  out=$(output_of "theory probe --preset")
  for pe in none rpe urpe; do
    printf '%s\n' "$out" | has_line "^pi-tiny (untrained, pe = $pe): Theorem 2 applies.*as the theorem says$" || return 1
  done
}
claim any "step 2: the probe's verdict for noPE, RPE and URPE is 'as the theorem says'" step2_verdicts

# ---- step 3 ----
step3_exact() {
  output_of "theory construction" |
    has_line -F 'max |A·1 − (n − i)/n| = 0, max |output/u − (n − i)/n| = 0; with C ≡ 1 (RPE): max |A·1 − 1| = 0'
}
claim any "step 3: A·1 = (n − i)/n exactly, the output too, and every row sums to exactly 1 with C ≡ 1" step3_exact
step3_your_c() {
  output_of "construction --n 8 --c linear:0" | has_line '^Positions 0 and 1 get the same multiple of u (0 apart)' &&
    "$BUILD/urpe" theory construction --n 8 --c linear:0.5 --out "$OUT/yours" |
      has_line '^URPE gives every position a different multiple of u (closest: positions [0-9]* and [0-9]*, 0.0714 apart)'
}
claim any "step 3: a flat C (linear:0) gives two positions the same output; linear:0.5 puts them 0.5/7 = 0.071 apart" step3_your_c

# ---- step 4: the demo's table row "| pi | 100 | none | rpe | urpe |" ----
step4_accuracies() {
  output_of "urpe demo" | awk -F'|' "$num_awk"'
    $2 ~ /^ *pi *$/ && $3 ~ /^ *100 *$/ {
      found = 1
      none = num($4); rpe = num($5); urpe = num($6)
      if (none < 2.925 || none > 3.325 || rpe < 2.925 || rpe > 3.325 || urpe != 100) bad = 1
    }
    END { exit (!found || bad) }'
}
claim full "step 4: noPE and RPE within 0.2 points of 1/32 = 3.12%; URPE 100%" step4_accuracies
step4_identical() {
  output_of "urpe demo" | awk -F'|' '
    $2 ~ /^ *pi \(identical tokens\) *$/ { found = 1; if ($4 + 0 != 3.12 || $5 + 0 != 3.12 || $6 + 0 != 100) bad = 1 }
    END { exit (!found || bad) }'
}
claim full "step 4: on identical tokens noPE and RPE get exactly 1/32 = 3.12%, URPE 100%" step4_identical

# ---- step 5: the trained probe ----
step5_verdicts() {
  local out
  out=$(output_of "theory probe --repro")
  printf '%s\n' "$out" | has_line '^pi-V100-none-s1: Theorem 2 applies.*as the theorem says$' &&
    printf '%s\n' "$out" | has_line '^pi-V100-rpe-s1: Theorem 2 applies.*as the theorem says$' &&
    printf '%s\n' "$out" | has_line '^pi-V100-urpe-s1: not bound by Theorem 2 (URPE with a learned C).*accuracy 100.00%'
}
claim full "step 5: noPE and RPE still obey the theorem after training; URPE identifies every position (100%)" step5_verdicts
step5_make_demo() {  # make demo runs `urpe demo` with its default --out, which holds the same layout
  "$BUILD/urpe" demo --help | has_line -- '--out DIR .*(default: runs/demo)' && [ -d "$OUT/demo/runs/pi-V100-urpe-s1" ]
}
claim any "intro and step 5: after make demo, runs/demo holds the models (runs/demo/runs/pi-V100-urpe-s1)" step5_make_demo

# ---- step 6: the row sums. Table rows: "head  v0 → v31; gap (i, j)  layer  a → b  c → d  dev_id / dev_task  between" ----
rowsums_rows() {  # head layer v0 v31 gap dev_identical dev_task identical_vs_task
  awk '
    /^[0-9]+ +[-0-9.]+ → [-0-9.]+; / { head = $1; v0 = $2; v31 = $4; gap = $5; sub(/;$/, "", v31); layer = $8
      print head, layer, v0, v31, gap, $15, $17, $18; next }
    /^ +[0-9]+ +[-0-9.]+ → / && head != "" { print head, $1, v0, v31, gap, $8, $10, $11 }'
}
step6_positions_differ() {
  output_of "theory rowsums" | has_line '^4 of 4 heads have all v_i distinct' &&
    output_of "theory rowsums" | rowsums_rows | awk '
      $2 == 1 { rows++; d = $3 - $4; if (d < 0) d = -d; if (d < 0.35) bad = 1
                if (($1 == 3) != ($4 > $3)) bad = 1 }   # falling in heads 0-2, rising in head 3
      END { exit (bad || rows != 4) }'
}
claim full "step 6: v_i ends lower than it starts in heads 0, 1, 2 and higher in head 3, by at least 0.35; all v_i distinct in 4 of 4 heads" step6_positions_differ
step6_steps() {  # heads 0, 1 fall and head 3 rises at every step; head 2 rises somewhere; its smallest gap < 1e-4
  rowsums_json_values | awk '
    $3 == "c" { v[$1, $4] = $5; n = $4 + 1 > n ? $4 + 1 : n }
    END {
      for (h = 0; h < 4; h++) for (i = 1; i < n; i++) {
        up = v[h, i] > v[h, i - 1]
        if ((h == 0 || h == 1) && up) bad = 1
        if (h == 3 && !up) bad = 1
        if (h == 2 && up) head2_rises = 1
      }
      exit (bad || !head2_rises || n == 0) }' &&
    output_of "theory rowsums" | rowsums_rows | awk '$1 == 2 && $2 == 1 { found = 1; if ($5 + 0 >= 1e-4) bad = 1 } END { exit (!found || bad) }'
}
step6_follows_c() {
  output_of "theory rowsums" | rowsums_rows | awk '
    { rows++; if ($6 + 0 >= 0.1 || $7 + 0 >= 0.1) bad = 1 } END { exit (bad || rows != 8) }'
}
claim full "step 6: A·1 within 0.1 of v_i at every position, every head and layer, both inputs" step6_follows_c
step6_layer2_same() {
  output_of "theory rowsums" | rowsums_rows | awk '
    $2 == 2 && $8 + 0 > 0.001 { bad = 1 }
    $2 == 1 && $8 + 0 < 0.01 { bad = 1 }
    END { exit bad }'
}
claim full "step 6: layer 2 on task data within 0.001 of identical tokens; layer 1 differs by 0.01 or more" step6_layer2_same

# rowsums.json → "head layer kind i value" (kind: c, identical, task; layer 0 for c).
rowsums_json_values() {
  awk '
    /"head":/ { h = $2; sub(/,/, "", h); layer = 0 }
    /"layer":/ { layer = $2; sub(/,/, "", layer) }
    /"c_prediction": \[/ { kind = "c"; i = 0; next }
    /"identical_tokens": \[/ { kind = "identical"; i = 0; next }
    /"task_data": \[/ { kind = "task"; i = 0; next }
    /\]/ { kind = "" }
    kind != "" && /^ *-?[0-9]/ { v = $1; sub(/,/, "", v); print h, layer, kind, i++, v }' "$OUT/trained/rowsums.json"
}
# rowsums.json → "head k c" for c_by_offset (k = 0 … 2n − 2, offset k − (n − 1)).
rowsums_json_c_offsets() {
  awk '
    /"head":/ { h = $2; sub(/,/, "", h) }
    /"c_by_offset": \[/ { on = 1; k = 0; next }
    on && /\]/ { on = 0 }
    on && /^ *-?[0-9]/ { v = $1; sub(/,/, "", v); print h, k++, v }' "$OUT/trained/rowsums.json"
}
step6_layer1_is_layer2() {
  rowsums_json_values | awk '
    $3 != "c" { x[$1, $2, $3, $4] = $5; heads[$1] = 1; n = $4 + 1 > n ? $4 + 1 : n }
    END {
      for (h in heads) for (i = 0; i < n; i++) for (k = 0; k < 2; k++) {
        d = x[h, 1, "identical", i] - x[h, 2, k ? "task" : "identical", i]; if (d < 0) d = -d
        if (d > 0.001) bad = 1
      }
      exit (bad || n == 0) }'
}
claim full "step 6: layer 2, on both inputs, matches layer 1 on identical tokens (softmax(B) ⊙ C) to within 0.001" step6_layer1_is_layer2
claim full "step 6: heads 0, 1 and 3 move the same way at every step; head 2 rises at a few positions, two of them within 0.0001" step6_steps
step6_layer2_line() {  # the same, as the command prints it under the table
  output_of "theory rowsums" | awk '
    /^Layer 2 against layer 1 on identical tokens/ {
      found = 1; line = $0; sub(/.*layer 1.s\| /, "", line); split(line, w, " ")
      if (w[1] + 0 > 0.001 || w[5] + 0 > 0.001) bad = 1 }
    END { exit (!found || bad) }'
}
claim full "step 6: the line under the table shows layer 2 within 0.001 of layer 1 on identical tokens, on both inputs" step6_layer2_line
step6_head2_picture() {
  output_of "theory rowsums" | rowsums_rows | awk '
    { dev = $6 + 0 > $7 + 0 ? $6 + 0 : $7 + 0; if (dev > best) { best = dev; head = $1 } }
    END { exit !(head == 2 && best >= 0.085 && best < 0.095) }' &&
    rowsums_json_values | awk '
      $1 == 2 && $3 == "c" { c[$4] = $5 }
      $1 == 2 && $3 != "c" { x[$2, $3, $4] = $5; n = $4 + 1 > n ? $4 + 1 : n }
      END {
        for (i = 0; i < n; i++) {
          for (l = 1; l <= 2; l++) for (k = 0; k < 2; k++) {
            d = x[l, k ? "task" : "identical", i] - c[i]; if (d < 0) d = -d
            if (d > best) { best = d; at = i }
          }
          a = x[1, "identical", i] - x[2, "identical", i]; b = x[2, "identical", i] - x[2, "task", i]
          if (a < 0) a = -a; if (b < 0) b = -b; if (a > 0.001 || b > 0.001) apart = 1
        }
        exit (apart || at < n - 4) }'
}
claim full "step 6: head 2 strays farthest from v_i (up to 0.09, at the last positions); three of its lines coincide" step6_head2_picture

# ---- step 7: C's window ----
step7_window() {  # c larger right of 0 → v falls (heads 0-2); larger left → v rises (head 3)
  rowsums_json_c_offsets | awk '
    { c[$1, $2] = $3; if ($2 + 1 > m) m = $2 + 1 }
    END {
      n = (m + 1) / 2
      for (h = 0; h < 4; h++) {
        right = 0; left = 0
        for (k = 0; k < n - 1; k++) { left += c[h, k]; right += c[h, m - 1 - k] }
        if ((h < 3) != (right > left)) bad = 1
      }
      exit (bad || m == 0) }' &&
    output_of "theory rowsums" | rowsums_rows | awk '$2 == 1 { if (($1 < 3) != ($4 < $3)) bad = 1 } END { exit bad }'
}
claim full "step 7: where c is larger right of 0 (heads 0, 1, 2) v_i falls; head 3 is the mirror image" step7_window
step7_corners() {  # in every head the entry farthest from 1 is at offset -31 or +31
  rowsums_json_c_offsets | awk '
    { d = $3 - 1; if (d < 0) d = -d; if (d > best[$1]) { best[$1] = d; at[$1] = $2 }; if ($2 + 1 > m) m = $2 + 1; heads[$1] = 1 }
    END { for (h in heads) if (at[h] != 0 && at[h] != m - 1) bad = 1; exit (bad || m == 0) }'
}
claim full "step 7: the longest offsets (±31) are the most extreme entries of every head's c" step7_corners

# ---- step 8: URPE in one screen ----
step8_one_screen() {
  output_of "urpe_one_screen" | awk '
    function secs(s) { sub(/^\(/, "", s); return s + 0 }
    /^RPE:/ { rpe = 1; if ($5 - log(32) > 0.01 || log(32) - $5 > 0.01) bad = 1; if ($7 + 0 >= 6.25) bad = 1
              if ($11 != "3.12%") bad = 1; if (secs($(NF - 1)) >= 30) bad = 1 }
    /^URPE:/ { urpe = 1; if ($7 != "100.00%" || $11 != "100.00%") bad = 1; if (secs($(NF - 1)) >= 30) bad = 1 }
    END { exit (!rpe || !urpe || bad) }'
}
claim any "step 8: RPE at chance (loss ln 32, 1/32 on identical tokens), URPE 100% on both inputs, each run under 30 s" step8_one_screen

# ---- steps 12 and 13: the suites pass ----
step9_passes() { output_of 'test-case="gradcheck' | has_line 'Status: SUCCESS!'; }
claim any "step 12: every gradient check passes" step9_passes
step10_passes() {
  [ ! -x "$BUILD/test_cuda_sim_parity" ] || output_of 'test_cuda_sim_parity' | has_line 'Status: SUCCESS!'
}
claim any "step 13: the simulator's parity case passes" step10_passes

# ---- step 9: the denominator. Rows "| variant | pe | attention | seed | acc | non-finite | spike (step) | loss |" ----
denominator_rows() {  # variant seed accuracy nonfinite spike loss
  output_of "theory denominator" | awk -F'|' '
    $2 ~ /^ *(urpe-softmax|urpe-exp|rpe-exp) *$/ {
      v = $2; gsub(/ /, "", v); s = $5; gsub(/ /, "", s); a = $6; gsub(/[ %]/, "", a)
      f = $7; gsub(/ /, "", f); sp = $8; sub(/^ */, "", sp); sub(/ .*/, "", sp); l = $9; gsub(/ /, "", l)
      print v, s, a, f, sp, l }'
}
step12_measured() {
  denominator_rows | awk '
    { rows++; if ($4 != "none") bad = "a non-finite loss" }
    $1 == "urpe-softmax" { if ($3 != "100.00") bad = "softmax below 100%"; if ($5 > soft) soft = $5 }
    $1 != "urpe-softmax" { if (exp_low == "" || $5 < exp_low) exp_low = $5 }
    $1 == "rpe-exp" && $3 == "100.00" { escaped++ }
    END { if (rows != 9 || bad != "" || !escaped || exp_low + 0 <= soft + 0) exit 1 }'
}
claim full "step 9: nothing overflows, every softmax run reaches 100%, some rpe-exp seed escapes, every exp spike > every softmax spike" step12_measured
step12_collapse() {
  denominator_rows | awk '$1 == "rpe-exp" && ($6 - log(32)) < 0.01 && ($6 - log(32)) > -0.01 { found = 1 } END { exit !found }'
}
claim full "step 9: one rpe-exp seed ended at chance, ln 32" step12_collapse
