"""Prefix caching in closed form: the prompt tokens an engine finds cached, and what they save.

An engine with prefix caching keeps the KV cache of a prompt's blocks after its request ends and
hands them to a later request whose prompt begins with the same tokens (vLLM's automatic prefix
caching hashes each full block of ``kv_block_tokens`` with the blocks before it; SGLang keeps a
radix tree; TensorRT-LLM reuses blocks). A workload says what its prompts share
(workloads.yaml ``prefix``): a system prompt every request begins with, a task's history
re-sent with each of its calls, a document asked several questions. Cached tokens skip the
prefill's weight multiplications but not the attention of the new tokens over them
(:func:`planner.model.latency.prefill_flops`); a shared prefix's cache is held once per replica
(:func:`planner.model.memory.max_sequences`); a task's history survives between its calls only
while the pool has room for it beside the running sequences (:func:`history_retained_fraction`).
A disaggregated candidate's prompts run on its prefill pool, whose cache holds the prompts it
prefilled and nothing it did not: of a history, the previous prompt's part, kept while the pool's
room outlasts the call and the tool time (:func:`prefill_history_retained_fraction`).
"""

from __future__ import annotations

from typing import Any

from planner.model.expr import floor, is_missing, maximum, minimum, where
from planner.model.metric import metric, rebound
from planner.model.sources import KAPLAN, PD_PREFIX, ROOFLINE

#: The engines' documentation of their prefix caches.
APC = (
    "vLLM docs, automatic prefix caching (full blocks hashed with their prefix, freed blocks "
    "kept and evicted least recently used)"
)
#: The characteristic-time approximation of a least-recently-used cache.
CHE = (
    "Che, Tung and Wang 2002 (characteristic time of an LRU cache; Fricker, Robert and "
    "Roberts 2012 on its accuracy)"
)


@metric("tokens", source=f"{APC}; Kwon et al. 2023 (vLLM PagedAttention)", group="memory")
def shared_prefix_cached_tokens(
    prefix_caching: Any, shared_prefix_tokens: Any, kv_block_tokens: Any
) -> Any:
    """Tokens of the prefix every request shares that the engine keeps cached: its whole
    blocks, ⌊shared ÷ block⌋ × block, with prefix caching on; 0 with it off [tokens].

    A 2,000-token system prompt in blocks of 16 is 125 whole blocks, all 2,000 tokens; one of
    1,000 tokens is 62 blocks, 992 tokens (a partly filled block is not reused).
    """
    whole = floor(shared_prefix_tokens / kv_block_tokens) * kv_block_tokens
    return where(prefix_caching > 0, whole, 0)


@metric("B", source=f"{APC}; Pope et al. 2022", group="memory")
def shared_prefix_kv_bytes(shared_prefix_cached_tokens: Any, kv_bytes_per_token: Any) -> Any:
    """Cache the shared prefix holds once per replica, per device: its cached tokens × KV bytes
    per token over the full-attention layers [B]. Every running sequence reads these blocks;
    none reserves them for itself."""
    return shared_prefix_cached_tokens * kv_bytes_per_token


@metric("tokens", source=f"{APC}; Kwon et al. 2023 (vLLM PagedAttention)", group="latency")
def kv_pool_idle_tokens(
    kv_budget_bytes: Any,
    shared_prefix_kv_bytes: Any,
    kv_bytes_per_token: Any,
    decode_batch: Any,
    mean_context_tokens: Any,
    shared_prefix_cached_tokens: Any,
) -> Any:
    """Cache slots a replica's pool has beside the shared prefix and the running sequences:
    (budget − shared prefix) ÷ KV bytes per token − batch × (mean context − shared prefix's
    cached tokens), at least 0 [tokens].

    A running sequence holds blocks for the tokens it has (the paged cache grows with it), the
    shared prefix's once for all; the rest of the pool keeps the blocks of finished requests
    until it needs them.
    """
    pool = (kv_budget_bytes - shared_prefix_kv_bytes) / maximum(kv_bytes_per_token, 1)
    running = decode_batch * (mean_context_tokens - shared_prefix_cached_tokens)
    return maximum(pool - running, 0)


@metric("tasks", source="agent loop: a task alternates model calls and tool time", group="latency")
def idle_tasks_per_replica(
    decode_batch: Any,
    requests_per_task: Any,
    tool_time_s: Any,
    output_tokens_mean: Any,
    itl_s: Any,
) -> Any:
    """Tasks of a replica between two of their calls, whose history waits in the pool: batch ×
    (calls − 1) ÷ calls × tool time ÷ (mean output × ITL) [tasks].

    Each running sequence stands for a task that spends (calls − 1) tool times idle for every
    calls × call time in service; a call's time is taken as its decoding (mean output × ITL),
    the prefill the cache shortens left out, so the count is an upper bound. 0 for one call a
    task or no tool time.
    """
    call_s = output_tokens_mean * itl_s
    idle = decode_batch * (requests_per_task - 1) / requests_per_task * tool_time_s
    return where(call_s > 0, idle / where(call_s > 0, call_s, 1), 0)


@metric("", source=CHE, group="latency")
def history_retained_fraction(
    history_prefix_tokens: Any, idle_tasks_per_replica: Any, kv_pool_idle_tokens: Any
) -> Any:
    """Share of a task's history still cached at its next call: min(1, idle room ÷ (idle tasks
    × history tokens)); 1 with no history or no idle task [-].

    The idle tasks' histories compete for the pool's idle room, evicted least recently used. For
    N equal items each asked for at random (independent, Poisson), Che's approximation gives an
    LRU cache of C items a hit ratio of C ÷ N: the share that fits. Calls that return after the
    same fixed tool time instead make LRU all-or-nothing (every history found, or none), around
    the same point.
    """
    demand = idle_tasks_per_replica * history_prefix_tokens
    return where(demand > 0, minimum(1, kv_pool_idle_tokens / where(demand > 0, demand, 1)), 1)


# A disaggregated candidate's prompts run on its prefill pool, whose cache is its own -------


@metric("tokens", source=f"{APC}; {PD_PREFIX}", group="latency")
def prefill_pool_idle_tokens(
    prefill_hw_kv_budget_bytes: Any,
    prefill_hw_shared_prefix_kv_bytes: Any,
    prefill_hw_kv_bytes_per_token: Any,
    max_num_batched_tokens: Any,
) -> Any:
    """Cache slots a prefill scheduler (a replica; a rank of an expert-parallel one) keeps for
    the prompts it has prefilled: (its device's budget − the shared prefix) ÷ KV bytes per token
    − one step's tokens (the prompts being prefilled), at least 0 [tokens]. It holds no running
    sequence: a prompt's cache leaves for the decode pool once made, its blocks kept until
    needed."""
    pool = (prefill_hw_kv_budget_bytes - prefill_hw_shared_prefix_kv_bytes) / maximum(
        prefill_hw_kv_bytes_per_token, 1
    )
    return maximum(pool - max_num_batched_tokens, 0)


@metric("tokens/s", source=f"{KAPLAN}; {ROOFLINE}", group="latency")
def prefill_pool_write_tokens_per_s(
    prefill_compute_flops_per_s: Any, decode_flops_per_token: Any
) -> Any:
    """The most prompt tokens a prefill scheduler writes into its cache a second: its
    arithmetic's rate ÷ 2 FLOP a parameter a token [tokens/s]. A bound: attention's arithmetic,
    the step's weight read and the queue's idle time all slow it. 1e15 FLOP/s over 16e9 FLOP a
    token: 62,500 tokens a second."""
    return prefill_compute_flops_per_s / decode_flops_per_token


@metric("", source=f"{CHE}; {PD_PREFIX}", group="latency")
def prefill_history_retained_fraction(
    prefill_history_tokens: Any,
    prefill_pool_idle_tokens: Any,
    prefill_pool_write_tokens_per_s: Any,
    output_tokens_mean: Any,
    itl_s: Any,
    tool_time_s: Any,
) -> Any:
    """Share of a task's history still in its prefill scheduler's cache at the task's next
    call: min(1, idle room ÷ the tokens it prefills in between at most, write rate × (the call's
    decoding, mean output × ITL, + tool time)); 1 with no history [-].

    Least recently used, a cache of C slots written at r tokens a second holds what was
    written in the last C ÷ r seconds (Che's characteristic time); a task's calls are taken to
    return to the scheduler that prefilled the last (a cache-aware router's), its history
    then found as far as it fits. 500,000 slots written at 50,000 tokens a second for 4 s of
    decoding and 8 s of tool time: 500,000 ÷ 600,000 = 0.83.
    """
    written = prefill_pool_write_tokens_per_s * (output_tokens_mean * itl_s + tool_time_s)
    kept = minimum(1, prefill_pool_idle_tokens / where(written > 0, written, 1))
    return where((prefill_history_tokens > 0) & (written > 0), kept, 1)


@metric("tokens", source=f"{APC}; {PD_PREFIX}", group="latency")
def prefill_history_tokens(
    history_prefix_tokens: Any,
    output_tokens_mean: Any,
    requests_per_task: Any,
    disaggregated: Any,
) -> Any:
    """Tokens of a task's history that the replica running its prompts can have cached
    [tokens]: all of it where that replica also decodes; on a prefill pool only the previous
    prompt's part, the history less the previous call's answer, whose cache was made on the
    decode pool and is not sent back (Mooncake, SGLang), and after which no block matches. Every
    call but a task's first re-sends an answer: history − mean output × (calls − 1) ÷ calls, at
    least 0. The coding agent's 7,300 tokens of history over six calls of 600-token answers:
    7,300 − 500 = 6,800 on a prefill pool."""
    answers = output_tokens_mean * (requests_per_task - 1) / maximum(requests_per_task, 1)
    pool = maximum(history_prefix_tokens - answers, 0)
    return where(disaggregated > 0, pool, history_prefix_tokens)


@metric("tokens", source=f"{APC}; {PD_PREFIX}", group="latency")
def repeated_prefix_tokens(
    document_prefix_tokens: Any,
    questions_per_document: Any,
    prefill_history_tokens: Any,
    history_retained_fraction: Any,
    disaggregated: Any = 0,
    prefill_history_retained_fraction: Any = 1,
) -> Any:
    """Tokens of the mean prompt that repeat an earlier request's and are still cached where
    the prompt runs: document × (questions − 1) ÷ questions + history × retained [tokens].

    A document's later questions are taken to come while it is cached (its first finds none
    of it). A task's history survives as :func:`history_retained_fraction` says on a replica
    that decodes too; on a prefill pool, its prompts' part of it
    (:func:`prefill_history_tokens`) as :func:`prefill_history_retained_fraction` says.
    """
    document = document_prefix_tokens * (questions_per_document - 1) / questions_per_document
    retained = where(
        disaggregated > 0, prefill_history_retained_fraction, history_retained_fraction
    )
    return document + prefill_history_tokens * retained


def _whole_blocks_share(cacheable: Any, prompt: Any, kv_block_tokens: Any) -> Any:
    """The whole blocks of min(cacheable, prompt − 1) as a share of the prompt [-]: vLLM looks
    for a hit of at most the prompt less one token (the last is computed to sample from), so
    a prompt found whole in the cache prefills its last block again; a partly filled block is
    not reused."""
    longest = maximum(minimum(cacheable, prompt - 1), 0)
    return floor(longest / kv_block_tokens) * kv_block_tokens / prompt


@metric("", source=APC, group="latency")
def prefix_hit_ratio_expected(
    shared_prefix_tokens: Any,
    repeated_prefix_tokens: Any,
    kv_block_tokens: Any,
    prompt_tokens_mean: Any,
) -> Any:
    """Share of the mean prompt an engine with prefix caching finds cached: the whole blocks
    of min(shared + repeated, prompt − 1), ÷ the mean prompt [-]. The shared prefix is in use
    all the time and stays cached."""
    cacheable = shared_prefix_tokens + repeated_prefix_tokens
    return _whole_blocks_share(cacheable, prompt_tokens_mean, kv_block_tokens)


@metric("", source=APC, group="latency")
def median_prefix_hit_ratio_expected(
    shared_prefix_tokens: Any,
    repeated_prefix_tokens: Any,
    kv_block_tokens: Any,
    prompt_tokens_mean: Any,
    prompt_tokens_median: Any,
) -> Any:
    """Share of the median prompt an engine with prefix caching finds cached: the whole blocks
    of min(shared + repeated × median ÷ mean, median − 1), ÷ the median prompt [-].

    Every prompt begins with the same shared prefix, so a short prompt is mostly cached: a
    median chat prompt of 489 tokens behind a 500-token system prompt prefills a few tokens,
    not the mean share of them. A task's history and a document grow with the prompt that
    carries them, so they are taken in proportion to it, their mean share of the mean prompt.
    """
    share = repeated_prefix_tokens / maximum(prompt_tokens_mean, 1)
    cacheable = shared_prefix_tokens + share * prompt_tokens_median
    return _whole_blocks_share(cacheable, prompt_tokens_median, kv_block_tokens)


@metric("", source=f"{APC}; vLLM metrics prefix_cache_hits ÷ prefix_cache_queries", group="latency")
def prefix_hit_ratio(
    prefix_caching: Any, measured_prefix_hit_ratio: Any, prefix_hit_ratio_expected: Any
) -> Any:
    """Share of prompt tokens served from the prefix cache, as planned: the measured ratio
    where the workload gives one, else the expected; 0 with prefix caching off [-]."""
    ratio = where(
        is_missing(measured_prefix_hit_ratio), prefix_hit_ratio_expected, measured_prefix_hit_ratio
    )
    return where(prefix_caching > 0, ratio, 0)


rebound(
    "median_prefix_hit_ratio",
    "prefix_hit_ratio",
    {"prefix_hit_ratio_expected": "median_prefix_hit_ratio_expected"},
    "Share of the median prompt served from the prefix cache, as planned: the measured ratio "
    "where the workload gives one (each request finds that share), else the expected; 0 with "
    "prefix caching off [-].",
)


@metric("tokens", source=APC, group="latency")
def cached_prompt_tokens_mean(prefix_hit_ratio: Any, prompt_tokens_mean: Any) -> Any:
    """Prompt tokens a request finds cached on average: hit ratio × mean prompt [tokens]."""
    return prefix_hit_ratio * prompt_tokens_mean


@metric("tokens", source=APC, group="latency")
def prefill_tokens_mean(prompt_tokens_mean: Any, cached_prompt_tokens_mean: Any) -> Any:
    """Prompt tokens a request prefills on average: mean prompt − cached tokens [tokens]; the
    whole prompt with prefix caching off."""
    return prompt_tokens_mean - cached_prompt_tokens_mean


@metric("", source="api_offers.yaml; the providers' prompt caches", group="cost")
def api_cached_input_fraction(
    measured_prefix_hit_ratio: Any, prefix_hit_ratio_expected: Any
) -> Any:
    """Share of input tokens a hosted API serves from its prompt cache: the measured hit ratio
    where the workload gives one, else the expected, whatever the engine profile says of its
    own cache [-]."""
    return where(
        is_missing(measured_prefix_hit_ratio), prefix_hit_ratio_expected, measured_prefix_hit_ratio
    )
