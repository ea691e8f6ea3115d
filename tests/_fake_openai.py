"""A fake OpenAI-compatible server for tests: a real ``http.server`` on loopback whose answers
a test writes (what a hostile or broken server would say, or a scripted player's commands)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# (status, content type, body), or with a dict of more headers: (..., body, headers)
Answer = Callable[[BaseHTTPRequestHandler, dict[str, Any]], "tuple[Any, ...]"]


def reply_body(content: str = "look") -> dict[str, Any]:
    return {
        "id": "fake", "object": "chat.completion", "created": 0, "model": "fake",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                     "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 7, "completion_tokens": 1, "total_tokens": 8},
    }  # fmt: skip


def as_json(body: Any, status: int = 200) -> tuple[int, str, bytes]:
    return status, "application/json", json.dumps(body).encode()


class FakeServer:
    """A threaded HTTP server on 127.0.0.1: ``answer(handler, request)`` answers each POST
    to ``.../chat/completions``; ``chat_requests`` counts them."""

    def __init__(self, answer: Answer):
        self.answer = answer
        self.chat_requests = 0
        self.paths: list[str] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                request = json.loads(self.rfile.read(length) or b"{}")
                server.paths.append(self.path)
                if "/chat/completions" not in self.path:
                    return self._send(404, "application/json", b'{"error": "not found"}')
                server.chat_requests += 1
                self._send(*server.answer(self, request))

            def _send(
                self, status: int, content_type: str, body: bytes, headers: dict | None = None
            ) -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:  # quiet
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def url(self, credentials: str = "", query: str = "") -> str:
        return f"http://{credentials}127.0.0.1:{self.port}/v1{query}"

    def __enter__(self) -> FakeServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join()
