#!/usr/bin/env bash
# `fp4gemm tune` end to end on the CPU: it writes a profile that the runner takes (explain reports
# the hit), tunes the shapes of a checkpoint's NVFP4 layers or of a model's config.json, says per
# problem what won and what auto picks, and refuses bad requests with one-line errors.
set -uo pipefail
cli=${FP4GEMM_CLI:?set FP4GEMM_CLI to the fp4gemm binary}
data=$(cd "$(dirname "$0")/../data" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source "$(dirname "$0")/../cli/cli_test_helpers.sh"

out=$("$cli" tune --device cpu --shapes 64x128,128x64 -m 1,8 --out "$work/p.json" 2>&1) || fail "tune failed: $out"
grep -q "^ *8 *64 *128  cpu" <<< "$out" || fail "tune does not report M = 8 on 64x128: $out"
grep -q "wrote $work/p.json: 2 entries for 2 shape(s) x 2 M" <<< "$out" || fail "tune summary wrong: $out"
python3 - "$work/p.json" <<'PY' || fail "the profile is not what tune should write"
import json, sys
profile = json.load(open(sys.argv[1]))
assert profile["metadata"]["gpu"] == "cpu" and profile["metadata"]["cuda"] == "none", profile["metadata"]
entries = {(e["n"], e["k"]): e for e in profile["entries"]}
assert set(entries) == {(64, 128), (128, 64)}, entries
assert all(e["m_max"] == 8 and e["backend"] == "cpu" and e["activation"] == "bf16" for e in entries.values()), entries
PY
explained=$("$cli" explain --device cpu -m 5 -n 64 -k 128 --profile "$work/p.json" 2>&1) || fail "explain with the profile failed: $explained"
grep -q "profile:  hit" <<< "$explained" || fail "explain does not take the tuned profile: $explained"
missed=$("$cli" explain --device cpu -m 9 -n 64 -k 128 --profile "$work/p.json" 2>&1)
grep -q "profile:  miss" <<< "$missed" || fail "M past the tuned ones should miss the profile: $missed"

# Precedence: FP4GEMM_BACKEND wins over a tuned profile. The profile is made to pick 'ref' (auto
# picks 'cpu'), so the profile alone visibly decides, and the variable must decide against it.
sed 's/"backend": "cpu"/"backend": "ref"/' "$work/p.json" > "$work/ref.json"
from_profile=$(env -u FP4GEMM_BACKEND "$cli" explain --device cpu -m 5 -n 64 -k 128 --profile "$work/ref.json" 2>&1)
grep -q "^choice:   ref — the tuned profile's entry" <<< "$from_profile" \
  || fail "a profile that picks ref should decide when nothing else is set: $from_profile"
from_env=$(FP4GEMM_BACKEND=cpu "$cli" explain --device cpu -m 5 -n 64 -k 128 --profile "$work/ref.json" 2>&1)
grep -q "^setting:  cpu (from FP4GEMM_BACKEND)" <<< "$from_env" || fail "explain does not name FP4GEMM_BACKEND: $from_env"
grep -q "^profile:  not consulted: the backend was chosen explicitly" <<< "$from_env" \
  || fail "FP4GEMM_BACKEND should leave the profile unconsulted: $from_env"
grep -q "^choice:   cpu — requested by FP4GEMM_BACKEND" <<< "$from_env" \
  || fail "FP4GEMM_BACKEND=cpu should win over the profile's ref: $from_env"

# The shapes of a checkpoint's NVFP4 layers, one JSON line per problem, the summary on stderr.
"$cli" quantize --in "$data/golden_input.safetensors" --out "$work/ckpt/model.safetensors" --quiet >/dev/null 2>&1 \
  || fail "could not make the test checkpoint"
"$cli" tune --device cpu --checkpoint "$work/ckpt" -m 2 --json --out "$work/c.json" >"$work/c.jsonl" 2>"$work/c.err" \
  || fail "tune --checkpoint failed: $(cat "$work/c.err")"
python3 - "$work/c.jsonl" "$work/c.json" <<'PY' || fail "tune --checkpoint --json is wrong"
import json, sys
lines = [json.loads(line) for line in open(sys.argv[1])]
assert lines and all(line["m"] == 2 and line["tuned"] == "cpu" and line["tuned_us"] > 0 for line in lines), lines
shapes = {(line["n"], line["k"]) for line in lines}
profile = json.load(open(sys.argv[2]))
assert {(e["n"], e["k"]) for e in profile["entries"]} == shapes, (profile, shapes)
PY
grep -q "^wrote" "$work/c.err" || fail "tune --json does not put its summary on stderr"

# The shapes of a model's config.json, without its weights, per GPU of a tensor-parallel group.
cat > "$work/config.json" <<'JSON'
{"model_type": "tiny", "hidden_size": 128, "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 192}
JSON
out=$("$cli" tune --device cpu --config "$work" --tp 2 -m 1 --out "$work/m.json" 2>&1) || fail "tune --config failed: $out"
grep -q "tune: --config $work (tiny, per GPU of 2): self_attn.qkv_proj 128x128, self_attn.o_proj 128x64, mlp.gate_up_proj 192x128, mlp.down_proj 128x96" \
  <<< "$out" || fail "tune --config does not list the config's shapes: $out"
python3 - "$work/m.json" <<'PY' || fail "tune --config's profile is not the config's shapes"
import json, sys
profile = json.load(open(sys.argv[1]))
assert {(e["n"], e["k"]) for e in profile["entries"]} == {(128, 128), (128, 64), (192, 128), (128, 96)}, profile
PY
expect_error "config.json: no such file" tune --device cpu --config "$work/ckpt" --out "$work/e.json"
expect_error "does not split over 3 GPUs" tune --device cpu --config "$work/config.json" --tp 3 --out "$work/e.json"
echo '{"hidden_size": 128' > "$work/bad.json"
expect_error "bad.json: is not a JSON object" tune --device cpu --config "$work/bad.json" --out "$work/e.json"

expect_error "give --checkpoint, --config or --shapes" tune --device cpu --out "$work/e.json"
expect_error "is not a multiple of 16" tune --device cpu --shapes 64x100 --out "$work/e.json"
expect_error "cannot write the tuned profile" tune --device cpu --shapes 64x128 -m 1 --out "$work/missing/dir/p.json"
expect_error "holds no NVFP4 layer" tune --device cpu --checkpoint "$data/golden_input.safetensors" --out "$work/e.json"
expect_error "--out is required" tune --device cpu --shapes 64x128

# tune --moe on a tiny layer: each token count's timings, the winner marked, and the moe entries
# written beside no GEMM ones (moe_io/moe_cli_test.sh runs `fp4gemm moe --profile` on such a file).
out=$("$cli" tune --moe --experts 4 --topk 2 --hidden 64 --intermediate 16 --tokens 1,2 --out "$work/moe.json" 2>&1) ||
  fail "tune --moe failed: $out"
grep -q "^T=2 .*<- tuned" <<< "$out" || fail "tune --moe does not mark the winner at T=2: $out"
python3 - "$work/moe.json" <<'PY' || fail "tune --moe wrote the wrong profile"
import json, sys
profile = json.load(open(sys.argv[1]))
assert profile["entries"] == [], profile["entries"]
assert profile["moe"][-1]["tokens_max"] == 2 and profile["moe"][-1]["experts"] == 4, profile["moe"]
PY
expect_error "--hidden must be a positive multiple of 16 (the NVFP4 block), not 60" tune --moe --experts 4 --topk 2 --hidden 60 --intermediate 16 --out "$work/e.json"
expect_error "--experts requires --moe" tune --experts 4 --shapes 64x128 --out "$work/e.json"

if [ $failures -eq 0 ]; then echo "tune cli: all passed"; fi
exit $failures
