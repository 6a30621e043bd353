"""How far apart a positional encoding keeps the positions: two positions with the same encoding look the same to
the model. The Positions tab titles its bugs with it (toyviz.app.figures.positional); a lesson's `answer: confused
encoding` asks it."""
from __future__ import annotations

import math

import torch


def distinguishability(pe) -> float:
    """Smallest Euclidean distance between the encodings of two different positions: 0 means two
    positions look identical to the model."""
    x = torch.as_tensor(pe).detach().to("cpu", torch.float32).double()     # as the figures draw it: float32
    dist = torch.cdist(x, x)
    dist.fill_diagonal_(math.inf)
    return float(dist.min())
