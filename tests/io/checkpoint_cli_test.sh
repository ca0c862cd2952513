#!/usr/bin/env bash
# inspect, quantize and gemm end to end through the CLI, checked by an independent stdlib-Python
# reading of the files; bad inputs give one-line errors naming the file and tensor.
set -uo pipefail
cli=${FP4GEMM_CLI:?set FP4GEMM_CLI to the fp4gemm binary}
here=$(cd "$(dirname "$0")" && pwd)
data=$(cd "$here/../data" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source "$(dirname "$0")/../cli/cli_test_helpers.sh"
export PYTHONPATH="$here${PYTHONPATH:+:$PYTHONPATH}"

for command in inspect quantize gemm; do
  "$cli" $command --help >/dev/null 2>&1 || fail "'fp4gemm $command --help' exited non-zero"
done

# A small model-shaped checkpoint: attention, dense MLP, routed and shared experts, embeddings.
python3 - "$work/in.safetensors" <<'PY' || fail "could not write the test checkpoint"
import random, sys
from safetensors_stdlib import save, f32_bytes
random.seed(5)
def weight(rows, cols):
    return ("F32", [rows, cols], f32_bytes([random.gauss(0, 1) for _ in range(rows * cols)]))
save(sys.argv[1], {
    "model.layers.0.self_attn.q_proj.weight": weight(32, 64),
    "model.layers.0.self_attn.o_proj.weight": weight(64, 32),
    "model.layers.0.mlp.down_proj.weight": weight(64, 48),
    "model.layers.1.mlp.experts.0.up_proj.weight": weight(16, 64),
    "model.layers.1.mlp.experts.1.up_proj.weight": weight(16, 64),
    "model.layers.1.mlp.shared_experts.up_proj.weight": weight(16, 64),
    "model.layers.1.mlp.gate.weight": weight(2, 64),
    "model.embed_tokens.weight": weight(10, 64),
    "model.norm.weight": ("F32", [64], f32_bytes([1.0] * 64)),
}, {"format": "pt"})
PY

out=$("$cli" quantize --in "$work/in.safetensors" --out "$work/ckpt/model.safetensors" 2>&1) || fail "quantize failed: $out"
grep -q "^quantized model.layers.0.self_attn.q_proj.weight" <<< "$out" || fail "quantize does not state what it quantized: $out"
grep -q "^copied    model.layers.1.mlp.gate.weight: excluded by pattern" <<< "$out" || fail "quantize does not state what it copied: $out"
grep -q "6 of 9 tensors quantized" <<< "$out" || fail "quantize summary wrong: $out"
[ -f "$work/ckpt/hf_quant_config.json" ] || fail "quantize wrote no hf_quant_config.json"

"$cli" inspect "$work/ckpt" >"$work/inspect.txt" 2>&1 || fail "inspect failed: $(cat "$work/inspect.txt")"
grep -q "GEMM shapes" "$work/inspect.txt" || fail "inspect text lacks GEMM shapes"
"$cli" inspect "$work/ckpt" --json >"$work/inspect.json" 2>&1 || fail "inspect --json failed"
python3 - "$work/inspect.json" <<'PY' || fail "inspect --json reports wrong totals"
import json, sys
report = json.load(open(sys.argv[1]))
assert report["quant_config"]["quant_algo"] == "NVFP4", report["quant_config"]
assert report["nvfp4_layers"]["total"] == 6, report["nvfp4_layers"]
classes = report["classes"]
assert classes["attention"]["nvfp4_layers"] == 2 and classes["attention"]["tensors"] == 6, classes["attention"]
assert classes["dense_mlp"]["nvfp4_layers"] == 1, classes["dense_mlp"]
assert classes["routed_experts"]["nvfp4_layers"] == 2, classes["routed_experts"]
assert classes["shared_experts"]["nvfp4_layers"] == 1, classes["shared_experts"]
assert classes["excluded"]["tensors"] == 1 and classes["excluded"]["bytes"] == 2 * 64 * 4, classes["excluded"]
assert classes["embeddings_lm_head"]["tensors"] == 1, classes["embeddings_lm_head"]
assert sum(c["bytes"] for c in classes.values()) == report["bytes"]
shapes = {(s["n"], s["k"]): s["count"] for s in report["gemm_shapes"]}
assert shapes == {(16, 64): 3, (32, 64): 1, (64, 32): 1, (64, 48): 1}, shapes
PY

# gemm, W4A16: against a stdlib-Python dequantize-and-multiply of the checkpoint's own bytes.
python3 - "$work/x.safetensors" <<'PY'
import random, sys
from safetensors_stdlib import save, f32_bytes
random.seed(9)
save(sys.argv[1], {"x": ("F32", [3, 64], f32_bytes([random.gauss(0, 1) for _ in range(3 * 64)]))})
PY
layer=model.layers.0.self_attn.q_proj
"$cli" gemm --checkpoint "$work/ckpt" --layer $layer --input "$work/x.safetensors" --output "$work/y32.safetensors" \
  --output-dtype f32 >/dev/null 2>&1 || fail "gemm f32 failed"
"$cli" gemm --checkpoint "$work/ckpt" --layer $layer --input "$work/x.safetensors" --output "$work/y16.safetensors" \
  >/dev/null 2>&1 || fail "gemm bf16 failed"
python3 - "$work" $layer <<'PY' || fail "gemm output differs from the stdlib reference"
import sys
from safetensors_stdlib import load, values, dequantize
work, layer = sys.argv[1], sys.argv[2]
ckpt, _ = load(work + "/ckpt/model.safetensors")
x = values("F32", load(work + "/x.safetensors")[0]["x"][2])
codes, scales = ckpt[layer + ".weight"][2], ckpt[layer + ".weight_scale"][2]
alpha = values("F32", ckpt[layer + ".weight_scale_2"][2])[0]
n, k, m = 32, 64, 3
w = dequantize(codes, scales, n, k)
for name, dtype, tolerance in (("y32", "F32", 1e-5), ("y16", "BF16", 2 ** -8)):
    tensors, metadata = load(f"{work}/{name}.safetensors")
    out = tensors["output"]
    assert out[0] == dtype and out[1] == [m, n], out[:2]
    assert metadata["fp4gemm.layer"] == layer, metadata
    y = values(dtype, out[2])
    for i in range(m):
        for j in range(n):
            ref = alpha * sum(x[i * k + c] * w[j][c] for c in range(k))
            scale = alpha * sum(abs(x[i * k + c] * w[j][c]) for c in range(k))
            assert abs(y[i * n + j] - ref) <= tolerance * scale + 1e-30, (name, i, j, y[i * n + j], ref)
PY

# gemm serves through the Runner: the metadata and the summary name the backend that served
# (auto: whichever this machine's order picks), --backend picks one, --explain says why.
"$cli" gemm --checkpoint "$work/ckpt" --layer $layer --input "$work/x.safetensors" --output "$work/yref.safetensors" \
  --output-dtype f32 --backend ref --device cpu --explain >"$work/gemm-ref.txt" 2>"$work/gemm-ref-explain.txt" \
  || fail "gemm --backend ref failed: $(cat "$work/gemm-ref.txt" "$work/gemm-ref-explain.txt")"
grep -q "on ref (cpu:" "$work/gemm-ref.txt" || fail "gemm --backend ref does not say ref served on the CPU: $(cat "$work/gemm-ref.txt")"
grep -q "^choice:   ref" "$work/gemm-ref-explain.txt" || fail "gemm --explain does not explain the choice: $(cat "$work/gemm-ref-explain.txt")"
"$cli" gemm --checkpoint "$work/ckpt" --layer $layer --input "$work/x.safetensors" --output "$work/yauto.safetensors" \
  >"$work/gemm-auto.txt" 2>&1 || fail "gemm (auto) failed: $(cat "$work/gemm-auto.txt")"
python3 - "$work" <<'PY' || fail "gemm's metadata does not name the backends that served"
import re, sys
from safetensors_stdlib import load
work = sys.argv[1]
assert load(work + "/yref.safetensors")[1]["fp4gemm.backend"] == "ref"
served = re.search(r" on (\S+) \(", open(work + "/gemm-auto.txt").read()).group(1)
assert load(work + "/yauto.safetensors")[1]["fp4gemm.backend"] == served, served
PY
expect_error "unknown backend" gemm --checkpoint "$work/ckpt" --layer $layer --input "$work/x.safetensors" --output "$work/e.safetensors" --backend nope

# gemm, W4A4: needs input_scale; add one to a copy of the layer. The result must be close to W4A16
# but not equal (the activation really was quantized).
python3 - "$work" $layer <<'PY' || fail "could not write the W4A4 checkpoint"
import sys
from safetensors_stdlib import load, save, f32_bytes
work, layer = sys.argv[1], sys.argv[2]
ckpt, _ = load(work + "/ckpt/model.safetensors")
tensors = {name: t for name, t in ckpt.items() if name.startswith(layer + ".")}
tensors[layer + ".input_scale"] = ("F32", [], f32_bytes([4.0 / (6 * 448)]))
save(work + "/w4a4.safetensors", tensors)
PY
"$cli" gemm --checkpoint "$work/w4a4.safetensors" --layer $layer --input "$work/x.safetensors" --output "$work/y4.safetensors" \
  --output-dtype f32 --w4a4 >"$work/w4a4.txt" 2>&1 || fail "gemm --w4a4 failed: $(cat "$work/w4a4.txt")"
grep -q "weight_scale_2 x input_scale" "$work/w4a4.txt" || fail "gemm --w4a4 does not say how alpha was formed"
python3 - "$work" <<'PY' || fail "W4A4 output is not a quantized-activation version of W4A16"
import sys
from safetensors_stdlib import load, values
work = sys.argv[1]
a = values("F32", load(work + "/y32.safetensors")[0]["output"][2])
b = values("F32", load(work + "/y4.safetensors")[0]["output"][2])
error = sum((p - q) ** 2 for p, q in zip(a, b)) ** 0.5
norm = sum(p * p for p in a) ** 0.5
assert a != b, "identical: the activation was not quantized"
assert error < 0.2 * norm, (error, norm)
PY

# quantize of a sharded checkpoint directory: shards keep their names, the output opens through its
# new index with the same six NVFP4 layers, config.json travels with it, and a directory that
# already holds shards is refused.
python3 - "$work" <<'PY' || fail "could not write the sharded test checkpoint"
import json, os, sys
from safetensors_stdlib import load, save
work = sys.argv[1]
tensors, _ = load(work + "/in.safetensors")
names = sorted(tensors)
os.makedirs(work + "/sharded", exist_ok=True)
shards = {"model-00001-of-00002.safetensors": names[:4], "model-00002-of-00002.safetensors": names[4:]}
for shard, members in shards.items():
    save(work + "/sharded/" + shard, {name: tensors[name] for name in members}, {"format": "pt"})
json.dump({"metadata": {}, "weight_map": {n: s for s, members in shards.items() for n in members}},
          open(work + "/sharded/model.safetensors.index.json", "w"))
open(work + "/sharded/config.json", "w").write('{"model_type": "llama"}\n')
PY
out=$("$cli" quantize --in "$work/sharded" --out "$work/sharded-nvfp4" --quiet 2>&1) || fail "quantize of a directory failed: $out"
grep -q "6 of 9 tensors quantized to NVFP4 in 2 shard(s)" <<< "$out" || fail "directory quantize summary wrong: $out"
for file in model-00001-of-00002.safetensors model-00002-of-00002.safetensors model.safetensors.index.json hf_quant_config.json config.json; do
  [ -f "$work/sharded-nvfp4/$file" ] || fail "directory quantize wrote no $file"
done
"$cli" inspect "$work/sharded-nvfp4" --json >"$work/sharded.json" 2>&1 || fail "inspect of the quantized directory failed: $(cat "$work/sharded.json")"
python3 -c "import json,sys; r=json.load(open(sys.argv[1])); assert r['nvfp4_layers']['total'] == 6, r['nvfp4_layers']" "$work/sharded.json" \
  || fail "the quantized directory does not hold the six NVFP4 layers"

# Errors: one line, non-zero exit, naming the file and tensor.
head -c 100 "$work/ckpt/model.safetensors" >"$work/truncated.safetensors"
expect_error "truncated.safetensors" inspect "$work/truncated.safetensors"
printf 'not a safetensors file at all' >"$work/garbage.safetensors"
expect_error "garbage.safetensors" inspect "$work/garbage.safetensors"
expect_error "'nope' is not an NVFP4 layer" gemm --checkpoint "$work/ckpt" --layer nope --input "$work/x.safetensors" --output "$work/e.safetensors"
expect_error "has no input_scale" gemm --checkpoint "$work/ckpt" --layer $layer --input "$work/x.safetensors" --output "$work/e.safetensors" --w4a4
expect_error "needs [M, 32]" gemm --checkpoint "$work/ckpt" --layer model.layers.0.self_attn.o_proj --input "$work/x.safetensors" --output "$work/e.safetensors"
expect_error "--output-dtype" gemm --checkpoint "$work/ckpt" --layer $layer --input "$work/x.safetensors" --output "$work/e.safetensors" --output-dtype f8
expect_error "does not exist" inspect "$work/missing"
expect_error "already holds model-00001-of-00002.safetensors" quantize --in "$work/sharded" --out "$work/sharded-nvfp4"
python3 - "$work" $layer <<'PY'
import sys
from safetensors_stdlib import load, save
work, layer = sys.argv[1], sys.argv[2]
ckpt, _ = load(work + "/ckpt/model.safetensors")
tensors = {name: t for name, t in ckpt.items() if name.startswith(layer + ".")}
dtype, shape, blob = tensors[layer + ".weight_scale"]
tensors[layer + ".weight_scale"] = (dtype, shape, b"\x7f" + blob[1:])
save(work + "/nan.safetensors", tensors)
PY
expect_error "'$layer.weight_scale' has a NaN block scale" gemm --checkpoint "$work/nan.safetensors" --layer $layer --input "$work/x.safetensors" --output "$work/e.safetensors"

if [ $failures -eq 0 ]; then echo "checkpoint cli: all passed"; fi
exit $failures
