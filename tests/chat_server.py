"""A minimal OpenAI-compatible chat server, run as its own process by the tests of the ``llm`` victim.

It answers the Appendix B prompt deterministically from the post it carries: ``仇恨言论`` when the post
holds 垃圾, ``我不确定`` (no label) when it holds ？？？, ``非仇恨言论`` otherwise. Asked for ``logprobs``, it
gives the hateful label's first token the probability ``hateful(post, pinyin)`` (0.9 for 垃圾, or its pinyin
lā jī where the prompt gives the pinyin; 0.4 for 黑人; 0.1 otherwise), the benign one's the rest, after a
leading backtick token; for ？？？ neither. ``GET /v1/models`` lists its one model; a request that is not a
chat completion gets 400. Each post asked is appended to ``--log``. Once listening it prints its port on
stdout (``--port 0``: any free port).

    python tests/chat_server.py --port 0 --log asked.txt
"""
from __future__ import annotations

import argparse
import http.server
import json
import math
import sys

MODEL = "tiny-chat"


def hateful(post: str, pinyin: str | None) -> float | None:
    """The probability the server gives the hateful label (None: no label at all)."""
    if "？？？" in post:
        return None
    if "垃圾" in post or (pinyin is not None and "lā jī" in pinyin):
        return 0.9
    return 0.4 if "黑人" in post else 0.1


def token(text: str, probability: float) -> dict:
    return {"token": text, "logprob": math.log(probability), "bytes": list(text.encode())}


def logprobs(p: float | None) -> dict:
    """The ``logprobs`` of an answer: a backtick, then the label's first token and its alternatives."""
    if p is None:
        return {"content": [{**token("我", 0.6), "top_logprobs": [token("我", 0.6), token("不", 0.4)]}]}
    first = token("仇", p) if p >= 0.5 else token("非", 1 - p)
    return {"content": [{**token("`", 0.99), "top_logprobs": [token("`", 0.99)]},
                        {**first, "top_logprobs": [token("仇", p), token("非", 1 - p)]}]}


class Chat(http.server.BaseHTTPRequestHandler):
    log_path: str | None = None

    def _reply(self, status: int, body: dict) -> None:
        data = json.dumps(body, ensure_ascii=False).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):  # noqa: N802
        if self.path.rstrip("/") == "/v1/models":
            self._reply(200, {"object": "list", "data": [{"id": MODEL, "object": "model"}]})
        else:
            self._reply(404, {"error": {"message": f"no route {self.path}"}})

    def do_POST(self):  # noqa: N802
        try:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            prompt = body["messages"][-1]["content"]
            assert body["model"] == MODEL and isinstance(prompt, str)
        except (ValueError, KeyError, IndexError, TypeError, AssertionError):
            self._reply(400, {"error": {"message": "not a chat completion request"}})
            return
        if self.path.rstrip("/") != "/v1/chat/completions":
            self._reply(404, {"error": {"message": f"no route {self.path}"}})
            return
        post, _, pinyin = prompt.rsplit("输入: ", 1)[-1].removesuffix("\n输出:").partition("\n拼音: ")
        if self.log_path:
            with open(self.log_path, "a", encoding="utf-8") as f:
                f.write(json.dumps(post, ensure_ascii=False) + "\n")
        choice = {"index": 0, "finish_reason": "stop"}
        if body.get("logprobs"):
            p = hateful(post, pinyin or None)
            answer = "我不确定" if p is None else "`仇恨言论`" if p >= 0.5 else "`非仇恨言论`"
            choice["logprobs"] = logprobs(p)
        else:
            answer = "我不确定" if "？？？" in post else "仇恨言论" if "垃圾" in post else "非仇恨言论"
        self._reply(200, {"id": "chatcmpl-0", "object": "chat.completion", "model": MODEL,
                          "choices": [{**choice, "message": {"role": "assistant", "content": answer}}]})

    def log_message(self, *args):
        pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--log", default=None)
    args = parser.parse_args()
    Chat.log_path = args.log
    server = http.server.ThreadingHTTPServer(("127.0.0.1", args.port), Chat)
    print(server.server_address[1], flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    sys.exit(0)


if __name__ == "__main__":
    main()
