"""bench/plot_bench.py draws every series of the CSV, and says what to do when it cannot."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "plot_bench.py"
HEADER = "device,width,kernel,lab,tile,median_ms,min_ms,max_ms,gflops,rel_error\n"
DEVICE = '"Test GPU (sm_90, 132 SMs)"'


def load_plot_bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("plot_bench", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def write_csv(path: Path, kernels: list[tuple[str, str, int]]) -> None:
    lines = [HEADER]
    for width in (1024, 4000, 4096):
        for kernel, lab, tile in kernels:
            lines.append(f"{DEVICE},{width},{kernel},{lab},{tile},1.0,0.9,1.1,{width + tile},0\n")
    path.write_text("".join(lines))


def test_plot_has_one_legend_entry_per_kernel_and_tile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    csv = tmp_path / "bench.csv"
    write_csv(
        csv,
        [
            ("naive16", "lab 02 naive", 16),
            ("tiled32", "lab 03 tiled", 32),
            ("boundary32", "lab 04 boundary", 32),
            ("cublas", "cuBLAS SGEMM", 0),
        ],
    )
    saved: list[Any] = []

    def save(figure: Any, path: str | Path, **kw: Any) -> None:
        saved.append(figure)
        Path(path).write_bytes(b"png")

    monkeypatch.setattr(plt.Figure, "savefig", save)
    assert load_plot_bench().main([str(csv), str(tmp_path / "bench.png")]) == 0

    axes = saved[0].axes[0]
    labels = [line.get_label() for line in axes.get_lines()]
    assert sorted(labels) == ["cuBLAS SGEMM", "lab 02 naive, 16", "lab 03 tiled, 32", "lab 04 boundary, 32"]
    styles = {line.get_label(): line for line in axes.get_lines()}
    # Lab 04 lies on top of lab 03: hollow markers keep both visible; tile 32 is dashed.
    assert styles["lab 04 boundary, 32"].get_markerfacecolor() == "none"
    assert styles["lab 03 tiled, 32"].get_linestyle() == "--"
    assert styles["lab 02 naive, 16"].get_linestyle() == "-"
    # 4000 sits between 1024 and 4096, evenly spaced, with every point of a series drawn.
    assert [tick.get_text() for tick in axes.get_xticklabels()] == ["1024", "4000", "4096"]
    assert list(styles["lab 02 naive, 16"].get_ydata()) == [1040.0, 4016.0, 4112.0]


def test_missing_csv_says_which_command_writes_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("matplotlib")
    missing = tmp_path / "none.csv"
    assert load_plot_bench().main([str(missing), str(tmp_path / "out.png")]) == 2
    assert f"matmul_bench --csv {missing}" in capsys.readouterr().err


def test_empty_csv_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("matplotlib")
    empty = tmp_path / "bench.csv"
    empty.write_text(HEADER)
    assert load_plot_bench().main([str(empty), str(tmp_path / "out.png")]) == 2
    assert "holds no measurements" in capsys.readouterr().err
