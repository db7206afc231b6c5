"""FSDP for base weights that do not fit one device: each decoder layer's frozen base weights
sharded across the ranks (torch's FSDP2, `fully_shard`), the LoRA adapter whole on every rank.

    parallel = DataParallel.from_accelerate(fsdp=True)        # under `accelerate launch`
    trainer = GRPOTrainer(model, settings, parallel=parallel)  # shards the policy's layers

What is sharded: the parameters of every decoder layer (attention and MLP weights, norms), each
rank keeping 1/world of each; a layer's forward (and its backward, which needs the weights
again) all-gathers the whole layer and frees it after. The embeddings, the final norm and the
output head stay whole on every rank (`token_logprobs` calls the decoder and the head apart, and
small models tie the head to the embeddings): for a 4B model about a tenth of the weights.

What is not: the adapter. Its parameters are FSDP's `ignored_params`, plain tensors on every
rank, so the data-parallel arithmetic of learner/data_parallel.py applies unchanged (each rank's
micro-batches, the gradients summed by one all-reduce, the same clipped AdamW step everywhere),
and checkpoints and the saved adapter are the whole adapter on rank 0 without a gather. For LoRA
the adapter and its optimizer state are a few MB; the base weights are what does not fit.

Invariant the caller keeps: every rank runs the same forwards and backwards in the same order,
since each layer's forward and backward is a collective. So every rank runs the same number of
micro-batches (`even_micro_batches`: a rank short of micro-batches runs an idle one, weighing
zero), and rows are computed whole (a shared prefix would call the decoder twice on one rank's
micro-batch and once on another's).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import torch

from learner.micro_batch import MicroBatch


def shard_base_weights(module: torch.nn.Module, device: torch.device, world_size: int) -> None:
    """Shard `module`'s decoder layers across `world_size` ranks on `device`'s type (FSDP2),
    in place; parameters that require gradients (the adapter) and those outside the layers stay
    whole. The decoder (the model's inner transformer) is FSDP's root, so one forward of it
    gathers the layers in turn."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard
    from transformers.modeling_layers import GradientCheckpointingLayer

    from learner.logprobs import split_model

    layers = [m for m in module.modules() if isinstance(m, GradientCheckpointingLayer)]
    if not layers:
        raise ValueError(f"{type(module).__name__} has no decoder layers to shard")
    decoder, _ = split_model(module)
    mesh = init_device_mesh(device.type, (world_size,))
    in_layers = {id(p) for layer in layers for p in layer.parameters()}
    whole = {id(p) for p in module.parameters() if p.requires_grad or id(p) not in in_layers}
    if in_layers <= whole:
        raise ValueError(
            "FSDP shards the frozen base weights under a LoRA adapter; with full fine-tuning every "
            "weight trains and none would be sharded: train a LoRA adapter (TrainSettings.lora)"
        )
    for part in [*layers, decoder]:  # the layers first: the decoder then holds none of theirs
        fully_shard(part, mesh=mesh, ignored_params={p for p in part.parameters() if id(p) in whole})


def base_numel(module: torch.nn.Module) -> tuple[int, int]:
    """(elements of the frozen base weights held by this rank, elements of the whole base)."""
    from torch.distributed.tensor import DTensor

    here = total = 0
    for parameter in module.parameters():
        if parameter.requires_grad:
            continue
        total += parameter.numel()
        here += parameter.to_local().numel() if isinstance(parameter, DTensor) else parameter.numel()
    return here, total


def even_micro_batches(mine: Sequence[MicroBatch], most: int, filler: MicroBatch) -> list[MicroBatch]:
    """This rank's micro-batches, rows computed whole, padded to `most` (the largest count over
    the ranks) with copies of `filler` that weigh nothing: no trained token, so no gradient and
    no metric, but the same forward and backward collectives as the other ranks'."""
    whole = [dataclasses.replace(micro, shared=0) for micro in mine]
    idle = dataclasses.replace(
        filler,
        mask=torch.zeros_like(filler.mask),
        coefficients=torch.zeros_like(filler.coefficients),
        shared=0,
    )
    return whole + [idle] * (most - len(whole))
