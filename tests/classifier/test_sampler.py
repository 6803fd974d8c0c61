import random

from darling.classifier.lightning_data import LengthBucketBatchSampler, RandomBatchSampler


def _lengths(n=500, seed=0):
    rng = random.Random(seed)
    return [rng.randint(3, 300) for _ in range(n)]


def _padding_fraction(batches, lengths):
    padded = sum(max(lengths[i] for i in b) * len(b) for b in batches)
    return 1 - sum(lengths) / padded


def test_every_index_once_per_epoch_and_reshuffled():
    lengths = _lengths()
    sampler = LengthBucketBatchSampler(lengths, batch_size=16, seed=1)
    first = list(sampler)
    assert sorted(i for b in first for i in b) == list(range(500))
    assert len(first) == len(sampler)
    sampler.set_epoch(1)
    assert list(sampler) != first
    sampler.set_epoch(0)
    assert list(sampler) == first  # deterministic: resuming an epoch replays it


def test_bucketing_pads_far_less_than_random_batches():
    lengths = _lengths()
    bucketed = list(LengthBucketBatchSampler(lengths, 16, seed=0))
    plain = list(RandomBatchSampler(lengths, 16, seed=0))
    assert _padding_fraction(bucketed, lengths) < 0.1 < 0.3 < _padding_fraction(plain, lengths)


def test_ranks_get_disjoint_equal_shares():
    lengths = _lengths(203)
    shards = [list(LengthBucketBatchSampler(lengths, 8, seed=0, rank=r, world_size=3)) for r in range(3)]
    seen = [i for shard in shards for b in shard for i in b]
    assert len(seen) == len(set(seen))
    assert len({len(s) for s in shards}) == 1
    assert len(shards[0]) == len(LengthBucketBatchSampler(lengths, 8, rank=0, world_size=3))
