#!/usr/bin/env bash
# Records bench.json and bench.txt: one run of the real `vllm bench serve`
# (vLLM 0.33.0) against the stand-in server on loopback, with the argv of
# argv.txt. Not run by the tests (the real client needs torch and its CUDA
# libraries, about 3 GB); they compare the stand-in against its output.
#
# Usage: record.sh VENV STANDIN
#   VENV     a venv where `vllm bench serve --help` works:
#            python3 -m venv VENV && VENV/bin/pip install --no-deps -r client-requirements.txt
#   STANDIN  the stand-in vllm binary (cd runner/standins && go build ./cmd/vllm)
set -euo pipefail
venv=$1 standin=$2
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'kill "$server" 2>/dev/null || true; rm -rf "$work"' EXIT
cd "$work"

# A byte-level BPE tokenizer trained here, so nothing comes from the Hub.
"$venv/bin/python" - <<'PY'
import glob, os
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast

files = sorted(glob.glob(os.path.join(os.path.dirname(os.__file__), "*.py")))[:40]
text = [open(f, encoding="utf-8", errors="replace").read() for f in files]
tok = Tokenizer(models.BPE())
tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
tok.decoder = decoders.ByteLevel()
trainer = trainers.BpeTrainer(vocab_size=4000, special_tokens=["<|endoftext|>"],
                              initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
tok.train_from_iterator(text, trainer)
PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|endoftext|>").save_pretrained("tiny-tokenizer")
PY

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$standin" serve benchkite/tiny-model --port "$port" --host 127.0.0.1 &
server=$!
for _ in $(seq 100); do curl -fsS "http://127.0.0.1:$port/health" >/dev/null 2>&1 && break; sleep 0.1; done

# argv.txt holds the runner's bench argv (job/bench.go), one word a line,
# with {BASE_URL} for the server.
mapfile -t argv < <(sed "s#{BASE_URL}#http://127.0.0.1:$port#" "$here/argv.txt")
HF_HUB_OFFLINE=1 "$venv/bin/vllm" bench serve "${argv[@]}" --tokenizer tiny-tokenizer \
  --save-result --result-filename bench.json | tee bench.txt
cp bench.json bench.txt "$here/"
