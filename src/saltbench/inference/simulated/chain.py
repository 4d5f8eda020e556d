"""The planted process itself: which atoms are correct and how confident each is (docs/simulation.md §2).

:func:`atom_chain` draws atom correctness left to right with the logit ``η_k`` of
:mod:`~saltbench.inference.simulated.params`, for many answers of one length at once (one numpy step per
position); :func:`atom_confidence` draws the latent scores and the chosen-token probabilities. Both the
simulated backend and the planted-truth computations use them, so what a run recovers is compared with the
process that produced its data.
"""

from __future__ import annotations

import numba  # type: ignore[import-untyped]
import numpy as np

from saltbench.inference.simulated.params import P_FLOOR, SimulationParams


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def atom_chain(
    params: SimulationParams,
    task: str,
    style: str,
    n_atoms: int,
    uniforms: np.ndarray,
    prefix_wrong: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Correctness of atoms ``k0..n`` of ``R`` answers of ``n_atoms`` atoms, and ``P(correct_k)`` of each.

    ``uniforms`` [R, n − k0 + 1] in [0, 1) decide the atoms (atom ``k`` is correct when its uniform is below
    ``σ(η_k)``); ``prefix_wrong`` [R, k0 − 1] says which atoms before ``k0`` are wrong (an intervention's
    forced prefix; none: ``k0 = 1``). Returns ``(correct, p_correct)``, both [R, n − k0 + 1].
    """
    uniforms = np.atleast_2d(np.asarray(uniforms, dtype=np.float64))
    rows = uniforms.shape[0]
    prefix = np.zeros((rows, 0), bool) if prefix_wrong is None else np.atleast_2d(prefix_wrong).astype(bool)
    k0 = prefix.shape[1] + 1
    if uniforms.shape[1] != n_atoms - k0 + 1:
        raise ValueError(f"{uniforms.shape[1]} uniforms per row for atoms {k0}..{n_atoms}")
    correct = np.empty(uniforms.shape, bool)
    p_correct = np.empty(uniforms.shape)
    _chain(
        uniforms,
        prefix,
        params.base_logit(task, style),
        params.position_effect,
        params.propagation_fraction,
        params.propagation_local,
        n_atoms,
        correct,
        p_correct,
    )
    return correct, p_correct


@numba.njit(cache=True, nogil=True)
def _chain(
    uniforms: np.ndarray,
    prefix: np.ndarray,
    base: float,
    position: float,
    fraction: float,
    local: float,
    n_atoms: int,
    correct: np.ndarray,
    p_correct: np.ndarray,
) -> None:
    """The loop of :func:`atom_chain`, compiled: each atom depends on the ones before it."""
    k0 = prefix.shape[1] + 1
    for r in range(uniforms.shape[0]):
        errors = 0.0
        for j in range(prefix.shape[1]):
            if prefix[r, j]:
                errors += 1.0
        previous = 1.0 if k0 > 1 and prefix[r, k0 - 2] else 0.0
        for j in range(uniforms.shape[1]):
            k = k0 + j
            eta = base + position * k / n_atoms + local * previous
            if k > 1:
                eta += fraction * errors / (k - 1)
            p = 1.0 / (1.0 + np.exp(-eta))
            p_correct[r, j] = p
            correct[r, j] = uniforms[r, j] < p
            previous = 0.0 if correct[r, j] else 1.0
            errors += previous


def planted_logit(
    params: SimulationParams,
    task: str,
    style: str,
    position_fraction: np.ndarray,
    wrong_fraction: np.ndarray,
    previous_wrong: np.ndarray,
) -> np.ndarray:
    """``η_k`` (params module docstring) from its terms as arrays: ``k/n``, ``e_k/(k−1)`` and ``w_{k−1}``;
    the logit :func:`atom_chain` draws each atom with, given its prefix."""
    return (
        params.base_logit(task, style)
        + params.position_effect * np.asarray(position_fraction, np.float64)
        + params.propagation_fraction * np.asarray(wrong_fraction, np.float64)
        + params.propagation_local * np.asarray(previous_wrong, np.float64)
    )


def atom_confidence(
    params: SimulationParams, style: str, correct: np.ndarray, normals: np.ndarray
) -> np.ndarray:
    """The chosen-token probability of each atom: ``P_FLOOR + (1 − P_FLOOR) σ(shift + slope · s)`` with
    ``s = normals + d · correct`` (params module docstring)."""
    latent = np.asarray(normals, dtype=np.float64) + params.separation_for(style) * correct
    return token_probability(params, latent)


def token_probability(params: SimulationParams, latent: np.ndarray) -> np.ndarray:
    """``P_FLOOR + (1 − P_FLOOR) σ(calibration_shift + calibration_slope · s)`` of latent scores ``s``."""
    return P_FLOOR + (1 - P_FLOOR) * _sigmoid(
        params.calibration_shift + params.calibration_slope * np.asarray(latent, np.float64)
    )


def atom_lines(text: str, starts: np.ndarray) -> np.ndarray:
    """The line each atom starting at ``starts`` lies on, numbered 0, 1, … over the lines that hold atoms
    (from how many line breaks precede it; atoms never hold one, docs/evaluation.md §3.2).

    >>> atom_lines("1 2\\n\\n3", np.array([0, 2, 5])).tolist()
    [0, 0, 1]
    """
    breaks = np.array([i for i, c in enumerate(text) if c in "\n\r"], np.int64)
    raw = np.searchsorted(breaks, np.asarray(starts, np.int64), side="right")
    return np.unique(raw, return_inverse=True)[1].reshape(-1)


def line_confidence(
    params: SimulationParams, style: str, correct: np.ndarray, lines: np.ndarray, normals: np.ndarray
) -> np.ndarray:
    """With a line latent (params module docstring): the probability of each atom's line, one latent per
    line (``normals`` [lines]) separated by ``d_L`` when every atom of the line is ``correct``."""
    d_line = params.line_separation_for(style)
    if d_line is None:
        raise ValueError("line_confidence needs line_separation")
    line_correct = np.ones(int(lines.max()) + 1 if lines.size else 0, bool)
    np.logical_and.at(line_correct, lines, np.asarray(correct, bool))
    latent = np.asarray(normals, np.float64)[: line_correct.size] + d_line * line_correct
    return token_probability(params, latent)[lines]


__all__ = [
    "atom_chain",
    "atom_confidence",
    "atom_lines",
    "line_confidence",
    "planted_logit",
    "token_probability",
]
