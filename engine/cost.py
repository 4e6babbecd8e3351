"""Online model of how long an engine takes to generate a chunk: ``seconds = fixed + per_char * chars``, and of how
much audio a chunk makes: ``audio = audio_per_char * chars``. Pure.

The worker keeps one per (engine, voice) across utterances; the planner asks it for estimates and feeds it each
measured generation. The cost is fitted by recursive least squares with a prior (so the first estimates are sane) and
a forgetting factor (so it follows the engine as load from other sessions changes). The speaking rate is a weighted
ratio with the same forgetting; its cautious (lower) bound widens with the spread it has seen and narrows with evidence.
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
        surprise_sd: float = 3.0,
        audio_per_char_s: float = 0.065,
        prior_audio_sd: float = 0.2,
        prior_audio_chars: float = 30.0,
        min_audio_sd: float = 0.05,
    ) -> None:
        values = (fixed_s, per_char_s, prior_fixed_sd, prior_per_char_sd, noise_sd, prior_audio_sd, min_audio_sd)
        if not (math.isfinite(audio_per_char_s) and audio_per_char_s > 0) or not 0 < prior_audio_chars < math.inf:
            raise ValueError("audio_per_char_s and prior_audio_chars must be finite and positive")
        if not prior_audio_sd < 1 or not min_audio_sd < 1:
            raise ValueError("prior_audio_sd and min_audio_sd are shares of the rate: below 1")
        if not all(math.isfinite(v) and v >= 0 for v in values) or noise_sd == 0:
            raise ValueError("cost model parameters must be finite and non-negative (noise_sd positive)")
        if not 0 < forgetting <= 1:
            raise ValueError("forgetting must be in (0, 1]")
        if not 0 < surprise_sd <= math.inf:
            raise ValueError("surprise_sd must be positive")
        self._theta = [fixed_s, per_char_s]
        # Covariance of the estimate in units of the noise variance.
        self._p = [[(prior_fixed_sd / noise_sd) ** 2, 0.0], [0.0, (prior_per_char_sd / noise_sd) ** 2]]
        self._p_prior = [row[:] for row in self._p]
        self._p_ceiling = self._p[0][0] + self._p[1][1]  # forgetting must not wind the covariance up past the prior
        self._surprise = surprise_sd  # a measurement this many predicted deviations off means the engine changed
        self._forgetting = forgetting
        self._noise_sd = noise_sd
        self.observations = 0
        # Speaking rate: the prior counts as prior_audio_chars characters at audio_per_char_s; the data's weights decay.
        self._audio_prior = (audio_per_char_s, prior_audio_chars, prior_audio_sd, min_audio_sd)
        self._audio_s = 0.0  # forgetting-weighted sums over observed chunks: audio seconds, characters,
        self._audio_chars = 0.0  # ...and characters times the squared relative deviation of each chunk's rate
        self._audio_dev = 0.0
        self.audio_observations = 0

    @property
    def fixed_s(self) -> float:
        return self._theta[0]

    @property
    def per_char_s(self) -> float:
        return self._theta[1]

    @property
    def audio_per_char_s(self) -> float:
        """Expected seconds of audio per character of text (the speaking rate, learnt)."""
        rate, weight = self._audio_prior[:2]
        return (rate * weight + self._audio_s) / (weight + self._audio_chars)

    def audio_lower(self, chars: int, rate: float | None = None) -> float:
        """A cautious (low) estimate of the seconds of audio ``chars`` characters make: the planner counts on this.

        One relative standard deviation below the rate: the prior's spread while evidence is thin, the spread of the
        rates seen (between chunks, and so between utterances) once it is not, never less than ``min_audio_sd``.
        """
        _, weight, prior_sd, min_sd = self._audio_prior
        total = weight + self._audio_chars
        spread = math.sqrt((weight * prior_sd**2 + self._audio_dev) / total)  # shrinks as consistent data arrives
        mean = self.audio_per_char_s if rate is None else rate
        return max(0, chars) * mean * (1.0 - max(min_sd, min(spread, 0.9)))

    def observe_audio(self, chars: int, seconds: float) -> None:
        """Fold in how much audio a chunk of ``chars`` characters made. Empty or non-finite measurements are ignored
        or rejected: they say nothing about the rate."""
        if chars < 0 or not math.isfinite(seconds) or seconds < 0:
            raise ValueError(f"bad audio observation: {chars} chars made {seconds} s")
        if chars == 0:
            return
        lam = self._forgetting
        deviation = (seconds / chars) / self.audio_per_char_s - 1.0
        self._audio_s = lam * self._audio_s + seconds
        self._audio_chars = lam * self._audio_chars + chars
        self._audio_dev = lam * self._audio_dev + chars * deviation**2
        self.audio_observations += 1

    def estimate(self, chars: int) -> float:
        """Expected seconds to generate ``chars`` characters (never negative)."""
        return max(0.0, self._theta[0] + self._theta[1] * chars)

    def upper(self, chars: int) -> float:
        """A cautious estimate: one standard deviation of prediction above ``estimate``.

        Wide while the fit rests on few or similar measurements (a chunk far larger than any measured), close to
        ``estimate`` plus the noise once it has seen a range of sizes. The planner budgets with this.
        """
        return self.estimate(chars) + self._prediction_sd(chars)

    def _prediction_sd(self, chars: int) -> float:
        x = (1.0, float(chars))
        p = self._p
        spread = x[0] * (p[0][0] * x[0] + p[0][1] * x[1]) + x[1] * (p[1][0] * x[0] + p[1][1] * x[1])
        return self._noise_sd * math.sqrt(1.0 + max(0.0, spread))

    def observe(self, chars: int, seconds: float) -> None:
        """Fold in one measured generation. Non-finite or negative measurements are rejected."""
        if chars < 0 or not math.isfinite(seconds) or seconds < 0:
            raise ValueError(f"bad cost observation: {chars} chars in {seconds} s")
        x = (1.0, float(chars))
        error = seconds - (self._theta[0] + self._theta[1] * chars)
        if abs(error) > self._surprise * self._prediction_sd(chars):
            # The engine changed (load from other sessions, a voice that speaks slower): give up the confidence,
            # not the fit, so that this measurement and the next few move the estimate most of the way at once.
            self._p = [[self._p[0][0] + self._p_prior[0][0], self._p[0][1]],
                       [self._p[1][0], self._p[1][1] + self._p_prior[1][1]]]
        p = self._p
        px = (p[0][0] * x[0] + p[0][1] * x[1], p[1][0] * x[0] + p[1][1] * x[1])
        lam = self._forgetting
        gain_den = lam + x[0] * px[0] + x[1] * px[1]
        k = (px[0] / gain_den, px[1] / gain_den)
        self._theta = [self._theta[0] + k[0] * error, self._theta[1] + k[1] * error]  # clamping here would bias the fit
        # P <- (P - k (P x)^T) / lambda; P stays symmetric because px is P x.
        p = [[(p[i][j] - k[i] * px[j]) / lam for j in range(2)] for i in range(2)]
        scale = min(1.0, self._p_ceiling / (p[0][0] + p[1][1]))
        self._p = [[v * scale for v in row] for row in p]
        self.observations += 1
