"""Write a tiny random-weight Llama and its tokenizer into a Hugging Face
cache, laid out as a download of the repository would leave it
(HF_HOME/hub/models--ORG--NAME/{refs/main,snapshots/SHA}), so that vLLM,
its bench client and lm_eval load it by name with HF_HUB_OFFLINE=1.

    python3 tinymodel.py HF_HOME ORG/NAME

Only the installed transformers, tokenizers and torch are used; nothing
is downloaded. The weights are random: the harness, not the model, is
what a run of it tests.
"""

import os
import random
import sys
from typing import List

REVISION = "5e1f7e57000000000000000000000000000000aa"
WORDS = ("how many apples does she have left if he buys gives sells each box holds "
         "the a of and to in is total more less than twice half per day week answer").split()


def corpus(n: int, seed: int = 7) -> List[str]:
    """Sentences shaped like arithmetic word problems, numbers included,
    so the tokenizer has merges for both."""
    rng = random.Random(seed)
    lines = []
    for _ in range(n):
        words = [rng.choice(WORDS) if rng.random() < 0.75 else str(rng.randint(0, 2000))
                 for _ in range(rng.randint(6, 28))]
        lines.append(" ".join(words) + rng.choice([".", "?", "!"]))
    return lines


def write(hf_home: str, repo: str) -> str:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast
    import torch

    root = os.path.join(hf_home, "hub", "models--" + repo.replace("/", "--"))
    snapshot = os.path.join(root, "snapshots", REVISION)
    os.makedirs(snapshot, exist_ok=True)
    os.makedirs(os.path.join(root, "refs"), exist_ok=True)
    with open(os.path.join(root, "refs", "main"), "w") as f:
        f.write(REVISION)

    specials = ["<|bos|>", "<|pad|>", "<|header|>", "<|endheader|>", "<|eot|>"]
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    bpe.train_from_iterator(corpus(15000), trainers.BpeTrainer(
        vocab_size=3000, special_tokens=specials, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tok = PreTrainedTokenizerFast(tokenizer_object=bpe, bos_token="<|bos|>", eos_token="<|eot|>",
                                  pad_token="<|pad|>")
    # A chat template, for the openai-chat backend.
    tok.chat_template = (
        "{{ bos_token }}{% for m in messages %}<|header|>{{ m['role'] }}<|endheader|>"
        "{{ m['content'] }}<|eot|>{% endfor %}"
        "{% if add_generation_prompt %}<|header|>assistant<|endheader|>{% endif %}")
    tok.save_pretrained(snapshot)

    config = LlamaConfig(vocab_size=len(tok), hidden_size=256, intermediate_size=704,
                         num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2,
                         max_position_embeddings=8192, bos_token_id=tok.bos_token_id,
                         eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id,
                         tie_word_embeddings=True)
    torch.manual_seed(7)
    model = LlamaForCausalLM(config).to(torch.bfloat16)
    model.save_pretrained(snapshot, safe_serialization=True)
    params = sum(p.numel() for p in model.parameters())
    print(f"tinymodel: {repo} at {snapshot}: {params} parameters, {len(tok)} tokens")
    return snapshot


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: tinymodel.py HF_HOME ORG/NAME")
    write(sys.argv[1], sys.argv[2])
