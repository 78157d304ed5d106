"""Writes examples/data/sharegpt_sample.json: a small ShareGPT-format file made here (nothing downloaded).

Conversations are generated from a seed with a realistic spread of prompt and reply lengths (lognormal,
like real chat logs: many short prompts, a long tail), so the `sharegpt` workload can be tried offline.
Run: python examples/make_sharegpt_sample.py
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

TOPICS = ["benchmarks", "latency", "gardening", "databases", "travel", "music", "compilers", "cooking"]
_WORD_TEXT = (
    "the of and to in is you that it was for on are as with they at be this have from or one had by word "
    "but not what all were we when your can said there use an each which she do how their if will up "
    "other about out many then them these so some her would make like him into time has look two more "
    "write go see number no way could people my than first water been call who oil its now find long "
    "down day did get come made"
)
WORDS = _WORD_TEXT.split()


def _text(rng: np.random.Generator, words: int) -> str:
    return " ".join(rng.choice(WORDS, size=max(words, 1)).tolist())


def make(count: int = 240, seed: int = 7) -> list[dict[str, object]]:
    rng = np.random.default_rng(seed)
    out: list[dict[str, object]] = []
    for i in range(count):
        topic = TOPICS[i % len(TOPICS)]
        prompt_words = int(np.clip(rng.lognormal(np.log(90), 0.8), 3, 900))
        reply_words = int(np.clip(rng.lognormal(np.log(160), 0.7), 3, 900))
        turns = [
            {"from": "human", "value": f"Question about {topic}: {_text(rng, prompt_words)}?"},
            {"from": "gpt", "value": _text(rng, reply_words) + "."},
        ]
        out.append({"id": f"sample-{i:04d}", "conversations": turns})
    return out


if __name__ == "__main__":
    target = Path(__file__).resolve().parent / "data" / "sharegpt_sample.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(make(), indent=0))
    print(f"wrote {target}")
