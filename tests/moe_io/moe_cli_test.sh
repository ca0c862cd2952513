#!/usr/bin/env bash
# MoE checkpoints through the CLI: quantize writes fused and per-expert NVFP4 experts with the
# routers kept, inspect shows each MoE layer, bench --moe and the model's decode-step report run
# on the CPU, bad requests are one-line errors, `fp4gemm moe` runs a layer and `ref` and `cpu` agree.
set -uo pipefail
cli=${FP4GEMM_CLI:?set FP4GEMM_CLI to the fp4gemm binary}
here=$(cd "$(dirname "$0")" && pwd)
models=$(cd "$here/../data/models" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source "$here/../cli/cli_test_helpers.sh"
export PYTHONPATH="$here/../io${PYTHONPATH:+:$PYTHONPATH}"

# Layer 0: fused experts and a shared expert; layer 1: per-expert tensors. E = 4, H = 64, I = 16.
mkdir -p "$work/in"
python3 - "$work/in/model.safetensors" <<'PY' || fail "could not write the test checkpoint"
import random, sys
from safetensors_stdlib import save, f32_bytes
random.seed(7)
def tensor(*shape):
    count = 1
    for size in shape:
        count *= size
    return ("F32", list(shape), f32_bytes([random.gauss(0, 1) for _ in range(count)]))
tensors = {
    "model.layers.0.mlp.experts.gate_up_proj": tensor(4, 32, 64),
    "model.layers.0.mlp.experts.down_proj": tensor(4, 64, 16),
    "model.layers.0.mlp.gate.weight": tensor(4, 64),
    "model.layers.0.mlp.shared_expert.gate_proj.weight": tensor(32, 64),
    "model.layers.0.mlp.shared_expert.up_proj.weight": tensor(32, 64),
    "model.layers.0.mlp.shared_expert.down_proj.weight": tensor(64, 32),
    "model.layers.0.mlp.shared_expert_gate.weight": tensor(1, 64),
    "model.layers.1.mlp.gate.weight": tensor(4, 64),
}
for e in range(4):
    tensors[f"model.layers.1.mlp.experts.{e}.gate_proj.weight"] = tensor(16, 64)
    tensors[f"model.layers.1.mlp.experts.{e}.up_proj.weight"] = tensor(16, 64)
    tensors[f"model.layers.1.mlp.experts.{e}.down_proj.weight"] = tensor(64, 16)
save(sys.argv[1], tensors, {"format": "pt"})
PY
echo '{"model_type": "qwen3_moe", "hidden_size": 64, "num_experts": 4, "num_experts_per_tok": 2, "norm_topk_prob": true}' >"$work/in/config.json"

out=$("$cli" quantize --in "$work/in" --out "$work/ckpt" 2>&1) || fail "quantize failed: $out"
grep -q "^quantized model.layers.0.mlp.experts.gate_up_proj: F32 \[4, 32, 64\] -> U8 \[4, 32, 32\]" <<< "$out" ||
  fail "quantize does not quantize fused experts expert by expert: $out"
grep -q "^copied    model.layers.0.mlp.gate.weight" <<< "$out" || fail "quantize does not keep the router: $out"
grep -q "^copied    model.layers.0.mlp.shared_expert_gate.weight" <<< "$out" || fail "quantize does not keep the shared expert gate: $out"

"$cli" inspect "$work/ckpt" >"$work/inspect.txt" 2>&1 || fail "inspect failed: $(cat "$work/inspect.txt")"
grep -q "MoE layers (2)" "$work/inspect.txt" || fail "inspect lists no MoE layers: $(cat "$work/inspect.txt")"
grep -E -q "model.layers.0.mlp +4 x \[64, 16\] +k 2 +fused_gate_up +router +shared nvfp4 \[I 32\] gated" "$work/inspect.txt" ||
  fail "inspect's fused MoE layer line is wrong: $(cat "$work/inspect.txt")"
grep -E -q "model.layers.1.mlp +4 x \[64, 16\] +k 2 +separate +router +shared none" "$work/inspect.txt" ||
  fail "inspect's per-expert MoE layer line is wrong: $(cat "$work/inspect.txt")"
"$cli" inspect "$work/ckpt" --json >"$work/inspect.json" 2>&1 || fail "inspect --json failed"
python3 - "$work/inspect.json" <<'PY' || fail "inspect --json reports the MoE layers wrong"
import json, sys
report = json.load(open(sys.argv[1]))
layers = {layer["prefix"]: layer for layer in report["moe_layers"]}
assert layers["model.layers.0.mlp"]["layout"] == "fused_gate_up" and layers["model.layers.0.mlp"]["experts"] == 4, layers
assert layers["model.layers.1.mlp"]["layout"] == "separate" and layers["model.layers.1.mlp"]["top_k"] == 2, layers
shapes = {(s["n"], s["k"]): s["count"] for s in report["gemm_shapes"]}
assert shapes[(32, 64)] == 4 + 2 and shapes[(16, 64)] == 8 and shapes[(64, 16)] == 8, shapes  # fused gate_up per expert + shared gate and up; per-expert gate and up; down of both layers
PY

# bench --moe: the OpenBLAS peer always, our layer when it is built.
out=$("$cli" bench --moe --experts 4 --topk 2 --hidden 64 --intermediate 32 --tokens 1,4 --device cpu 2>&1) ||
  fail "bench --moe failed: $out"
[ "$(grep -c "openblas_sgemm (peer)" <<< "$out")" -eq 2 ] || fail "bench --moe lacks a peer row per token count: $out"
grep -q "E=4 k=2 H=64 I=32" <<< "$out" || fail "bench --moe does not state the layer: $out"
# backend, tokens, active, us, roofline us, time / roofline, ref error (not checked on the CPU), peer / ours.
[ "$(grep -E -c "^(cpu|ref) +[0-9]+ +[0-9]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +- +openblas_sgemm [0-9.]+x$" <<< "$out")" -eq 2 ] ||
  fail "bench --moe lacks our layer's rows with a roofline and a speedup: $out"
[ "$(grep -E -c "^  (cpu|ref)( \(router\))?, T = [14]: ." <<< "$out")" -ge 2 ] || fail "bench --moe does not say how ours ran at each T: $out"
out=$("$cli" bench --moe --config "$models/tiny_moe.json" --tokens 2 --device cpu --json 2>&1) || fail "bench --moe --config failed: $out"
python3 - <<PY || fail "bench --moe --config --json is wrong: $out"
import json
lines = [json.loads(line) for line in """$out""".splitlines()]
assert all(line["experts"] == 8 and line["top_k"] == 2 and line["shared_intermediate"] == 128 for line in lines), lines
assert any(line["peer"] and line["ok"] and line["time_us"] > 0 for line in lines), lines
assert all(line["kernel"] for line in lines if not line["peer"] and line["ok"]), lines  # the backend's plan
assert not any("kernel" in line for line in lines if line["peer"]), lines
PY

# The model's decode step.
out=$("$cli" bench --config "$models/tiny_moe.json" --tokens 1,2 --device cpu 2>&1) || fail "bench --config --tokens failed: $out"
[ "$(grep -c "tok/s per sequence" <<< "$out")" -ge 4 ] || fail "the step report lacks our and the peer's totals per token count: $out"
grep -q "^  fp4gemm .*MoE experts .*attention .*shared expert" <<< "$out" || fail "the step report lacks the share of each kind: $out"
grep -E -q "^  MoE experts +experts E=8 k=2 +4 " <<< "$out" || fail "the step report does not count the MoE layers: $out"
out=$("$cli" bench --config "$models/tiny_moe.json" --tokens 1 --ep 2 --device cpu --no-peers --json 2>&1) || fail "bench --ep failed: $out"
grep -q '"name":"experts E=4 k=1"' <<< "$out" || fail "--ep 2 does not halve the experts per GPU: $out"

# explain --moe: the MoE backend and its plan, here on the CPU and on a simulated H100 (a CUDA
# build chooses cuda_moe there and names the K split of T = 1's short grid).
out=$("$cli" explain --moe --experts 8 --topk 2 --hidden 64 --intermediate 32 --tokens 3 --device cpu 2>&1) ||
  fail "explain --moe failed: $out"
grep -q "^problem:  T=3 H=64 I=32 E=8 k=2" <<< "$out" || fail "explain --moe does not state the problem: $out"
grep -q "^choice:   cpu" <<< "$out" || fail "explain --moe on the CPU does not choose cpu: $out"
grep -q "^plan:     tokens grouped by expert" <<< "$out" || fail "explain --moe lacks the plan: $out"
out=$("$cli" explain --moe --experts 512 --topk 10 --hidden 4096 --intermediate 1024 --simulate-sm 90 2>&1) ||
  fail "explain --moe --simulate-sm failed: $out"
grep -q "^note:     simulated device" <<< "$out" || fail "explain --moe does not say the device is simulated: $out"
if grep -q "^choice:   cuda_moe" <<< "$out"; then
  grep -q "^plan:     routing (router logits.*K split over 2 warps a block" <<< "$out" || fail "the simulated H100's plan at T = 1 is wrong: $out"
  out=$("$cli" explain --moe --experts 512 --topk 10 --hidden 4096 --intermediate 1024 --tokens 4096 --given-routing --simulate-sm 90 2>&1)
  grep -q "^plan:     given routing; .*the routed experts on the wide kernel" <<< "$out" || fail "the simulated H100's plan at T = 4096 is wrong: $out"
fi
out=$("$cli" explain --moe --config "$models/tiny_moe.json" --tokens 2 --device cpu --json 2>&1) || fail "explain --moe --config --json failed: $out"
python3 - <<PY || fail "explain --moe --json is wrong: $out"
import json
report = json.loads("""$out""")
assert report["problem"].startswith("T=2 ") and "E=8 k=2" in report["problem"], report
assert report["choice"] == "cpu" and report["plan"] and any(c["backend"] == "ref" and c["ok"] for c in report["candidates"]), report
PY
expect_error "--topk must be between 1 and the expert count 4" explain --moe --experts 4 --topk 5 --device cpu
expect_error "--given-routing requires --moe" explain --given-routing

expect_error "--tokens needs --config" bench --tokens 1 --device cpu
expect_error "--topk must be between 1 and the expert count 4" bench --moe --experts 4 --topk 5 --device cpu
expect_error "--experts" bench --experts 4
expect_error "excludes" bench --moe --config "$models/tiny_moe.json" --experts 4 --device cpu
expect_error "do not split over 3 GPUs" bench --config "$models/tiny_moe.json" --tokens 1 --ep 3 --device cpu

python3 - "$work/x.safetensors" <<'PY' || fail "could not write the input"
import random, sys
from safetensors_stdlib import save, f32_bytes
random.seed(3)
save(sys.argv[1], {"x": ("F32", [3, 64], f32_bytes([random.gauss(0, 1) for _ in range(3 * 64)]))})
PY
for layer in model.layers.0.mlp model.layers.1.mlp; do
  for backend in ref cpu; do
    out=$("$cli" moe --checkpoint "$work/ckpt" --layer $layer --input "$work/x.safetensors" --output "$work/y_$backend.safetensors" \
          --output-dtype f32 --backend $backend 2>&1) || fail "moe --backend $backend on $layer failed: $out"
    grep -q "T=3 H=64 I=16 E=4 k=2 norm_topk_prob=true (config.json).* on $backend" <<< "$out" || fail "moe does not say what ran on $backend: $out"
  done
  python3 - "$work/y_ref.safetensors" "$work/y_cpu.safetensors" <<'PY' || fail "moe on $layer: cpu and ref disagree"
import math, struct, sys
from safetensors_stdlib import load
ref, cpu = (load(path)[0]["output"] for path in sys.argv[1:])
assert ref[1] == [3, 64] and cpu[1] == [3, 64], (ref[1], cpu[1])
a = struct.unpack(f"<{3 * 64}f", ref[2]); b = struct.unpack(f"<{3 * 64}f", cpu[2])
assert all(math.isfinite(v) for v in a + b)
scale = max(abs(v) for v in a)
assert scale > 0 and max(abs(x - y) for x, y in zip(a, b)) <= 2e-2 * scale, scale
PY
done
out=$("$cli" moe --checkpoint "$work/ckpt" --layer model.layers.0.mlp --input "$work/x.safetensors" --output "$work/y.safetensors" --explain 2>&1) ||
  fail "moe --explain failed: $out"
grep -q "cpu" <<< "$out" || fail "moe --explain does not explain: $out"
expect_error "'model.layers.7.mlp' has no experts" moe --checkpoint "$work/ckpt" --layer model.layers.7.mlp --input "$work/x.safetensors" --output "$work/z.safetensors"
expect_error "top-k 5 is above the layer's 4 experts" moe --checkpoint "$work/ckpt" --layer model.layers.0.mlp --topk 5 --input "$work/x.safetensors" --output "$work/z.safetensors"
[ ! -e "$work/z.safetensors" ] || fail "moe wrote an output for a bad request"

# A tuned MoE profile: `tune --moe` on this layer's shape writes moe entries; one that names ref
# (auto takes cpu) decides `moe --profile` unless FP4GEMM_MOE_BACKEND is set. x is F32, so the
# entries are turned into f32 ones (tune times bf16 hidden states, as bench --moe does).
out=$("$cli" tune --moe --experts 4 --topk 2 --hidden 64 --intermediate 16 --tokens 1,3 --out "$work/moe_profile.json" 2>&1) ||
  fail "tune --moe failed: $out"
grep -q "^T=3 .*<- tuned" <<< "$out" || fail "tune --moe does not say what won at T=3: $out"
grep -q "wrote $work/moe_profile.json: [12] moe entries for E=4 k=2 H=64 I=16" <<< "$out" || fail "tune --moe summary wrong: $out"
python3 - "$work/moe_profile.json" <<'PY' || fail "tune --moe wrote the wrong entries"
import json, sys
profile = json.load(open(sys.argv[1]))
assert profile["metadata"]["gpu"] == "cpu", profile["metadata"]
moe = profile["moe"]
assert moe and moe[-1]["tokens_max"] == 3, moe
assert all((e["experts"], e["top_k"], e["hidden"], e["intermediate"], e["activation"]) == (4, 2, 64, 16, "bf16") for e in moe), moe
assert all(e["backend"] in ("cpu", "ref") for e in moe), moe
PY
sed -e 's/"backend": "cpu"/"backend": "ref"/' -e 's/"activation": "bf16"/"activation": "f32"/' "$work/moe_profile.json" > "$work/moe_ref.json"
out=$(env -u FP4GEMM_MOE_BACKEND "$cli" moe --checkpoint "$work/ckpt" --layer model.layers.1.mlp --input "$work/x.safetensors" \
      --output "$work/y_profile.safetensors" --profile "$work/moe_ref.json" --explain 2>&1) || fail "moe --profile failed: $out"
grep -q "^profile:  hit: tuned profile '$work/moe_ref.json' moe entry tokens_max=3 picks 'ref'" <<< "$out" || fail "moe --profile misses its entry: $out"
grep -q " on ref;" <<< "$out" || fail "moe --profile does not run the profile's ref: $out"
out=$(FP4GEMM_MOE_BACKEND=cpu "$cli" moe --checkpoint "$work/ckpt" --layer model.layers.1.mlp --input "$work/x.safetensors" \
      --output "$work/y_profile.safetensors" --profile "$work/moe_ref.json" --explain 2>&1) || fail "moe --profile with the variable failed: $out"
grep -q "^profile:  not consulted: the backend was chosen explicitly" <<< "$out" || fail "FP4GEMM_MOE_BACKEND should leave the profile unconsulted: $out"
grep -q " on cpu;" <<< "$out" || fail "FP4GEMM_MOE_BACKEND=cpu should win over the profile's ref: $out"
expect_error "--tokens requires --moe" tune --shapes 64x128 --tokens 1 --out "$work/none.json"

[ "$failures" -eq 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "moe CLI: all checks passed"
