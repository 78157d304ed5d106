"""Writes examples/data/trace_sample.jsonl: a small request trace made here (nothing downloaded).

600 requests over about 60 s of bursty traffic (a gamma arrival process with shape 0.5, mean 10 req/s),
absolute epoch timestamps in milliseconds (`timestamp_ms`), lognormal input and output lengths, and a
`session_id` shared by the requests of one user (a few users come back several times). One line in
twenty gives the prompt as `text` instead of `input_tokens`, to show both forms. Replay it with
`raybench run jobs/trace-replay.yaml`.
Run: python examples/make_trace_sample.py
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

_WORD_TEXT = (
    "the of and to in is you that it was for on are as with they at be this have from or one had by "
    "word but not what all were we when your can said there use an each which she do how"
)
WORDS = _WORD_TEXT.split()
START_MS = 1_735_689_600_000  # 2025-01-01T00:00:00Z: traces usually carry wall-clock instants


def make(count: int = 600, seed: int = 11, rate_per_s: float = 10.0, shape: float = 0.5) -> list[dict[str, object]]:
    rng = np.random.default_rng(seed)
    gaps_s = rng.gamma(shape, 1.0 / (rate_per_s * shape), size=count)
    instants_ms = START_MS + np.rint(np.cumsum(gaps_s) * 1000).astype(np.int64)
    isl = np.clip(rng.lognormal(np.log(180), 0.8, size=count), 8, 2000).astype(int)
    osl = np.clip(rng.lognormal(np.log(120), 0.6, size=count), 4, 800).astype(int)
    users = rng.integers(0, count // 3, size=count)
    lines: list[dict[str, object]] = []
    for i in range(count):
        line: dict[str, object] = {"timestamp_ms": int(instants_ms[i])}
        if i % 20 == 7:
            line["text"] = " ".join(rng.choice(WORDS, size=int(isl[i])).tolist())
        else:
            line["input_tokens"] = int(isl[i])
        line["output_tokens"] = int(osl[i])
        line["session_id"] = f"user-{int(users[i])}"
        lines.append(line)
    return lines


def main() -> None:
    out = Path(__file__).resolve().parent / "data" / "trace_sample.jsonl"
    out.write_text("".join(json.dumps(line) + "\n" for line in make()))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
