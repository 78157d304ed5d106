"""Dynamo readiness from recorded frontend /health bodies (ai-dynamo 1.6.1), and the tiny mocker model."""

from __future__ import annotations

import json
from pathlib import Path

from raybench.engines.dynamo_health import describe_rule, missing_instances, registered_instances
from raybench.testing.dynamo_env import tagged_processes
from raybench.testing.dynamo_model import MOCKER_TOKEN_IDS, build_dynamo_model_dir, model_files

# Recorded from `python -m dynamo.frontend` with no worker yet, one aggregated mocker, and 1 prefill + 1 decode.
EMPTY = {"status": "healthy", "endpoints": [], "instances": []}
AGGREGATED = json.loads("""{"status":"healthy","endpoints":["dyn://dynamo.backend.generate",
 "dyn://dynamo.backend.worker_kv_query_source_6c06771d2fd0f"],"instances":[{"component":"backend",
 "endpoint":"generate","namespace":"dynamo","instance_id":11169654497725304028,"transport":{"tcp":
 "127.0.0.1:37071/9b02959618c2ccdc/dynamo/backend/generate"},"device_type":"cuda","request_plane_codec":"msgpack"},
 {"component":"backend","endpoint":"worker_kv_query_source_6c06771d2fd0f","namespace":"dynamo",
 "instance_id":11169654497725304028,"transport":{"tcp":
 "127.0.0.1:37071/9b02959618c2ccdc/dynamo/backend/worker_kv_query_source_6c06771d2fd0f"},"device_type":"cuda",
 "request_plane_codec":"msgpack"}]}""")
DISAGGREGATED = json.loads("""{"status":"healthy","endpoints":["dyn://dynamo.backend.generate",
 "dyn://dynamo.prefill.generate","dyn://dynamo.prefill.worker_kv_query_source_c5cc9e6de3054"],"instances":[
 {"component":"backend","endpoint":"generate","namespace":"dynamo","instance_id":14352119114237053078,"transport":
 {"tcp":"127.0.0.1:45095/c72cf84b2a318896/dynamo/backend/generate"},"device_type":"cuda",
 "request_plane_codec":"msgpack"},{"component":"prefill","endpoint":"generate","namespace":"dynamo",
 "instance_id":11693127934964958798,"transport":{"tcp":"127.0.0.1:37485/a24655e76cc8864e/dynamo/prefill/generate"},
 "device_type":"cuda","request_plane_codec":"msgpack"},{"component":"prefill",
 "endpoint":"worker_kv_query_source_c5cc9e6de3054","namespace":"dynamo","instance_id":11693127934964958798,
 "transport":{"tcp":"127.0.0.1:37485/a24655e76cc8864e/dynamo/prefill/worker_kv_query_source_c5cc9e6de3054"},
 "device_type":"cuda","request_plane_codec":"msgpack"}]}""")


def test_counts_distinct_generate_instances_per_component() -> None:
    assert registered_instances(EMPTY, "dynamo") == {}
    assert registered_instances(AGGREGATED, "dynamo") == {"backend": 1}  # the kv-query endpoint is not a worker
    assert registered_instances(DISAGGREGATED, "dynamo") == {"backend": 1, "prefill": 1}
    assert registered_instances(DISAGGREGATED, "other") == {}


def test_health_200_with_no_workers_is_not_ready() -> None:
    assert missing_instances(EMPTY, "dynamo", {"backend": 1}) == (
        "workers registered so far in namespace 'dynamo': backend: 0 of 1"
    )
    assert missing_instances(AGGREGATED, "dynamo", {"backend": 1}) is None
    assert missing_instances(AGGREGATED, "dynamo", {"backend": 2}) is not None
    assert missing_instances("not json", "dynamo", {"backend": 1}) == "/health answered no JSON object"


def test_disaggregated_needs_both_roles() -> None:
    assert missing_instances(AGGREGATED, "dynamo", {"backend": 1, "prefill": 1}) == (
        "workers registered so far in namespace 'dynamo': prefill: 0 of 1"
    )
    assert missing_instances(DISAGGREGATED, "dynamo", {"backend": 1, "prefill": 1}) is None
    assert "1 x backend, 1 x prefill" in describe_rule("dynamo", {"backend": 1, "prefill": 1})


def test_every_mocker_output_id_decodes_to_text(tmp_path: Path) -> None:
    from tokenizers import Tokenizer

    folder = build_dynamo_model_dir(tmp_path / "m")
    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    assert all(tokenizer.decode([i]).strip() for i in MOCKER_TOKEN_IDS)
    config = json.loads((folder / "config.json").read_text())
    assert config["architectures"] and config["vocab_size"] == tokenizer.get_vocab_size() == 2048
    assert "chat_template" in json.loads((folder / "tokenizer_config.json").read_text())
    assert set(model_files()) == {"config.json", "tokenizer.json", "tokenizer_config.json"}


def test_tagged_processes_reads_environ(tmp_path: Path) -> None:
    for pid, env, state in ((11, b"A=1\0RAYBENCH_DYNAMO_TAG=t1\0", "S"), (12, b"RAYBENCH_DYNAMO_TAG=t2\0", "R"),
                            (13, b"RAYBENCH_DYNAMO_TAG=t1\0", "Z")):  # fmt: skip
        (tmp_path / str(pid)).mkdir()
        (tmp_path / str(pid) / "environ").write_bytes(env)
        (tmp_path / str(pid) / "stat").write_text(f"{pid} (python) {state} 1 2 3")
    (tmp_path / "self").mkdir()
    assert tagged_processes("t1", tmp_path) == [11]  # the zombie is gone already
    assert tagged_processes("t3", tmp_path) == []
