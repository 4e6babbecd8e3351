"""Online model of how long an engine takes to generate a chunk: ``seconds = fixed + per_char * chars``. Pure.

The worker keeps one per (engine, voice) across utterances; the planner asks it for estimates and feeds it each
measured generation. Fitted by recursive least squares with a prior (so the first estimates are sane) and a
forgetting factor (so it follows the engine as load from other sessions changes).
"""

from __future__ import annotations

import math


class CostModel:
    """Estimated generation seconds for a chunk of ``chars`` characters.

    ``fixed_s`` and ``per_char_s`` are the prior; ``prior_*_sd`` say how far off the prior may be (one standard
    deviation, in the same units) relative to a measurement noise of ``noise_sd`` seconds. A wide prior lets the
    first measurements take over at once.
    """

    def __init__(
        self,
        fixed_s: float = 0.3,
        per_char_s: float = 0.02,
        *,
        prior_fixed_sd: float = 0.5,
        prior_per_char_sd: float = 0.03,
        noise_sd: float = 0.05,
        forgetting: float = 0.95,
    ) -> None:
        values = (fixed_s, per_char_s, prior_fixed_sd, prior_per_char_sd, noise_sd)
        if not all(math.isfinite(v) and v >= 0 for v in values) or noise_sd == 0:
            raise ValueError("cost model parameters must be finite and non-negative (noise_sd positive)")
        if not 0 < forgetting <= 1:
            raise ValueError("forgetting must be in (0, 1]")
        self._theta = [fixed_s, per_char_s]
        # Covariance of the estimate in units of the noise variance.
        self._p = [[(prior_fixed_sd / noise_sd) ** 2, 0.0], [0.0, (prior_per_char_sd / noise_sd) ** 2]]
        self._p_ceiling = self._p[0][0] + self._p[1][1]  # forgetting must not wind the covariance up past the prior
        self._forgetting = forgetting
        self._noise_sd = noise_sd
        self.observations = 0

    @property
    def fixed_s(self) -> float:
        return self._theta[0]

    @property
    def per_char_s(self) -> float:
        return self._theta[1]

    def estimate(self, chars: int) -> float:
        """Expected seconds to generate ``chars`` characters (never negative)."""
        return max(0.0, self._theta[0] + self._theta[1] * chars)

    def upper(self, chars: int) -> float:
        """A cautious estimate: one standard deviation of prediction above ``estimate``.

        Wide while the fit rests on few or similar measurements (a chunk far larger than any measured), close to
        ``estimate`` plus the noise once it has seen a range of sizes. The planner budgets with this.
        """
        x = (1.0, float(chars))
        p = self._p
        spread = x[0] * (p[0][0] * x[0] + p[0][1] * x[1]) + x[1] * (p[1][0] * x[0] + p[1][1] * x[1])
        return self.estimate(chars) + self._noise_sd * math.sqrt(1.0 + max(0.0, spread))

    def observe(self, chars: int, seconds: float) -> None:
        """Fold in one measured generation. Non-finite or negative measurements are rejected."""
        if chars < 0 or not math.isfinite(seconds) or seconds < 0:
            raise ValueError(f"bad cost observation: {chars} chars in {seconds} s")
        x = (1.0, float(chars))
        p = self._p
        px = (p[0][0] * x[0] + p[0][1] * x[1], p[1][0] * x[0] + p[1][1] * x[1])
        lam = self._forgetting
        gain_den = lam + x[0] * px[0] + x[1] * px[1]
        k = (px[0] / gain_den, px[1] / gain_den)
        error = seconds - (self._theta[0] + self._theta[1] * chars)
        self._theta = [self._theta[0] + k[0] * error, self._theta[1] + k[1] * error]  # clamping here would bias the fit
        # P <- (P - k (P x)^T) / lambda; P stays symmetric because px is P x.
        p = [[(p[i][j] - k[i] * px[j]) / lam for j in range(2)] for i in range(2)]
        scale = min(1.0, self._p_ceiling / (p[0][0] + p[1][1]))
        self._p = [[v * scale for v in row] for row in p]
        self.observations += 1
