"""Hugging Face libraries offline for the adapters' tests (no hub, no download), and TRL's
notice about its experimental ``environment_factory`` quiet: import this before them."""

from __future__ import annotations

import os

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["HF_DATASETS_OFFLINE"] = "1"
os.environ["TRL_EXPERIMENTAL_SILENCE"] = "1"
