"""Pairs -> length-bucketed, dynamically padded batches (a LightningDataModule)."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator, Sequence
from typing import cast

import lightning as L
import torch
from torch.utils.data import DataLoader, Dataset, Sampler

from darling.classifier.encoding import PairEncoder
from darling.core.schemas import LabelledPair


class EncodedPairs(Dataset):
    """Encoded input ids and labels; both orders of each pair when ``both_orders`` (the paper's recipe)."""

    def __init__(self, encoder: PairEncoder, pairs: Sequence[LabelledPair], both_orders: bool):
        texts = [(p.generation_0, p.generation_1) for p in pairs]
        labels = [p.similar for p in pairs]
        if both_orders:
            texts += [(b, a) for a, b in texts]
            labels += labels
        self.input_ids = encoder.encode_pairs(texts)
        self.labels = labels

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, i: int) -> tuple[list[int], int]:
        return self.input_ids[i], self.labels[i]

    @property
    def lengths(self) -> list[int]:
        return [len(ids) for ids in self.input_ids]


class LengthBucketBatchSampler(Sampler[list[int]]):
    """Batches of similar length, so dynamic padding wastes little compute.

    Shuffle, cut into pools of ``pool_batches`` batches, sort each pool by length, batch it, shuffle
    the batches. Each epoch reshuffles from ``seed + epoch`` (Lightning calls ``set_epoch``). Under
    distributed training every rank builds the same batch list and keeps every ``world_size``-th batch,
    so Lightning's sampler replacement is not needed (``use_distributed_sampler=False``).
    """

    def __init__(
        self,
        lengths: Sequence[int],
        batch_size: int,
        shuffle: bool = True,
        seed: int = 0,
        pool_batches: int = 50,
        rank: int = 0,
        world_size: int = 1,
    ):
        self.lengths = list(lengths)
        self.batch_size = batch_size
        self.shuffle = shuffle
        self.seed = seed
        self.pool = pool_batches * batch_size
        self.rank, self.world_size = rank, world_size
        self.epoch = 0
        self._skip = 0  # batches of the current epoch already trained before a resume

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    @property
    def sampler(self) -> LengthBucketBatchSampler:
        # Lightning calls set_epoch on `dataloader.batch_sampler.sampler`, not on the batch sampler.
        return self

    def resume(self, epoch: int, batches_done: int) -> None:
        """Continue ``epoch`` after its first ``batches_done`` batches (the order is seeded, so the
        remaining batches are exactly those an uninterrupted run would have seen)."""
        self.epoch, self._skip = epoch, batches_done

    def _all_batches(self) -> list[list[int]]:
        order = list(range(len(self.lengths)))
        rng = random.Random(self.seed + self.epoch)
        if self.shuffle:
            rng.shuffle(order)
        else:  # evaluation: one global sort gives the least padding
            order.sort(key=self.lengths.__getitem__)
        batches = []
        for start in range(0, len(order), self.pool):
            pool = sorted(order[start : start + self.pool], key=self.lengths.__getitem__)
            batches += [pool[i : i + self.batch_size] for i in range(0, len(pool), self.batch_size)]
        if self.shuffle:
            rng.shuffle(batches)
        return batches

    def __iter__(self) -> Iterator[list[int]]:
        batches = self._all_batches()
        per_rank = len(batches) // self.world_size if self.world_size > 1 else len(batches)
        skip, self._skip = self._skip, 0
        yield from batches[self.rank :: self.world_size][skip:per_rank]

    def __len__(self) -> int:
        n = -(-len(self.lengths) // self.batch_size)
        return n // self.world_size if self.world_size > 1 else n


class EvalBatchSampler(LengthBucketBatchSampler):
    """Validation: length-sorted batches dealt out to the ranks in turn, the same number to each. A rank short of
    one gets a copy of the first batch with negated indices (``-1 - i``): collected for nothing, it only keeps the
    ranks in step, since an FSDP forward pass is collective and a rank that stopped early would hang the others."""

    def __init__(self, lengths: Sequence[int], batch_size: int, rank: int = 0, world_size: int = 1):
        super().__init__(lengths, batch_size, shuffle=False, rank=rank, world_size=world_size)

    def __iter__(self) -> Iterator[list[int]]:
        batches = self._all_batches()
        mine = batches[self.rank :: self.world_size]
        padding = len(self) - len(mine)
        yield from mine + [[-1 - i for i in batches[0]]] * padding

    def __len__(self) -> int:
        n = -(-len(self.lengths) // self.batch_size)
        return -(-n // self.world_size)


class Flagged(Dataset):
    """``(item, keep)``: index ``-1 - i`` is item ``i`` again with ``keep=False`` (EvalBatchSampler's padding)."""

    def __init__(self, dataset: Dataset):
        self.dataset = dataset

    def __len__(self) -> int:
        return len(self.dataset)  # type: ignore[arg-type]

    def __getitem__(self, i: int) -> tuple[object, bool]:
        return (self.dataset[-1 - i], False) if i < 0 else (self.dataset[i], True)


class RandomBatchSampler(LengthBucketBatchSampler):
    """Plain shuffled batches (no bucketing): the baseline the padding benchmark compares against."""

    def _all_batches(self) -> list[list[int]]:
        order = list(range(len(self.lengths)))
        if self.shuffle:
            random.Random(self.seed + self.epoch).shuffle(order)
        return [order[i : i + self.batch_size] for i in range(0, len(order), self.batch_size)]


class ResumableDataLoader(DataLoader):
    """A DataLoader Lightning can checkpoint mid-epoch: it stores ``state_dict()`` in the checkpoint
    and calls ``load_state_dict()`` on resume, so a killed run neither repeats nor skips batches."""

    def __init__(self, *args, batches_done: Callable[[], int], **kwargs):
        super().__init__(*args, **kwargs)
        self._batches_done = batches_done

    # BucketedDataModule makes every ResumableDataLoader with a LengthBucketBatchSampler as its batch_sampler.
    def state_dict(self) -> dict[str, int]:
        return {"epoch": cast(LengthBucketBatchSampler, self.batch_sampler).epoch, "batches_done": self._batches_done()}

    def load_state_dict(self, state: dict[str, int]) -> None:
        cast(LengthBucketBatchSampler, self.batch_sampler).resume(state["epoch"], state["batches_done"])


class BucketedDataModule(L.LightningDataModule):
    """Batches for either kind: length-bucketed (or random) training batches, sharded across ranks by the
    sampler itself, resumable mid-epoch; validation batches in length order, dealt out to the ranks (each scores
    its share, the module gathers the probabilities). Subclasses build
    ``train_set`` / ``val_set`` (each with ``lengths``) in ``setup`` and turn items into tensors in ``collate``."""

    def __init__(
        self,
        train_pairs,
        val_pairs,
        batch_size: int,
        bucket_by_length: bool,
        shuffle: bool,
        seed: int,
        num_workers: int,
    ):
        super().__init__()
        self.train_pairs, self.val_pairs = list(train_pairs), list(val_pairs)
        self.batch_size = batch_size
        self.bucket_by_length = bucket_by_length
        self.shuffle = shuffle
        self.seed = seed
        self.num_workers = num_workers
        self.train_set: Dataset | None = None
        self.val_set: Dataset | None = None

    def collate(self, items: list) -> dict[str, torch.Tensor]:
        raise NotImplementedError

    def _rank_world(self) -> tuple[int, int]:
        trainer = self.trainer
        return (trainer.global_rank, trainer.world_size) if trainer is not None else (0, 1)

    def _eval_collate(self, items: list[tuple[object, bool]]) -> dict[str, torch.Tensor]:
        batch = self.collate([item for item, _ in items])
        batch["keep"] = torch.tensor([keep for _, keep in items], dtype=torch.bool)
        return batch

    def _loader(self, dataset, train: bool) -> DataLoader:
        rank, world = self._rank_world()
        if not train:
            eval_sampler = EvalBatchSampler(dataset.lengths, self.batch_size, rank=rank, world_size=world)
            return DataLoader(
                Flagged(dataset),
                batch_sampler=eval_sampler,
                collate_fn=self._eval_collate,
                num_workers=self.num_workers,
            )
        cls = LengthBucketBatchSampler if self.bucket_by_length else RandomBatchSampler
        sampler = cls(
            dataset.lengths,
            self.batch_size,
            shuffle=self.shuffle,
            seed=self.seed,
            rank=rank,
            world_size=world,
        )
        return ResumableDataLoader(
            dataset,
            batch_sampler=sampler,
            collate_fn=self.collate,
            num_workers=self.num_workers,
            # Lightning's count of this epoch's batches taken for training (restored from checkpoints).
            # Only asked while fitting (checkpointing), when the trainer is attached.
            batches_done=lambda: cast(L.Trainer, self.trainer).fit_loop.epoch_loop.batch_progress.current.ready,
        )

    def train_dataloader(self) -> DataLoader:
        return self._loader(self.train_set, train=True)

    def val_dataloader(self) -> DataLoader:
        return self._loader(self.val_set, train=False)

    def class_counts(self) -> tuple[int, int]:
        labels = [p.similar for p in self.train_pairs]
        return labels.count(0), labels.count(1)


class PairDataModule(BucketedDataModule):
    """The cross-encoder kind: one encoded pair per example (both orders of each training pair by default)."""

    def __init__(
        self,
        encoder: PairEncoder,
        train_pairs: Sequence[LabelledPair],
        val_pairs: Sequence[LabelledPair],
        batch_size: int,
        both_orders: bool = True,
        bucket_by_length: bool = True,
        pad_to_max_length: bool = False,
        shuffle: bool = True,
        seed: int = 0,
        num_workers: int = 0,
    ):
        super().__init__(train_pairs, val_pairs, batch_size, bucket_by_length, shuffle, seed, num_workers)
        self.encoder = encoder
        self.both_orders = both_orders
        self.pad_to = encoder.max_length if pad_to_max_length else None

    def setup(self, stage: str | None = None) -> None:
        if self.train_set is None:
            self.train_set = EncodedPairs(self.encoder, self.train_pairs, self.both_orders)
            self.val_set = EncodedPairs(self.encoder, self.val_pairs, both_orders=False)

    def collate(self, items: list[tuple[list[int], int]]) -> dict[str, torch.Tensor]:
        batch = self.encoder.pad([ids for ids, _ in items], pad_to=self.pad_to)
        batch["labels"] = torch.tensor([label for _, label in items], dtype=torch.long)
        return batch
