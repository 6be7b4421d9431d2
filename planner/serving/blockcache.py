"""A least-recently-used prefix cache in the serving simulation, by blocks.

An engine with prefix caching keeps a finished request's blocks in the pool's free part and
hands them to a later request whose prompt begins with the same tokens; when the pool needs
room it evicts the least recently used (vLLM's automatic prefix caching frees a request's
blocks tail first, so an entry loses its last blocks first). Here the cache holds entries keyed
by what they hold, each a whole number of ``kv_block_tokens`` blocks [tokens]:

- the workload's shared prefix is not an entry: the pool holds it once, always (as the closed
  form's :func:`planner.model.prefix.shared_prefix_kv_bytes`);
- a document, keyed by its index (request r asks document r ÷ ``questions_per_document``): the
  document part of its prompt, kept when a request asking it ends;
- a task's history, keyed by the task: the blocks its request held past the shared prefix and
  the document (its prompt's own tokens and its output), kept when it ends for the task's next
  call, which re-sends them as its history, and taken out of the cache when that call is
  admitted (they become its own).

A request's prompt is, in order, the shared prefix, its document part (``document_tokens``, at
most its own prompt less one token) and its history (``history_tokens`` from the second call of
a task on, at most what is left less one token). At admission it finds its document's entry,
and only if that is whole (a block's key includes the blocks before it) its task's entry, each
up to its part; its cached tokens are the whole blocks of the shared prefix and what it found,
at least the shared prefix (:func:`planner.serving.traffic.request_prefixes`' rule).

The entries live in the pool's room beside the running sequences, budget − what they hold or
reserve; whenever that shrinks the least recently used entries lose blocks until they fit. A
document asked by requests running at once counts once in the cache and again in each
sequence's own tokens (the simulation does not share blocks between running sequences).
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from planner.serving.traffic import PrefixLayout


class BlockCache:
    """Entries of cached blocks, least recently used first: key → tokens (whole blocks)."""

    __slots__ = ("block", "entries", "total")

    def __init__(self, block_tokens: int) -> None:
        self.block = block_tokens
        self.entries: OrderedDict[tuple[str, int], int] = OrderedDict()
        self.total = 0

    def whole(self, tokens: int) -> int:
        """The whole blocks of ``tokens`` [tokens]."""
        return tokens // self.block * self.block

    def find(self, key: tuple[str, int], tokens: int) -> int:
        """Tokens of an entry's first ``tokens`` it holds, whole blocks; a hit makes it the most
        recently used [tokens]."""
        held = self.entries.get(key, 0)
        if held:
            self.entries.move_to_end(key)
        return min(held, self.whole(tokens))

    def take(self, key: tuple[str, int]) -> int:
        """Remove an entry (its blocks become a running sequence's); the tokens it held."""
        held = self.entries.pop(key, 0)
        self.total -= held
        return held

    def put(self, key: tuple[str, int], tokens: int) -> None:
        """Keep ``tokens`` (whole blocks) under ``key`` as the most recently used, replacing
        what it held."""
        self.take(key)
        kept = self.whole(tokens)
        if kept > 0:
            self.entries[key] = kept
            self.total += kept

    def fit(self, room: int) -> None:
        """Evict the least recently used entries, their last blocks first, until the cache
        holds at most ``room`` tokens."""
        entries = self.entries
        while self.total > max(room, 0) and entries:
            key, held = next(iter(entries.items()))
            over = self.total - max(room, 0)
            lose = min(held, -(-over // self.block) * self.block)
            self.total -= lose
            if lose >= held:
                del entries[key]
            else:
                entries[key] = held - lose


def _parts(layout: PrefixLayout, own_prompt: int, first_call: bool) -> tuple[int, int]:
    """A request's document and history parts of its own prompt [tokens] (module docstring)."""
    document = min(layout.document_tokens, own_prompt - 1)
    history = 0 if first_call else min(layout.history_tokens, own_prompt - 1 - document)
    return max(document, 0), max(history, 0)


def lookup(replica: Any, rid: int) -> int:
    """The cached tokens of request ``rid``'s own prompt at its admission, from the replica's
    cache (taking its task's entry out) [tokens]."""
    cfg, rec, cache = replica.cfg, replica.rec, replica.lru
    layout: PrefixLayout = cfg.prefix_cache
    shared = int(cfg.step.shared_prefix_tokens)
    own = rec.prompt[rid]
    document, history = _parts(layout, own, rid % rec.rpt == 0)
    found = cache.find(("document", rid // layout.questions_per_document), document)
    task_held = cache.take(("task", rid // rec.rpt))  # superseded by this call's, whatever found
    if found == cache.whole(document):  # the history's blocks follow the document's
        found += min(task_held, history)
    whole = cache.whole(min(shared + found, shared + own - 1))
    return max(whole, shared) - shared


def keep(replica: Any, rid: int) -> None:
    """Request ``rid`` ended: its document part and (where its task calls again) its own
    blocks past the document stay cached, then the cache fits the pool's room."""
    cfg, rec, cache = replica.cfg, replica.rec, replica.lru
    layout: PrefixLayout = cfg.prefix_cache
    own = rec.prompt[rid]
    document, _ = _parts(layout, own, True)
    if layout.document_tokens > 0:
        cache.put(("document", rid // layout.questions_per_document), document)
    if layout.history_tokens > 0 and (rid + 1) % rec.rpt:
        cache.put(("task", rid // rec.rpt), own - document + rec.gen[rid])
    fit(replica)


def fit(replica: Any) -> None:
    """Evict until the cache fits the pool's room beside the running sequences: budget − their
    reservations (``reserve-max``) or their next step's need."""
    cfg = replica.cfg
    if cfg.admission == "reserve-max":
        used = replica.reserved
    else:
        used = replica.sum_base + len(replica.running) * replica.G + replica.pre_need
    replica.lru.fit(cfg.kv_budget_tokens - used)
