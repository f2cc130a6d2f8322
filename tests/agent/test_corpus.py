"""Every recorded provider stream in the shared corpus assembles to what expected.json says."""

from __future__ import annotations

import json

import pytest

from bot.agent.sse import SSEParser, parse_bytes, repair_ids
from tests.support.sse_corpus import CORPUS

EXPECTED = json.loads((CORPUS / "expected.json").read_text())


def _check(name: str, body: bytes) -> None:
    want = EXPECTED[name]
    got = parse_bytes(body)
    assert got.content == want["content"]
    assert [(c.id, c.name, c.arguments) for c in got.tool_calls] == [
        (c["id"], c["name"], c["arguments"]) for c in want["tool_calls"]
    ]
    assert got.finish_reasons == want["finish_reasons_seen"]
    assert got.errors == want["errors"]
    assert got.done_seen == want["done_seen"]
    assert got.comment_lines == want["comment_lines"]
    assert len(got.reasoning) == want["reasoning_chars"]


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_corpus_transcript(name: str) -> None:
    _check(name, (CORPUS / name).read_bytes())


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_corpus_transcript_byte_by_byte_and_crlf(name: str) -> None:
    """The same streams cut at every byte (multi-byte characters split) and with CRLF framing."""
    body = (CORPUS / name).read_bytes()
    parser_input = [body[i : i + 1] for i in range(len(body))]
    want = EXPECTED[name]
    got = parse_bytes(parser_input)
    assert [(c.id, c.name, c.arguments) for c in got.tool_calls] == [
        (c["id"], c["name"], c["arguments"]) for c in want["tool_calls"]
    ]
    assert got.content == want["content"]
    _check(name, body.replace(b"\n", b"\r\n"))


def test_corpus_is_complete() -> None:
    files = {p.name for p in CORPUS.glob("*.sse")}
    assert files == set(EXPECTED)


def test_multiline_data_is_one_event() -> None:
    parser = SSEParser()
    events = parser.feed(b'data: {"a":\ndata: 1}\n\n: keep-alive\r\n')
    assert [(e.event, e.data) for e in events] == [("message", '{"a":\n1}')]
    assert parser.comment_lines == 1


def test_event_error_without_json_is_kept() -> None:
    got = parse_bytes(b"event: error\ndata: upstream exploded\n\n")
    assert got.errors == [{"message": "upstream exploded"}]


def test_missing_index_two_calls_and_same_index_new_id() -> None:
    chunk = lambda tc: b"data: " + json.dumps({"choices": [{"delta": {"tool_calls": tc}}]}).encode() + b"\n\n"  # noqa: E731
    body = b"".join(
        [
            chunk([{"id": "a", "function": {"name": "f", "arguments": '{"x":'}}]),
            chunk([{"function": {"name": "", "arguments": "1}"}}]),
            chunk([{"id": "b", "function": {"name": "g", "arguments": "{}"}}]),
        ]
    )
    got = parse_bytes(body)
    assert [(c.id, c.name, c.arguments) for c in got.tool_calls] == [("a", "f", '{"x":1}'), ("b", "g", "{}")]
    # Ollama >= 0.20: different calls all at index 0, each complete.
    body = b"".join(
        [
            chunk([{"index": 0, "id": "c1", "function": {"name": "f", "arguments": "{}"}}]),
            chunk([{"index": 0, "id": "c2", "function": {"name": "g", "arguments": '{"y":2}'}}]),
        ]
    )
    got = parse_bytes(body)
    assert [(c.id, c.name) for c in got.tool_calls] == [("c1", "f"), ("c2", "g")]


def test_repair_ids_creates_missing_and_rewrites_duplicates() -> None:
    body = b"".join(
        b"data: "
        + json.dumps(
            {
                "choices": [
                    {
                        "delta": {
                            "tool_calls": [
                                {"index": i, "id": cid, "function": {"name": "f", "arguments": "{}"}}
                            ]
                        }
                    }
                ]
            }
        ).encode()
        + b"\n\n"
        for i, cid in enumerate(["dup", "dup", "", "old"])
    )
    calls = parse_bytes(body).tool_calls
    assert [c.id for c in calls] == ["dup", "dup", "", "old"]
    taken = {"old"}
    fixed = repair_ids(calls, taken)
    ids = [c.id for c in fixed]
    assert ids[0] == "dup" and len(set(ids)) == 4 and all(ids) and "old" not in ids[1:]
    assert set(ids) <= taken
