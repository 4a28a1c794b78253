"""A tiny tokenizer-only model directory, for the Dynamo mocker engine and frontend (no weights).

The mocker simulates an LLM engine and needs only what the frontend needs to pre- and post-process
requests: `config.json`, `tokenizer.json`, `tokenizer_config.json` (with a chat template) and
`generation_config.json`. Built with `tokenizers` (the runtime virtualenv has it), deterministic:
the same directory every time, so nothing is ever downloaded from a hub.

    <runtime python> tools/tinymodel.py DIR
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

# Words of the vocabulary: every token id decodes to one of them (or a special token).
WORDS = [
    "the",
    "a",
    "an",
    "and",
    "or",
    "but",
    "of",
    "to",
    "in",
    "on",
    "at",
    "by",
    "for",
    "with",
    "from",
    "as",
    "is",
    "are",
    "was",
    "were",
    "be",
    "been",
    "it",
    "this",
    "that",
    "these",
    "those",
    "model",
    "graph",
    "worker",
    "frontend",
    "router",
    "prefill",
    "decode",
    "token",
    "tokens",
    "request",
    "requests",
    "reply",
    "serve",
    "serves",
    "served",
    "cluster",
    "pod",
    "pods",
    "node",
    "nodes",
    "kubernetes",
    "dynamo",
    "pulumi",
    "stack",
    "deploy",
    "deployed",
    "scale",
    "scaled",
    "ready",
    "live",
    "health",
    "cache",
    "block",
    "blocks",
    "quick",
    "brown",
    "fox",
    "jumps",
    "over",
    "lazy",
    "dog",
    "hello",
    "world",
    "answer",
    "question",
    "small",
    "tiny",
    "fast",
    "slow",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
]
UNKNOWN = "<unk>"
BOS = "<|begin_of_text|>"
EOS = "<|end_of_text|>"
# A ChatML-style template: role headers, then the assistant's turn.
CHAT_TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
SPECIAL = (UNKNOWN, BOS, EOS, "<|im_start|>", "<|im_end|>")
# Vocabulary size: the mocker emits random token ids in [1000, 2000), so every one must decode.
VOCAB_SIZE = 2048
# Context length the model card reports.
MAX_POSITIONS = 4096


def vocabulary() -> list[str]:
    """Special tokens, then the words, then the words again with a round number, up to VOCAB_SIZE."""
    words = list(dict.fromkeys(WORDS))
    fill = VOCAB_SIZE - len(SPECIAL)
    return [
        *SPECIAL,
        *(
            w if i < len(words) else f"{w}{i // len(words)}"
            for i, w in ((i, words[i % len(words)]) for i in range(fill))
        ),
    ]


def write(out: Path) -> Path:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    out.mkdir(parents=True, exist_ok=True)
    vocab = {token: i for i, token in enumerate(vocabulary())}
    tokenizer = Tokenizer(models.WordLevel(vocab=vocab, unk_token=UNKNOWN))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.decoder = decoders.WordPiece(prefix="##")
    tokenizer.add_special_tokens(list(SPECIAL))
    tokenizer.save(str(out / "tokenizer.json"))
    bos, eos = vocab[BOS], vocab[EOS]
    files = {
        "config.json": {
            "architectures": ["LlamaForCausalLM"],
            "model_type": "llama",
            "vocab_size": len(vocab),
            "hidden_size": 64,
            "intermediate_size": 128,
            "num_hidden_layers": 2,
            "num_attention_heads": 2,
            "num_key_value_heads": 2,
            "max_position_embeddings": MAX_POSITIONS,
            "bos_token_id": bos,
            "eos_token_id": eos,
            "torch_dtype": "bfloat16",
        },
        "tokenizer_config.json": {
            "tokenizer_class": "PreTrainedTokenizerFast",
            "bos_token": BOS,
            "eos_token": EOS,
            "unk_token": UNKNOWN,
            "chat_template": CHAT_TEMPLATE,
            "model_max_length": MAX_POSITIONS,
        },
        "generation_config.json": {"bos_token_id": bos, "eos_token_id": eos},
    }
    for name, content in files.items():
        (out / name).write_text(json.dumps(content, indent=2, sort_keys=True) + "\n")
    return out


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: tinymodel.py DIR")
    print(write(Path(sys.argv[1])))
