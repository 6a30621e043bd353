"""Continuous batching (toyviz.serving.batching): streams decoded together give exactly what each gives alone."""
import threading
import time

import pytest
import torch

from toyviz.serving.batching import Streams
from toyviz.models.config import GPTConfig
from toyviz.models.gpt import ToyGPT

CONFIGS = [dict(positional=p, feed_forward=f, norm=n) for p, f, n in [
    ("sinusoidal", "gelu", "pre"), ("learned", "gelu", "post"), ("rope", "swiglu", "pre"), ("none", "gelu", "pre")]]
# prompts of different lengths and settings; the second overflows the 32-token context twice
REQUESTS = [
    (list(range(1, 6)), 30, dict(temperature=0.0)),
    (list(range(3, 27)), 45, dict(temperature=1.2, top_k=20, seed=1)),
    ([5], 12, dict(temperature=0.8, top_p=0.9, seed=2)),
    (list(range(40, 52)), 25, dict(temperature=1.0, seed=3, steer={1: torch.full((32,), 0.5)})),
]


def model(**kw):
    torch.manual_seed(0)
    return ToyGPT(GPTConfig(**{"vocab_size": 97, "context": 32, "n_layer": 2, "n_head": 4, "d_model": 32, **kw})).eval()


def together(streams: Streams, requests, stagger_s: float = 0.0) -> list[list]:
    """Each request read on its own thread (as the server's workers do), started `stagger_s` apart."""
    results = [None] * len(requests)

    def read(i):
        time.sleep(i * stagger_s)
        ids, n, settings = requests[i]
        results[i] = list(streams.generate_ids(ids, n, **settings))
    threads = [threading.Thread(target=read, args=(i,)) for i in range(len(requests))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return results


@pytest.mark.parametrize("kw", CONFIGS)
@pytest.mark.parametrize("stagger_s", [0.0, 0.003])
def test_streams_decoded_together_equal_each_decoded_alone(kw, stagger_s):
    """Rows of unequal length, joining at different rounds, one jumping its window, one steered: every
    stream's tokens and logits are those of ToyGPT.generate_ids on its own."""
    m = model(**kw)
    batched = together(Streams(m), REQUESTS, stagger_s)
    for (ids, n, settings), got in zip(REQUESTS, batched):
        alone = list(m.generate_ids(ids, n, **settings))
        assert [s.token for s in got] == [s.token for s in alone]
        assert torch.allclose(torch.stack([s.logits for s in got]), torch.stack([s.logits for s in alone]),
                              atol=1e-5)
        assert [s.positions for s in got] == [s.positions for s in alone]


def test_streams_share_one_forward_a_round():
    """Six streams of 40 tokens started together: far fewer forwards than 6 × 40."""
    m, streams = model(), None
    streams = Streams(m)
    requests = [([i + 1, i + 2], 40, dict(temperature=1.0, seed=i)) for i in range(6)]
    results = together(streams, requests)
    assert all(len(r) == 40 for r in results)
    assert streams.rounds <= 2 * 40, streams.rounds


def test_a_reader_that_stops_frees_its_row():
    """A reader that goes away after 3 of 10,000 tokens (Stop, a closed page): its stream is dropped
    instead of being computed to the end, the batch's buffers go once no stream is left, and the
    next stream is served."""
    m = model()
    streams = Streams(m)
    reader = streams.generate_ids([1, 2, 3], 10_000, temperature=1.0, seed=0)
    first = [next(reader) for _ in range(3)]
    assert streams.cache.buffers                                         # the stream holds a row
    reader.close()
    assert len(first) == 3
    deadline = time.monotonic() + 10
    while (streams.rows or streams.cache.buffers) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not streams.rows and not streams.cache.buffers
    assert streams.rounds < 1000, streams.rounds
    assert len(list(streams.generate_ids([4, 5], 7, temperature=0.0))) == 7


def test_a_failing_round_reaches_its_readers():
    """A fault inside the batch thread is raised in every reader, not a hang; the batch then serves on."""
    m = model()
    streams = Streams(m)
    bad = streams.generate_ids([1, 2, 10_000], 5, temperature=0.0)       # an id past the vocabulary
    with pytest.raises(IndexError):
        list(bad)
    assert len(list(streams.generate_ids([1, 2], 4, temperature=0.0))) == 4
