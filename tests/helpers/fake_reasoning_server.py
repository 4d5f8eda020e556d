"""An OpenAI-compatible server on 127.0.0.1 answering in the shapes real reasoning servers return
(docs/reasoning.md §4), one shape per served model name, for the ``openai`` backend's tests.

Each prompt's answer is ``answers[instruction]`` (found in the chat's last message, or inside a rendered
completions prompt), after a thought of :data:`THOUGHT`, cut at the request's ``max_tokens``. Shapes
(:data:`SHAPES`, the request's ``model``; :data:`ANSWERING` answer every prompt):

* ``think-content`` — chat, no reasoning parser: ``<think>…</think>`` then the answer, all in ``content``;
* ``think-apart`` — chat, vLLM's reasoning parser: ``message.reasoning`` and ``content`` apart, the
  log-probabilities covering every generated token (the ``<think>`` tags included); ``r1-apart`` the same
  for a template that opened ``<think>`` itself (the output starts inside the thinking: R1 distills);
* ``think-apart-hosted`` — chat, a hosted API: ``message.reasoning_content`` apart, log-probabilities for the
  answer only, ``usage.completion_tokens`` counting the reasoning (``completion_tokens_details``);
* ``harmony-ids`` / ``harmony-ids-special`` — completions with token ids (vLLM's
  ``return_tokens_as_token_ids``) of gpt-oss's harmony text, tokenized with ``tokenizer``; the text without
  the special tokens (vLLM's default) or with them, the stop token left out;
* ``harmony-stripped`` — chat, the harmony text with its special tokens decoded to nothing;
* ``too-long`` — the answer alone, but a 400 with vLLM's context-length message for ``too_long`` prompts;
* ``refused`` — every request a 400 (log-probabilities not supported); ``no-logprobs`` — a 200 without them.

A model name ``SHAPE/ANYTHING`` answers in ``SHAPE``. Chat tokens are one per character, with their bytes.
``requests[(model, instruction)]`` counts the requests.
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler
from typing import Any

from helpers.local_http import LocalHTTPServer

THOUGHT = "The complement pairs A with T and G with C; the fences go on lines of their own."
HARMONY_SPECIAL = ["<|start|>", "<|channel|>", "<|message|>", "<|end|>", "<|return|>"]
ANSWERING = (
    "think-content",
    "think-apart",
    "r1-apart",
    "think-apart-hosted",
    "harmony-ids",
    "harmony-ids-special",
    "harmony-stripped",
)
"""The shapes of a reasoning model that answers every prompt."""
SHAPES = (*ANSWERING, "too-long", "refused", "no-logprobs")
TOO_LONG = (
    "This model's maximum context length is 512 tokens. However, your prompt contains 900 input tokens, "
    "which exceeds this limit even without any output tokens. Please reduce the length of the input prompt."
)


def registry_entry(
    shape: str, base_url: str, tokenizer: str | None = None, served: str | None = None, **keys: Any
) -> dict[str, Any]:
    """The registry entry of a model served in ``shape`` (its name ``served``, default the shape): the
    reasoning format the shape needs, the completions route with token ids for ``harmony-ids*`` (decoded
    with ``tokenizer``), one request in flight for the refused shapes; ``keys`` added."""
    entry: dict[str, Any] = {
        "source": {"kind": "api", "base_url": base_url, "model": served or shape},
        "backend": "openai",
        "max_new_tokens": 4096,
        "backend_options": {"concurrency": 1 if shape in ("refused", "no-logprobs") else 2, "max_retries": 3},
        **keys,
    }
    if shape.startswith(("think", "r1", "harmony")):
        entry["reasoning_format"] = "harmony" if shape.startswith("harmony") else "think"
    if shape.startswith("harmony-ids"):
        entry["backend_options"] |= {"endpoint": "completions", "token_ids": True, "tokenizer": tokenizer}
    return entry


def harmony(thought: str, answer: str) -> str:
    """gpt-oss's output in its harmony format: the analysis channel, then the final one, then the stop."""
    return (
        f"<|channel|>analysis<|message|>{thought}<|end|><|start|>assistant<|channel|>final<|message|>{answer}"
        "<|return|>"
    )


def harmony_tokenizer(path: str) -> Any:
    """A small byte-level BPE tokenizer with harmony's special tokens and a harmony-like chat template,
    saved at ``path`` (what ``backend_options.tokenizer`` names)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    backend = Tokenizer(models.BPE())
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400,
        special_tokens=["<|endoftext|>", *HARMONY_SPECIAL],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    backend.train_from_iterator([THOUGHT, "AGA TCT 12 34\n********"] * 20, trainer)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend, eos_token="<|return|>", pad_token="<|endoftext|>"
    )
    tokenizer.chat_template = (
        "{% for m in messages %}<|start|>{{ m['role'] }}<|message|>{{ m['content'] }}<|end|>{% endfor %}"
        "{% if add_generation_prompt %}<|start|>assistant{% endif %}"
    )
    tokenizer.save_pretrained(path)
    return tokenizer


def _char_entries(text: str, first: float = -0.01) -> list[dict[str, Any]]:
    """Chat log-probability entries, one per character (with its bytes) and two alternatives."""
    return [
        {
            "token": ch,
            "logprob": first,
            "bytes": list(ch.encode()),
            "top_logprobs": [
                {"token": ch, "logprob": first, "bytes": list(ch.encode())},
                {"token": "#", "logprob": -6.0, "bytes": [35]},
            ],
        }
        for ch in text
    ]


class ReasoningServer(LocalHTTPServer):
    """The server, in a thread (module docstring)."""

    def __init__(
        self, answers: Mapping[str, str], tokenizer: Any = None, too_long: frozenset[str] = frozenset()
    ) -> None:
        self.answers, self.tokenizer, self.too_long = dict(answers), tokenizer, too_long
        self.requests: Counter[tuple[str, str]] = Counter()
        self.bodies: dict[str, Mapping[str, Any]] = {}
        """The last request body per model name."""
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def do_POST(self) -> None:  # noqa: N802 - the http.server hook
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                status, answer = server.respond(body)
                payload = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self._serve(Handler)

    def instruction(self, body: Mapping[str, Any]) -> str:
        prompt = body["messages"][-1]["content"] if "messages" in body else body["prompt"]
        found = [i for i in self.answers if i == prompt or i in prompt]
        assert len(found) == 1, f"no single instruction in {prompt[:80]!r}"
        return found[0]

    def respond(self, body: Mapping[str, Any]) -> tuple[int, dict[str, Any]]:
        shape, instruction = body["model"].split("/")[0], self.instruction(body)
        with self._lock:
            self.requests[(body["model"], instruction)] += 1
            self.bodies[body["model"]] = body
        answer, budget = self.answers[instruction], int(body["max_tokens"])
        if shape == "refused":
            return 400, {"error": {"message": "logprobs are not supported by this model", "code": 400}}
        if shape == "too-long" and instruction in self.too_long:
            return 400, {"error": {"message": TOO_LONG, "type": "BadRequestError", "code": 400}}
        if shape.startswith("harmony-ids"):
            return 200, self._token_ids(harmony(THOUGHT, answer), budget, keep=shape.endswith("special"))
        if shape == "think-apart-hosted":
            return 200, self._hosted(answer, budget)
        if shape in ("think-apart", "r1-apart"):
            return 200, self._apart(answer, budget, opened=shape == "r1-apart")
        text = {
            "think-content": f"<think>\n{THOUGHT}\n</think>\n\n{answer}",
            "harmony-stripped": f"analysis{THOUGHT}assistantfinal{answer}",
        }.get(shape, answer)
        return 200, self._chat(text[:budget], None, text[:budget], len(text) > budget, shape != "no-logprobs")

    @staticmethod
    def _chat(
        content: str | None, reasoning: dict[str, str] | None, covered: str, cut: bool, logprobs: bool = True
    ) -> dict[str, Any]:
        message = {"role": "assistant", "content": content, **(reasoning or {})}
        entries = _char_entries(covered)
        return {
            "id": "chat-1",
            "object": "chat.completion",
            "created": 0,
            "model": "m",
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": "length" if cut else "stop",
                    "logprobs": {"content": entries} if logprobs else None,
                }
            ],
            "usage": {
                "prompt_tokens": 9,
                "completion_tokens": len(entries),
                "total_tokens": 9 + len(entries),
            },
        }

    def _apart(self, answer: str, budget: int, opened: bool) -> dict[str, Any]:
        """vLLM with a reasoning parser: the reasoning and the answer apart, logprobs over everything (the
        output starts inside the thinking when the template ``opened`` ``<think>``, as for R1 distills)."""
        whole = f"{'' if opened else '<think>'}\n{THOUGHT}\n</think>\n\n{answer}"
        text = whole[:budget]
        head, closed, tail = text.partition("</think>")
        reasoning = {"reasoning": head.removeprefix("<think>").strip()}
        return self._chat(tail.strip() if closed else None, reasoning, text, len(text) < len(whole))

    def _hosted(self, answer: str, budget: int) -> dict[str, Any]:
        """A hosted API: reasoning_content apart, logprobs for the answer only, usage counting both."""
        response = self._chat(
            answer[:budget], {"reasoning_content": THOUGHT}, answer[:budget], len(answer) > budget
        )
        hidden = len(THOUGHT) // 4
        response["usage"]["completion_tokens"] += hidden
        response["usage"]["completion_tokens_details"] = {"reasoning_tokens": hidden}
        return response

    def _token_ids(self, text: str, budget: int, keep: bool) -> dict[str, Any]:
        """vLLM's completions with token ids: the ids of ``text``, the server's text without the stop token
        and, unless ``keep``, without the special tokens."""
        ids = self.tokenizer(text, add_special_tokens=False)["input_ids"][:budget]
        stopped = ids[-1] == self.tokenizer.eos_token_id
        served = self.tokenizer.decode(ids[:-1] if stopped else ids, skip_special_tokens=not keep)
        tokens = [f"token_id:{i}" for i in ids]
        return {
            "id": "cmpl-1",
            "object": "text_completion",
            "created": 0,
            "model": "m",
            "choices": [
                {
                    "index": 0,
                    "text": served,
                    "finish_reason": "stop" if stopped else "length",
                    "logprobs": {
                        "tokens": tokens,
                        "token_logprobs": [-0.01] * len(ids),
                        "text_offset": [sum(map(len, tokens[:k])) for k in range(len(tokens))],
                        "top_logprobs": [{t: -0.01, "token_id:0": -6.0} for t in tokens],
                    },
                }
            ],
            "usage": {"prompt_tokens": 9, "completion_tokens": len(ids), "total_tokens": 9 + len(ids)},
        }
