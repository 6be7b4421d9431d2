"""The public sources that the metrics cite: papers, standards and engine documentation.

Each constant is the short form a metric's ``source`` uses (it shows in results.json, the
workbook's Notes, the report's formula appendix and ``planner explain``); :data:`REFERENCES`
gives each short form its full reference for the report's list of sources.
"""

from __future__ import annotations

UNITS = "IEC 80000-13 (GB = 10⁹ B, GiB = 2³⁰ B)"
POPE = "Pope et al. 2022"
GQA = "Ainslie et al. 2023 (GQA)"
PAGED = "Kwon et al. 2023 (vLLM PagedAttention)"
ROOFLINE = "Williams et al. 2009 (roofline)"
KAPLAN = "Kaplan et al. 2020"
LITTLE = "Little 1961"
PASTA = "Wolff 1982 (Poisson arrivals see time averages)"
RESIDUAL = "Kleinrock 1975 (mean residual life of a service in progress)"
ARRIVAL = "Lavenberg and Reiser 1980 (arrival theorem: an arrival sees the others' load)"
VLLM_METRICS = "vLLM serving benchmark metrics"
SARATHI = "Agrawal et al. 2024 (Sarathi-Serve: chunked prefill, decodes first in each step)"
SRE = "Beyer et al. 2016 (SRE), ch. 4"
MISTRAL = "Jiang et al. 2023 (Mistral 7B)"
DEEPSEEK_V2 = "DeepSeek-AI 2024 (DeepSeek-V2)"
LEAST_SQUARES = "NIST/SEMATECH e-Handbook, §4.1.4.1 (least squares)"
NORMAL = "NIST/SEMATECH e-Handbook, §1.3.6.7.1 (normal quantiles)"
LEVIATHAN = "Leviathan et al. 2023 (speculative decoding)"
EAGLE = "Li et al. 2024 (EAGLE: a one-layer draft head over the target's features)"
PD_PREFIX = (
    "Mooncake and SGLang 2025 (a prefill instance caches the prompts it prefilled, not the "
    "tokens decoded elsewhere)"
)

REFERENCES: dict[str, str] = {
    UNITS: "IEC 80000-13:2008, Quantities and units, Part 13: Information science and "
    "technology (decimal and binary prefixes).",
    POPE: "R. Pope, S. Douglas, A. Chowdhery et al., Efficiently Scaling Transformer "
    "Inference, MLSys 2023, arXiv:2211.05102 (weights and KV cache in memory, decode steps "
    "bound by reading them, batching sharing the weight reads).",
    GQA: "J. Ainslie, J. Lee-Thorp, M. de Jong et al., GQA: Training Generalized Multi-Query "
    "Transformer Models from Multi-Head Checkpoints, EMNLP 2023, arXiv:2305.13245 (keys and "
    "values shared by groups of query heads).",
    PAGED: "W. Kwon, Z. Li, S. Zhuang et al., Efficient Memory Management for Large Language "
    "Model Serving with PagedAttention, SOSP 2023, arXiv:2309.06180 (the KV cache in blocks, "
    "admission, preemption by recompute or swap).",
    ROOFLINE: "S. Williams, A. Waterman, D. Patterson, Roofline: an insightful visual "
    "performance model for multicore architectures, Communications of the ACM 52(4), 2009.",
    KAPLAN: "J. Kaplan, S. McCandlish, T. Henighan et al., Scaling Laws for Neural Language "
    "Models, arXiv:2001.08361, §2.1 (a forward pass costs about 2 FLOP per parameter per token).",
    LITTLE: "J. D. C. Little, A Proof for the Queuing Formula L = λW, Operations Research 9(3), "
    "1961.",
    PASTA: "R. W. Wolff, Poisson Arrivals See Time Averages, Operations Research 30(2), 1982.",
    ARRIVAL: "S. S. Lavenberg, M. Reiser, Stationary State Probabilities at Arrival Instants "
    "for Closed Queueing Networks with Multiple Types of Customers, Journal of Applied "
    "Probability 17(4), 1980 (a customer of a closed network arriving at a queue sees it as in "
    "the steady state of the network without itself).",
    RESIDUAL: "L. Kleinrock, Queueing Systems, Volume 1: Theory, Wiley, 1975, section 5.2.",
    VLLM_METRICS: "vLLM documentation, benchmarking the online serving throughput: time to "
    "first token (TTFT), time per output token, inter-token latency (ITL), end-to-end latency.",
    SRE: "B. Beyer, C. Jones, J. Petoff, N. R. Murphy (eds.), Site Reliability Engineering, "
    "O'Reilly 2016, ch. 4, Service Level Objectives (latency, throughput and error rate stated "
    "together).",
    MISTRAL: "A. Q. Jiang et al., Mistral 7B, arXiv:2310.06825 (sliding-window attention and "
    "its rolling cache).",
    DEEPSEEK_V2: "DeepSeek-AI, DeepSeek-V2: A Strong, Economical, and Efficient "
    "Mixture-of-Experts Language Model, arXiv:2405.04434, §2.1 (multi-head latent attention).",
    LEAST_SQUARES: "NIST/SEMATECH e-Handbook of Statistical Methods, 2012, section 4.1.4.1, "
    "Linear Least Squares Regression (the fit of the efficiencies and the step overhead, and "
    "its residuals).",
    NORMAL: "NIST/SEMATECH e-Handbook of Statistical Methods, 2012, section 1.3.6.7.1, "
    "Cumulative Distribution Function of the Standard Normal Distribution (P(Z ≤ 1.2816) = "
    "0.90).",
    PD_PREFIX: "kvcache-ai/Mooncake issue 279 (2025-04-21: prefill nodes do not reuse the KV "
    "cache made on decode nodes in a multi-turn conversation) and sgl-project/sglang issue "
    "8670 (2025-08-01: a decode server keeps no radix cache, so the cache of the tokens it "
    "decoded is not there for later prefills), github.com; their words in "
    "tests/fixtures/engines/pd-prefix-cache.md.",
    LEVIATHAN: "Y. Leviathan, M. Kalman, Y. Matias, Fast Inference from Transformers via "
    "Speculative Decoding, ICML 2023, arXiv:2211.17192, §3.1 (k proposals each accepted with "
    "probability α emit (1 − α^(k+1)) ÷ (1 − α) tokens per verifying step).",
    EAGLE: "Y. Li, F. Wei, C. Zhang, H. Zhang, EAGLE: Speculative Sampling Requires Rethinking "
    "Feature Uncertainty, ICML 2024, arXiv:2401.15077 (a one-layer head drafting from the "
    "target's features, sharing its embeddings and LM head); DeepSeek-AI, DeepSeek-V3 "
    "Technical Report, arXiv:2412.19437, §2.2 and §5.4.3 (multi-token prediction modules "
    "reused for speculative decoding).",
}

# Expert parallelism and disaggregated serving (planner.model.parallel). A full reference joins
# REFERENCES once a plan metric cites it (the expert-parallel candidate's columns do for
# DeepSeek-V3, DeepEP and SGLang's large-scale EP); until then it is listed apart, since every
# entry of REFERENCES must be cited by a plan metric.
DEEPSEEK_V3 = "DeepSeek-AI 2024 (DeepSeek-V3)"
DEEPEP = "DeepSeek-AI 2025 (DeepEP: FP8 dispatch, BF16 combine)"
SGLANG_EP = "SGLang team 2025 (PD disaggregation and large-scale EP on 96 H100s)"
DISTSERVE = "Zhong et al. 2024 (DistServe: disaggregated prefill and decode)"
#: Prompts and generation on pools of different devices (prefill on H100s, decode on A100s).
SPLITWISE = "Patel et al. 2024 (Splitwise: phase splitting on different hardware, ISCA)"

PARALLEL_REFERENCES: dict[str, str] = {
    DEEPSEEK_V3: "DeepSeek-AI, DeepSeek-V3 Technical Report, arXiv:2412.19437, §3.4 (inference "
    "with expert parallelism and data-parallel attention, redundant experts, prefill and decode "
    "deployed apart).",
    DEEPEP: "DeepSeek-AI, DeepEP: an efficient expert-parallel communication library, "
    "github.com/deepseek-ai/DeepEP, docs/legacy.md (low-latency kernels: 128 tokens a batch, "
    "hidden 7168, top-8, FP8 dispatch and BF16 combine over CX7 400 Gb/s InfiniBand).",
    SGLANG_EP: "The SGLang Team, Deploying DeepSeek with PD Disaggregation and Large-scale "
    "Expert Parallelism on 96 H100 GPUs, lmsys.org/blog/2025-05-05-large-scale-ep (Expert "
    "Parallelism Load Balancer; GPU balancedness = mean ÷ maximum computation time).",
    DISTSERVE: "Y. Zhong, S. Liu, J. Chen et al., DistServe: Disaggregating Prefill and Decoding "
    "for Goodput-optimized Large Language Model Serving, OSDI 2024, arXiv:2401.09670 (each phase "
    "on its own pool, sized apart, the KV cache moved between them).",
}

REFERENCES.update({n: PARALLEL_REFERENCES.pop(n) for n in (DEEPSEEK_V3, DEEPEP, SGLANG_EP)})

# Pipeline parallelism across nodes (planner.model.pipeline).
MEGATRON_PP = "Narayanan et al. 2021 (Megatron-LM: pipeline stages across nodes)"
VLLM_PP = "vLLM distributed serving (--pipeline-parallel-size: a micro-batch in each stage)"

REFERENCES.update(
    {
        MEGATRON_PP: "D. Narayanan, M. Shoeybi, J. Casper et al., Efficient Large-Scale Language "
        "Model Training on GPU Clusters Using Megatron-LM, SC 2021, arXiv:2104.04473 (tensor "
        "parallelism within a node, pipeline stages across nodes; each stage sends its "
        "activations to the next).",
        VLLM_PP: "vLLM documentation, Distributed inference and serving "
        "(docs.vllm.ai/en/latest/serving/distributed_serving.html): tensor parallel size the "
        "devices of a node, pipeline parallel size the nodes; the scheduler keeps as many "
        "micro-batches in flight as there are stages.",
    }
)
