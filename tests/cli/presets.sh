#!/bin/sh
# Lesson figures follow the presets: in a copy of the data folder whose llama2-70b has 40
# layers instead of its 80, every sentence of every lesson that gives a figure of llama2-70b's
# (a placeholder naming one of its quantities, llama2_70b.NAME) reads differently, no sentence
# that names llama2-70b holds a count typed by hand, and the Lab's step about it still holds
# its checks (they are computed too). Each sentence that names llama2-70b or one of its
# quantities is rendered by `scalelab run` from a lesson file of its own, once with each data
# folder.
. "${srcdir:-.}/tests/lib.sh"
threadless "the presets' figures in the lessons' text"

copy="$T_TMP/data"
mkdir -p "$copy"
cp -R "$srcdir/lessons" "$srcdir/assets" "$copy/"
sed -i 's/^layers = 80$/layers = 40/' "$copy/assets/models/llama2-70b.ini"
if grep -q '^layers = 40$' "$copy/assets/models/llama2-70b.ini"; then
    ok "the copy's llama2-70b has 40 layers"
else
    not_ok "the copy's llama2-70b has 40 layers" "$(cat "$copy/assets/models/llama2-70b.ini")"
fi

# The sentences, each a step of one lesson file; their places in sentences.txt.
python3 - "$srcdir/lessons" "$T_TMP/sentences.lesson" "$T_TMP/sentences.txt" <<'PY'
import glob, os, re, sys
src, out, places = sys.argv[1:4]
steps = []
for path in sorted(glob.glob(os.path.join(src, "*.lesson"))):
    name = os.path.basename(path)
    paras, cur = [], []
    def flush():
        if cur:
            paras.append((cur[0][0], " ".join(t for _, t in cur)))
        cur.clear()
    for no, line in enumerate(open(path, encoding="utf-8"), 1):
        line = line.rstrip("\n")
        m = re.match(r"@(question|option|explain|step|title|outcome) (.*)", line)
        if m:
            flush()
            paras.append((no, m.group(2)))
        elif line.startswith(("@", "#")) or not line.strip():
            flush()
        elif re.match(r"(- |\* |\d+[.)] )", line):  # a list item: its own paragraph
            flush()
            cur.append((no, line))
        else:
            cur.append((no, line[1:] if line.startswith("\\") else line.strip()))
    flush()
    # explanations continue over their lines: one sentence may span several @explain lines
    for no, para in paras:
        depth, start = 0, 0
        for i, c in enumerate(para + " "):
            depth += c == "{"
            depth -= c == "}"
            if depth == 0 and c == " " and i > 0 and para[i - 1] in ".?" and (i + 1 >= len(para) or para[i + 1].isupper() or para[i + 1] == "{"):
                sentence, start = para[start:i].strip(), i + 1
                if re.search(r"llama2[-_]70b", sentence):
                    steps.append((name, no, sentence))
        rest = para[start:].strip()
        if rest and re.search(r"llama2[-_]70b", rest):
            steps.append((name, no, rest))
with open(out, "w", encoding="utf-8") as f:
    f.write("@title The sentences about llama2-70b\n@duration 1 min\n@outcome read them\n")
    for i, (_, _, s) in enumerate(steps):
        f.write("@step %d\n%s\n" % (i + 1, s))
    f.write("@end\n")
with open(places, "w") as f:
    for name, no, s in steps:
        f.write("%s:%d: %s\n" % (name, no, s))
PY
nsent=$(wc -l <"$T_TMP/sentences.txt")
if [ "$nsent" -ge 5 ]; then ok "the lessons speak of llama2-70b in $nsent sentences"; else
    not_ok "the lessons speak of llama2-70b in at least 5 sentences" "$(cat "$T_TMP/sentences.txt")"; fi

SCALELAB_DATA="$srcdir" "$SCALELAB" run "$T_TMP/sentences.lesson" --json >"$T_TMP/a.json" 2>"$T_TMP/a.err"
st_a=$?
SCALELAB_DATA="$copy" "$SCALELAB" run "$T_TMP/sentences.lesson" --json >"$T_TMP/b.json" 2>"$T_TMP/b.err"
st_b=$?
check_eq "$st_a $st_b" "0 0" "the sentences render with both data folders"
if python3 - "$T_TMP/a.json" "$T_TMP/b.json" "$T_TMP/sentences.txt" >"$T_TMP/why" 2>&1 <<'PY'; then
import json, re, sys
a, b = (json.load(open(p))["steps"] for p in sys.argv[1:3])
places = open(sys.argv[3], encoding="utf-8").read().splitlines()
bad = []
for x, y, place in zip(a, b, places):
    raw = place.split(": ", 1)[1]
    # outside its placeholders, no number of 3 or more digits (a count typed by hand)
    if re.search(r"(?<![\w.,-])\d[\d,.]{2,}", re.sub(r"\{[^}]*\}", "", raw)):
        bad.append("a figure typed by hand about llama2-70b: " + place)
    # a figure of llama2-70b's follows its preset
    if re.search(r"\{[^}]*llama2_70b\.", raw) and x["text"] == y["text"]:
        bad.append("unchanged with 40 layers: " + place + "\n    reads: " + " ".join(x["text"]))
print("\n".join(bad))
sys.exit(1 if bad else 0)
PY
    ok "every sentence about llama2-70b with a figure changes with its layers"
else
    not_ok "every sentence about llama2-70b with a figure changes with its layers" "$(cat "$T_TMP/why")"
fi

# The Lab's step about llama2-70b: its experiments' checks hold with the changed preset too.
step=$(grep '^@step' "$srcdir/lessons/90-lab.lesson" | grep -n 'other models' | cut -d: -f1)
SCALELAB_DATA="$copy" run run lab --step "$step" --json
check_status 0 "the Lab's llama2-70b step with the changed preset"
check_json "d['failed'] == 0 and d['passed'] >= 3" "its checks are computed: they hold for 40 layers as for 80"

# Lesson 6's ring bytes are K's and V's, kv_heads x d_model / heads wide (the calculator's
# S_kv), not d_model's: with a grouped-query synthetic-7b (8 key/value heads of its 32) in the
# copy, the explanation's S and its step's bytes still agree, layers x 6 x 3/4 x S.
sed -i 's/^kv_heads = 32$/kv_heads = 8/' "$copy/assets/models/synthetic-7b.ini"
step=$(grep '^@step' "$srcdir/lessons/06-long-sequences.lesson" | grep -n 'Keys and values go round' | cut -d: -f1)
SCALELAB_DATA="$copy" run run 6 --step "$step" --json
check_status 0 "lesson 6's ring step with a grouped-query synthetic-7b"
check_json "(lambda x: abs(32 * 6 * 3 / 4 * float(__import__('re').search(r'= ([0-9.]+) MiB;', x).group(1)) / 1024 - float(__import__('re').search(r'= ([0-9.]+) GiB', x).group(1))) < 0.01)([q for q in d['steps'][0]['questions'] if 'synthetic-7b' in q['question']][0]['explain'])" \
    "its S is K's or V's bytes, the calculator's: layers x 6 x 3/4 x S is the step's"

done_testing
