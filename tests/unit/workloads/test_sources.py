"""Workload sources: exact lengths with a local tokenizer, determinism, sharing, and every bad input."""

from __future__ import annotations

import json
import pickle
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from raybench.config.workload import (
    LengthSpec,
    SharedPrefixWorkloadSpec,
    ShareGPTWorkloadSpec,
    SyntheticWorkloadSpec,
)
from raybench.errors import ConfigError
from raybench.testing.tiny_model import build_tiny_model_dir
from raybench.workloads import HFTokenCounter, source_for, workload_fingerprint
from raybench.workloads.lengths import sample_length

ROOT = Path(__file__).resolve().parents[3]
SAMPLE = ROOT / "examples" / "data" / "sharegpt_sample.json"


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(build_tiny_model_dir(tmp_path_factory.mktemp("tiny")))


def _synthetic(**kw: Any) -> SyntheticWorkloadSpec:
    base: dict[str, Any] = {"isl": {"distribution": "uniform", "min": 5, "max": 400}, "osl": {"mean": 9}}
    return SyntheticWorkloadSpec.model_validate({**base, **kw})


def test_synthetic_exact_lengths_with_tokenizer(tokenizer: str) -> None:
    source = source_for(_synthetic(), tokenizer)
    counter = source.counter
    assert counter.exact
    for i in range(40):
        p = source.prompt(i)
        assert counter.count(p.text) == p.input_tokens
        assert 5 <= p.input_tokens <= 400 and p.output_tokens == 9


def test_chat_counts_include_the_template(tokenizer: str) -> None:
    plain = source_for(_synthetic(), tokenizer).prompt(3)
    chat = source_for(_synthetic(api="chat"), tokenizer).prompt(3)
    assert chat.text == plain.text
    assert chat.input_tokens > plain.input_tokens  # role markers of the chat template are counted


def test_same_seed_same_prompts_and_fingerprint(tokenizer: str) -> None:
    a, b = source_for(_synthetic(seed=3), tokenizer), source_for(_synthetic(seed=3), tokenizer)
    assert [a.prompt(i) for i in range(20)] == [b.prompt(i) for i in range(20)]
    assert workload_fingerprint(a) == workload_fingerprint(b)
    c = source_for(_synthetic(seed=4), tokenizer)
    assert workload_fingerprint(c) != workload_fingerprint(a)
    assert workload_fingerprint(source_for(_synthetic(seed=3))) != workload_fingerprint(a)  # counter matters


def test_sources_survive_pickling(tokenizer: str) -> None:
    for spec in (_synthetic(), _shared(), ShareGPTWorkloadSpec(kind="sharegpt", path=str(SAMPLE))):
        source = source_for(spec, tokenizer)
        again = pickle.loads(pickle.dumps(source))
        assert again.prompt(5) == source.prompt(5)


def _shared(**kw: Any) -> SharedPrefixWorkloadSpec:
    base: dict[str, Any] = {"kind": "shared_prefix", "groups": 3, "prefix_tokens": 64,
                            "suffix_tokens": {"mean": 16}, "osl": {"mean": 8}}  # fmt: skip
    return SharedPrefixWorkloadSpec.model_validate({**base, **kw})


def test_shared_prefix_really_shares_first_tokens(tokenizer: str) -> None:
    source = source_for(_shared(), tokenizer)
    counter = source.counter
    assert isinstance(counter, HFTokenCounter)
    tok = counter._tok
    ids = [tok.encode(source.prompt(i).text, add_special_tokens=False).ids for i in range(9)]
    for i in range(3, 9):
        assert ids[i][:60] == ids[i % 3][:60], "same group, same prefix tokens"
    assert ids[0][:60] != ids[1][:60], "different groups differ"
    assert source.prompt(0).text != source.prompt(3).text, "suffixes are unique"


def test_sharegpt_sample_loads_filters_and_orders() -> None:
    spec = ShareGPTWorkloadSpec(kind="sharegpt", path=str(SAMPLE), max_isl=200, seed=1)
    source = source_for(spec)
    report = source.report  # type: ignore[attr-defined]
    assert report.entries == 240 and report.malformed == 0
    assert report.kept + report.filtered_out == 240 and report.filtered_out > 0
    lengths = [source.prompt(i).input_tokens for i in range(report.kept)]
    assert max(lengths) <= 200
    other = source_for(ShareGPTWorkloadSpec(kind="sharegpt", path=str(SAMPLE), max_isl=200, seed=2))
    assert [source.prompt(i).text for i in range(5)] != [other.prompt(i).text for i in range(5)]
    assert source.prompt(report.kept).text == source.prompt(0).text  # wraps around


def test_sharegpt_jsonl_with_malformed_lines(tmp_path: Path) -> None:
    good = {"conversations": [{"from": "human", "value": "a b c d e"}, {"from": "gpt", "value": "x y z w v"}]}
    lines = [json.dumps(good), "{not json", json.dumps({"conversations": [{"from": "gpt", "value": "?"}]}),
             json.dumps(good)]  # fmt: skip
    path = tmp_path / "d.jsonl"
    path.write_text("\n".join(lines))
    source = source_for(ShareGPTWorkloadSpec(kind="sharegpt", path=str(path)))
    assert source.report.malformed == 2 and source.report.kept == 2  # type: ignore[attr-defined]
    with pytest.raises(ConfigError, match="2 malformed"):
        source_for(ShareGPTWorkloadSpec(kind="sharegpt", path=str(path), on_malformed="fail"))


def test_sharegpt_missing_file_and_empty_after_filter(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no dataset file"):
        source_for(ShareGPTWorkloadSpec(kind="sharegpt", path=str(tmp_path / "none.json")))
    with pytest.raises(ConfigError, match="passes the filters"):
        source_for(ShareGPTWorkloadSpec(kind="sharegpt", path=str(SAMPLE), min_isl=5000, max_isl=6000))
    bad = tmp_path / "bad.json"
    bad.write_text("[{")
    with pytest.raises(ConfigError, match="not valid JSON"):
        source_for(ShareGPTWorkloadSpec(kind="sharegpt", path=str(bad)))


def test_sharegpt_from_object_storage_uri_is_named_on_failure() -> None:
    with pytest.raises(ConfigError, match=r"cannot read file:///nonexistent/x\.json"):
        source_for(ShareGPTWorkloadSpec(kind="sharegpt", path="file:///nonexistent/x.json"))


@pytest.mark.parametrize(
    ("spec", "mean"),
    [
        ({"distribution": "lognormal", "mean": 200, "std": 80}, 200),
        ({"distribution": "normal", "mean": 100, "std": 10}, 100),
        ({"distribution": "empirical", "values": [10, 30], "weights": [3, 1]}, 15),
        ({"distribution": "uniform", "min": 10, "max": 30}, 20),
    ],
)
def test_length_distributions_have_the_asked_mean(spec: dict[str, Any], mean: float) -> None:
    rng = np.random.default_rng(0)
    values = [sample_length(LengthSpec.model_validate(spec), rng) for _ in range(4000)]
    assert np.mean(values) == pytest.approx(mean, rel=0.05)
