"""Real text that every machine already has: the Python standard library's own source files.

No download is possible where the suite runs, and a language model should learn something real, so
the corpus is the running interpreter's standard library (tests and IDLE left out), read in sorted
path order and cut to a fixed number of characters. Tokens are words, runs of white space and single
punctuation marks; the vocabulary is the most frequent tokens (ties broken by the token itself), the
rest map to UNK. Every 20th window is held out for the validation loss. The token ids are kept beside
torch.compile's cache (``TORCHINDUCTOR_CACHE_DIR``): tokenizing GPT-2's corpus takes seconds, which every
fresh process (a profiling child, a fresh-process measurement) would spend again.
"""

from __future__ import annotations

import collections
import functools
import hashlib
import os
import pickle
import re
import sys
import sysconfig
import tempfile
from pathlib import Path

import torch
from torch.utils.data import Dataset

TOKEN = re.compile(r"\w+|\s+|[^\w\s]")
HELD_OUT_EVERY = 20
SKIPPED_PARTS = {"test", "tests", "idlelib", "site-packages", "dist-packages"}


def mask_id(vocab_size: int) -> int:
    """The id reserved for a masked position (masked-language models)."""
    return vocab_size - 2


def unknown_id(vocab_size: int) -> int:
    """The id of every token outside the vocabulary."""
    return vocab_size - 1


def stdlib_sources() -> list[Path]:
    """The standard library's .py files, in sorted order, without its tests."""
    root = Path(sysconfig.get_paths()["stdlib"])
    files: list[Path] = []
    for folder, subfolders, names in os.walk(root):
        subfolders[:] = [name for name in subfolders if name not in SKIPPED_PARTS]
        files.extend(Path(folder, name) for name in names if name.endswith(".py"))
    return sorted(files, key=lambda path: path.relative_to(root).as_posix())


@functools.cache
def corpus(chars: int) -> str:
    """The first ``chars`` characters of the concatenated sources."""
    parts: list[str] = []
    size = 0
    for path in stdlib_sources():
        text = path.read_text(encoding="utf-8", errors="replace")
        parts.append(text)
        size += len(text)
        if size >= chars:
            break
    text = "".join(parts)[:chars]
    if len(text) < chars:
        raise RuntimeError(f"the standard library holds {len(text):,} characters of source; {chars:,} are needed")
    return text


@functools.cache
def token_ids(chars: int, vocab_size: int) -> torch.Tensor:
    """``tokenize(chars, vocab_size)``, read from the file an earlier process kept where there is one."""
    path = kept_file(chars, vocab_size)
    try:
        kept = torch.load(path, weights_only=True)
    except (OSError, RuntimeError, ValueError, EOFError, pickle.UnpicklingError):  # missing, or not torch's whole
        kept = None
    if isinstance(kept, torch.Tensor) and kept.dtype == torch.long and kept.dim() == 1:
        return kept
    ids = tokenize(chars, vocab_size)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path.parent, suffix=".tmp", delete=False) as handle:
            torch.save(ids, handle)
        os.replace(handle.name, path)
    except OSError:  # a cache that cannot be written costs the next process the tokenizing, nothing else
        pass
    return ids


def kept_file(chars: int, vocab_size: int) -> Path:
    """Where this interpreter's token ids for ``chars`` and ``vocab_size`` are kept: named by everything
    they follow from (the standard library's place and version, the sizes, the tokenizer's rules)."""
    stdlib = sysconfig.get_paths()["stdlib"]
    recipe = repr((stdlib, sys.version, chars, vocab_size, TOKEN.pattern, sorted(SKIPPED_PARTS), HELD_OUT_EVERY))
    return cache_root() / "token_ids" / f"{hashlib.sha256(recipe.encode()).hexdigest()[:20]}.pt"


def cache_root() -> Path:
    """torch.compile's cache folder, imported when first needed: importing Inductor imports Dynamo, a
    second of CPU that a process which never builds these workloads would spend for nothing."""
    from torch._inductor.runtime.cache_dir_utils import cache_dir

    return Path(cache_dir())


def tokenize(chars: int, vocab_size: int) -> torch.Tensor:
    """The corpus as token ids: the ``vocab_size - 2`` most frequent tokens, then MASK and UNK."""
    tokens = TOKEN.findall(corpus(chars))
    counts = collections.Counter(tokens)
    kept = sorted(counts, key=lambda token: (-counts[token], token))[: vocab_size - 2]
    ids = {token: i for i, token in enumerate(kept)}
    unknown = unknown_id(vocab_size)
    return torch.tensor([ids.get(token, unknown) for token in tokens], dtype=torch.long)


def split_windows(ids: torch.Tensor, length: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(training windows, held-out windows), each (n, length); every 20th window is held out."""
    count = len(ids) // length
    windows = ids[: count * length].view(count, length)
    held_out = torch.arange(count) % HELD_OUT_EVERY == 0
    return windows[~held_out], windows[held_out]


class Windows(Dataset[torch.Tensor]):
    """Item k: training window ``k % n``."""

    def __init__(self, windows: torch.Tensor) -> None:
        self.windows = windows

    def __len__(self) -> int:
        return len(self.windows)

    def __getitem__(self, k: int) -> torch.Tensor:
        return self.windows[k % len(self.windows)]
