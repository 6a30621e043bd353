"""Cached generation against Hugging Face transformers' `generate` on a model of the same shape.

    pip install --target /tmp/hf transformers tokenizers regex     # benchmark-only, not a dependency
    PYTHONPATH=/tmp/hf python -m benchmarks.generation [--quick]

Both decode greedily 256 new tokens after a 64-token prompt with a KV cache, one after the other
(interleaved, `--repeats` times, median), on the shipped GPT and on a GPT-NeoX of its shape (4 layers,
d_model 256, 4 heads, d_ff 1024, exact GELU, full rotary, sequential residual, tied embeddings,
random weights: speed does not depend on them). Prints one JSON line; nothing is asserted.
Target (issue #30): toyviz ≥ 1.3× transformers' tokens per second.
"""
import argparse
import json
import statistics
import time

import torch

import toyviz


def neox_like(config):
    from transformers import GPTNeoXConfig, GPTNeoXForCausalLM
    return GPTNeoXForCausalLM(GPTNeoXConfig(
        vocab_size=config.vocab_size, hidden_size=config.d_model, num_hidden_layers=config.n_layer,
        num_attention_heads=config.n_head, intermediate_size=config.d_ff, hidden_act="gelu", rotary_pct=1.0,
        max_position_embeddings=1024, use_parallel_residual=False, tie_word_embeddings=True,
        attention_bias=True)).eval()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    gpt = toyviz.load("gpt", device="cpu")
    new, repeats = (32, 2) if args.quick else (256, args.repeats)
    prompt = torch.randint(0, gpt.config.vocab_size - 1, (64,), generator=torch.Generator().manual_seed(0)).tolist()
    runs = {"toyviz": lambda: sum(1 for _ in gpt.model.generate_ids(prompt, new, temperature=0.0))}
    try:
        hf = neox_like(gpt.config)
        ids = torch.tensor([prompt])
        runs["transformers"] = lambda: hf.generate(ids, max_new_tokens=new, min_new_tokens=new, do_sample=False,
                                                   use_cache=True, pad_token_id=0).shape[1] - ids.shape[1]
    except ImportError:
        pass
    times = {name: [] for name in runs}
    with torch.no_grad():
        for run in runs.values():
            run()                                           # warm-up
        for _ in range(repeats):
            for name, run in runs.items():
                start = time.perf_counter()
                assert run() == new
                times[name].append(time.perf_counter() - start)
    rates = {name: round(new / statistics.median(t), 1) for name, t in times.items()}
    result = {"new_tokens": new, "prompt_tokens": len(prompt), "threads": torch.get_num_threads(), "tokens_per_s": rates}
    if "transformers" in rates:
        import transformers
        result |= {"transformers": transformers.__version__, "ratio": round(rates["toyviz"] / rates["transformers"], 2)}
    print(json.dumps(result))


if __name__ == "__main__":
    main()
