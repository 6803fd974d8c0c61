"""core/weights.py: a safetensors file's tensors as float32 numpy arrays without torch, as the pipeline's process reads
a policy before and after RL (pipeline/rl_steps.py: max_weight_change)."""

import subprocess
import sys

import numpy as np
import torch
from safetensors.torch import save_file

from darling.core.weights import SafetensorsArrays
from darling.pipeline.rl_steps import max_weight_change

DTYPES = (torch.bfloat16, torch.float16, torch.float32, torch.float64, torch.int64, torch.uint8, torch.bool)


def tensors(seed: int) -> dict[str, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    values = {str(dtype): (torch.randn(3, 5, generator=generator) * 7).to(dtype) for dtype in DTYPES}
    return {**values, "empty": torch.zeros(0, 4), "scalar": torch.tensor(2.5, dtype=torch.bfloat16)}


def test_every_dtype_reads_as_torch_widens_it(tmp_path):
    saved = tensors(0)
    save_file(saved, tmp_path / "model.safetensors", metadata={"format": "pt"})
    arrays = SafetensorsArrays(tmp_path / "model.safetensors")
    assert sorted(arrays.keys()) == sorted(saved)
    for key, tensor in saved.items():
        assert arrays.shape(key) == tuple(tensor.shape)
        read = arrays[key]
        assert read.dtype == np.float32 and read.shape == tuple(tensor.shape), key
        np.testing.assert_array_equal(read, tensor.float().numpy(), err_msg=key)  # bit for bit, bfloat16 too


def test_the_largest_weight_change_is_torchs_and_loads_no_torch(tmp_path):
    """The figure as the torch code it replaced computed it (x.float() - y.float(), abs, max), in a process that
    never imports torch."""
    before, after = tmp_path / "before", tmp_path / "after"
    before.mkdir(), after.mkdir()
    a, b = tensors(1), tensors(2)
    b["only-after"] = torch.ones(2)  # a tensor one side lacks is skipped
    b[str(torch.float32)] = torch.ones(4)  # so is one whose shape changed
    save_file(a, before / "model.safetensors")
    save_file(b, after / "model.safetensors")
    expected = max(
        float((b[k].float() - a[k].float()).abs().max())
        for k in a
        if k in b and a[k].shape == b[k].shape and a[k].numel()
    )
    assert max_weight_change(before, after) == expected  # float32 both ways: equal, not close
    code = (
        "import sys; from darling.pipeline.rl_steps import max_weight_change; "
        f"print(max_weight_change({str(before)!r}, {str(after)!r}), 'torch' in sys.modules)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.split() == [repr(expected), "False"]
    assert max_weight_change(before, tmp_path / "missing") is None
