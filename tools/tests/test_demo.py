"""demo_baselines' statistics on hand-made cases: AUC (with ties), the fitted
threshold, and the logistic probe separating separable data (torch)."""

from __future__ import annotations


def test_demo_baselines_statistics():
    import torch

    from distzo_tools.demo import demo_baselines as db

    labels = torch.tensor([0, 0, 1, 1])
    assert db.auc(torch.tensor([0.1, 0.2, 0.3, 0.4], dtype=torch.float64), labels) == 1.0
    assert db.auc(torch.tensor([0.4, 0.3, 0.2, 0.1], dtype=torch.float64), labels) == 0.0
    # one tie between a positive and a negative counts one half: (3 + 0.5) / 4
    assert db.auc(torch.tensor([0.1, 0.3, 0.3, 0.4], dtype=torch.float64), labels) == 0.875
    # the best cut separates {-2, -1, 3} (label 0) from {4, 5} (label 1): any cut in (3, 4)
    score = torch.tensor([-2.0, -1.0, 3.0, 4.0, 5.0], dtype=torch.float64)
    cut = db.best_threshold(score, torch.tensor([0, 0, 0, 1, 1]))
    assert 3.0 < cut < 4.0, cut
    assert db.accuracy((score > cut).long(), torch.tensor([0, 0, 0, 1, 1])) == 1.0
    # a probe on linearly separable 2-d points classifies them all
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(200, 2, generator=gen, dtype=torch.float64)
    y = (x[:, 0] - 0.5 * x[:, 1] > 0.2).long()
    probe = db.fit_logistic(x, y, 1e-4)
    assert db.accuracy((probe(x) > 0).long(), y) >= 0.98
