"""``encoding.json``: written by training (`policy_encoding`, `write_encoding`), read back by the
agent (`read_encoding`) unchanged; one module owns the format."""

from __future__ import annotations

import json

import pytest

from turnbudget.agents.policy import (
    ENCODING_FILE,
    ENCODING_FORMAT,
    _feature_size,
    policy_encoding,
    read_encoding,
    write_encoding,
)
from turnbudget.train import TrainConfig, make_env, training_encoding


@pytest.mark.parametrize("reveal", ["always", "final=3", "never"])
def test_round_trip_through_the_file(tmp_path, reveal):
    config = TrainConfig(
        env_id="turnbudget/KeyQuest-Easy-v0",
        reveal=reveal,
        text_dim=16,
        command_dim=4,
        history=3,
        max_actions=7,
    )
    encoding = training_encoding(config, "ReLU")
    path = write_encoding(tmp_path, encoding)
    assert path == tmp_path / ENCODING_FILE
    assert read_encoding(tmp_path) == encoding
    assert list(json.loads(path.read_text())) == [
        "format",
        "env_id",
        "text_features",
        "max_actions",
        "history",
        "command_dim",
        "budget",
        "reveal",
        "activation",
    ]
    assert encoding["format"] == ENCODING_FORMAT
    assert (encoding["env_id"], encoding["activation"]) == (config.env_id, "ReLU")
    assert (encoding["max_actions"], encoding["history"], encoding["command_dim"]) == (7, 3, 4)
    assert encoding["budget"] is (reveal != "never")
    assert (encoding["reveal"] is None) is (reveal == "never")
    obs, _ = make_env(config).reset(seed=0)
    assert obs.shape == (_feature_size(read_encoding(tmp_path)),)


def test_the_writer_refuses_what_the_reader_would(tmp_path):
    features = make_env(TrainConfig(text_dim=8)).env
    with pytest.raises(ValueError, match="Expect `activation` to be one of"):
        policy_encoding(features, "turnbudget/Maze-Easy-v0", "GELU")
    with pytest.raises(ValueError, match="Expect an encoding of format 1, got 2"):
        write_encoding(tmp_path, {"format": 2})
    assert not (tmp_path / ENCODING_FILE).exists()


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ('{"format": 2}', "Unknown encoding format 2"),
        ("[1]", "Unknown encoding format None"),
        ("{not json", "is not JSON"),
    ],
)
def test_the_reader_says_what_is_wrong(tmp_path, text, match):
    (tmp_path / ENCODING_FILE).write_text(text)
    with pytest.raises(ValueError, match=match):
        read_encoding(tmp_path)
