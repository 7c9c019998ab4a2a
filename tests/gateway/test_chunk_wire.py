"""``ChunkWire``: a streamed text delta encoded once around a constant envelope is exactly the
record the chunk dict would have made (pure)."""
from __future__ import annotations

import json

from gateway.platforms.api_server.chat import ChunkWire
from gateway.platforms.api_server.sse import sse_bytes


def test_a_content_record_is_the_chunk_dict_encoded():
    wire = ChunkWire("chatcmpl-1", 1700000000, 'm "content": "" ü')
    for text in ["hi", "", 'quote " and \\ backslash', "ünïcode ✓ \n new line", "\u2028"]:
        record = wire.content(text)
        assert record == sse_bytes(wire.chunk({"content": text}))
        body = json.loads(record[len(b"data: "):])
        assert body["choices"][0]["delta"] == {"content": text}
        assert body["model"] == 'm "content": "" ü' and body["choices"][0]["finish_reason"] is None
