"""A tiny chat model built in-process (no download) for TRL's multi-turn GRPO, and forced tool calls.

- `tiny_chat_model`: a byte-level BPE tokenizer trained on the given texts, with
  the special tokens and the chat template (Qwen3's, shipped in the trl wheel) that
  TRL recognises for tool calling, and a randomly initialised Qwen2 model.
- `force_tool_calls`: a random model never emits a well-formed tool call, so
  each generation is forced, token by token, to the tool call a `choose`
  function picks from the conversation so far (or to an end of turn). The
  tokens are still the model's completion: TRL scores their log-probabilities
  and trains on them.

torch, tokenizers, transformers and trl (the ``trl`` extra) are imported inside the
functions, so collecting this file needs none of them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

import _hf_offline  # noqa: F401  (offline, before any Hugging Face import)

SPECIAL = [
    "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<tool_call>", "</tool_call>",
    "<tool_response>", "</tool_response>", "<think>", "</think>",
]  # fmt: skip
END = "<|im_end|>"


def tiny_chat_model(texts: Iterable[str], seed: int = 0) -> tuple[Any, Any]:
    """``(model, tokenizer)``: ~10k random parameters, a ~700-token vocabulary trained on ``texts``."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM
    from trl.chat_template_utils import qwen3_chat_template

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=700, special_tokens=SPECIAL, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    bpe.train_from_iterator(list(texts), trainer)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe, eos_token=END, pad_token="<|endoftext|>", padding_side="left"
    )
    tokenizer.chat_template = qwen3_chat_template
    config = Qwen2Config(
        vocab_size=len(tokenizer), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
        num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=4096,
        eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id,
        bos_token_id=None, tie_word_embeddings=True,
    )  # fmt: skip
    torch.manual_seed(seed)
    return Qwen2ForCausalLM(config), tokenizer


def tool_call_text(command: str | None) -> str:
    """The assistant turn that calls the ``command`` tool with ``command`` (None: ends the turn)."""
    if command is None:
        return END
    call = json.dumps({"name": "command", "arguments": {"command": command}})
    return f"<tool_call>\n{call}\n</tool_call>{END}"


def force_tool_calls(model: Any, tokenizer: Any, choose: Callable[[str], str | None]) -> None:
    """Make every ``model.generate`` call emit the turn ``choose(conversation)`` picks."""
    import torch
    from transformers import LogitsProcessor, LogitsProcessorList

    class _Forced(LogitsProcessor):
        """Forces each row of one ``generate`` call to the tokens of the turn ``choose`` picked."""

        def __init__(self, tokenizer: Any, choose: Callable[[str], str | None]):
            self.tokenizer, self.choose = tokenizer, choose
            self.start: int | None = None
            self.targets: list[list[int]] = []

        def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
            if self.start is None:  # the first step: read each row's conversation
                self.start = input_ids.shape[1]
                pad = self.tokenizer.pad_token_id
                for row in input_ids:
                    context = self.tokenizer.decode(row[row != pad].tolist())
                    text = tool_call_text(self.choose(context))
                    self.targets.append(self.tokenizer.encode(text, add_special_tokens=False))
            step = input_ids.shape[1] - self.start
            forced = torch.full_like(scores, -float("inf"))
            for b, target in enumerate(self.targets):
                forced[b, target[min(step, len(target) - 1)]] = 0.0
            return forced

    generate = model.generate

    def forced_generate(*args: Any, **kwargs: Any) -> Any:
        kwargs["logits_processor"] = LogitsProcessorList([_Forced(tokenizer, choose)])
        return generate(*args, **kwargs)

    model.generate = forced_generate
