"""Training on several processes: torchrun's rank and world, and the few collectives the loop needs.

Under torchrun each rank draws its own slice of every global batch, so the global batch and the
learning-rate schedule, and hence the loss curve, do not depend on the number of processes.
Only rank 0 logs, evaluates and writes checkpoints.
"""
from __future__ import annotations

import os
from contextlib import contextmanager

import torch


class Distributed:
    """rank/world from torchrun's environment; a single process when it is absent."""

    def __init__(self, device: str):
        self.world = int(os.environ.get("WORLD_SIZE", "1"))
        self.rank = int(os.environ.get("RANK", "0"))
        if self.world > 1:
            import torch.distributed as dist
            local = int(os.environ.get("LOCAL_RANK", "0"))
            if device.startswith("cuda"):
                torch.cuda.set_device(local)
            dist.init_process_group("nccl" if device.startswith("cuda") else "gloo")
        self.main = self.rank == 0
        self.device = device
        # how this run was started, for the model card's command
        self.launcher = f"torchrun --standalone --nproc_per_node {self.world}" if self.world > 1 else "python"

    def wrap(self, model):
        if self.world == 1:
            return model
        from torch.nn.parallel import DistributedDataParallel
        return DistributedDataParallel(model)

    def shard(self, batch: torch.Tensor) -> torch.Tensor:
        """This rank's rows of a global batch (the same global batch on every rank)."""
        return batch.tensor_split(self.world)[self.rank]

    def mean(self, value: torch.Tensor) -> torch.Tensor:
        """A scalar averaged over the ranks: with equal shards, the whole global batch's mean loss,
        so the logged curve is the one a single process would log (rank 0's half alone is noisier)."""
        if self.world == 1:
            return value.detach()
        import torch.distributed as dist
        total = value.detach().clone()
        dist.all_reduce(total)          # SUM: gloo has no AVG
        return total / self.world

    def any(self, *flags: bool) -> tuple[bool, ...]:
        """Each flag, true on every rank where it is true on any rank (a signal or a clock one rank saw)."""
        if self.world == 1:
            return tuple(bool(f) for f in flags)
        import torch.distributed as dist
        shared = torch.tensor([int(bool(f)) for f in flags], device=self.device)
        dist.all_reduce(shared, op=dist.ReduceOp.MAX)
        return tuple(bool(f) for f in shared.tolist())

    def agree(self, value: int) -> int:
        """Rank 0's value on every rank, for decisions each rank could make differently (its own clock)."""
        if self.world == 1:
            return value
        import torch.distributed as dist
        shared = torch.tensor([value], device=self.device)
        dist.broadcast(shared, src=0)
        return int(shared.item())

    @contextmanager
    def rank0_first(self):
        """Rank 0 runs the block first (filling shared caches), then the others (reading them), so no
        two ranks write one cache file at once and none reads a half-written one."""
        if self.world > 1 and not self.main:
            torch.distributed.barrier()
        yield
        if self.world > 1 and self.main:
            torch.distributed.barrier()

    def take_all_cores(self):
        """Called by rank 0 once training is over and the other ranks are done: evaluation, which it runs
        alone, may use every CPU core instead of its share of them."""
        if self.world > 1 and not self.device.startswith("cuda"):
            torch.set_num_threads(os.cpu_count() or 1)

    def close(self):
        if self.world > 1:
            import torch.distributed as dist
            dist.destroy_process_group()
