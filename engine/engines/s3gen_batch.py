"""S3Gen over several chunks in one call: each row's audio equals its solo ``S3Gen.inference`` (float tolerance).

Upstream's ``S3Gen.inference`` handles one chunk; at the Turbo sizes a call dispatches thousands of small operations
whatever its length, so on a GPU each chunk costs its launch time. Here rows of any voices and lengths are padded to
the longest and go together through upstream's own modules, in upstream's order: the flow encoder, the 2 meanflow
steps of the estimator and the HiFT vocoder, then each row is cut back to its length. (Eager calls gain nothing from
rounding lengths up to buckets; that belongs with capturing the call as a CUDA graph per bucket, not done yet.)

Why each row stays its solo run:
- Flow: a row is ``[its voice's prompt tokens][its tokens]`` then padding, with its own lengths; the encoder and the
  estimator take padding masks (attention and every block are masked; the estimator's convolutions are causal). The one
  look-ahead convolution (``PreLookaheadLayer``) would see padding where the solo run sees zeros, so its input is
  zeroed there. Conditions and the prompt-part cut are per row (voices' prompts differ in length).
- HiFT is convolutions without masks, so every convolution's input is zeroed past the row's length (the zeros its
  solo run pads with); its STFT and inverse STFT (reflect padding, window normalisation at the edges) run per row.
- Noise: each row draws from its own generator exactly what the solo run draws from torch's global one, same shapes,
  same order (the flow's noise, the estimator's initial noise, HiFT's sine phases and noise). So seeding a row's
  generator with ``s`` reproduces ``torch.manual_seed(s); s3gen.inference(...)`` on the same device.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from chatterbox.models.s3gen import S3Gen
from chatterbox.models.s3gen.hifigan import HiFTGenerator
from chatterbox.models.s3gen.utils.mask import make_pad_mask

N_TIMESTEPS = 2  # Turbo's meanflow steps (``n_cfm_timesteps=2``)
MAX_BATCH = 16  # the most chunks vocoded in one call


@dataclass(frozen=True)
class VocodeRow:
    """One chunk: speech tokens [T] (silence already appended), its voice's ``ref_dict``, its own generator."""

    tokens: torch.Tensor
    ref: dict[str, Any]
    generator: torch.Generator


def _lengths_mask(lengths: torch.Tensor, total: int) -> torch.Tensor:
    """[B, total] True where a row is valid."""
    return ~make_pad_mask(lengths, total)


@contextlib.contextmanager
def _zeroed_past(modules: Sequence[torch.nn.Module], lengths: list[int], base: int, time_dim: int,
                 device: torch.device) -> Iterator[None]:
    """While open, each module's input is zeroed past its row's length. ``lengths`` are at a base resolution of
    ``base`` steps; a module seeing ``T = r * base + c`` steps (an up- or down-sampled stage) has ``r * length + c``.
    One mask per resolution; none at all when no row is padded."""
    if min(lengths) == base:
        yield
        return
    masks: dict[tuple[int, torch.dtype], torch.Tensor] = {}
    counts = torch.tensor(lengths, device=device)

    def hook(_: torch.nn.Module, args: tuple[torch.Tensor, ...]) -> tuple[torch.Tensor, ...]:
        x = args[0]
        steps = x.shape[time_dim]
        if (steps, x.dtype) not in masks:
            shape = [x.shape[0], 1, 1]
            shape[time_dim] = steps
            valid = steps - (steps // base) * (base - counts)
            masks[steps, x.dtype] = _lengths_mask(valid, steps).to(x.dtype).view(shape)
        return (x * masks[steps, x.dtype],) + args[1:]

    handles = [m.register_forward_pre_hook(hook) for m in modules]
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()


def _convs(module: torch.nn.Module) -> list[torch.nn.Module]:
    return [m for m in module.modules() if isinstance(m, (torch.nn.Conv1d, torch.nn.ConvTranspose1d))]


@torch.inference_mode()
def vocode_rows(s3gen: S3Gen, rows: Sequence[VocodeRow]) -> list[torch.Tensor]:
    """Audio [samples] per row, as ``s3gen.inference(speech_tokens=row.tokens, ref_dict=row.ref,
    n_cfm_timesteps=2)`` gives it with torch's global generator in the state of ``row.generator``."""
    mels, frames = _flow(s3gen, rows)
    wavs = _hift(s3gen.mel2wav, mels.to(s3gen.dtype), frames, [row.generator for row in rows])
    fade = s3gen.trim_fade
    for wav in wavs:
        wav[:len(fade)] *= fade
    return wavs


def _randn(shape: tuple[int, ...], row: VocodeRow, like: torch.Tensor) -> torch.Tensor:
    return torch.randn(shape, generator=row.generator, dtype=like.dtype, device=like.device)


def _flow(s3gen: S3Gen, rows: Sequence[VocodeRow]) -> tuple[torch.Tensor, list[int]]:
    """Mels of the generated part, [B, 80, frames] padded, and each row's frame count (twice its tokens): upstream's
    ``flow_inference`` -> ``CausalMaskedDiffWithXvec.inference`` -> ``CausalConditionalCFM.forward`` -> ``basic_euler``
    for every row at once."""
    flow, dev, dtype = s3gen.flow, s3gen.device, s3gen.dtype
    refs = [{k: v.to(device=dev, dtype=dtype) if torch.is_tensor(v) else v for k, v in row.ref.items()} for row in rows]
    prompts = [ref["prompt_token"].reshape(-1).long() for ref in refs]
    feats = [ref["prompt_feat"].reshape(-1, ref["prompt_feat"].shape[-1]) for ref in refs]  # [2P, 80]
    tokens = [row.tokens.to(dev).reshape(-1) for row in rows]
    lengths = [len(p) + len(t) for p, t in zip(prompts, tokens)]
    total = max(lengths)
    batch = len(rows)
    probe = torch.empty(0, dtype=dtype, device=dev)
    # the solo run's draws, in its order: flow_inference's noise for the generated mels, then the estimator's z
    noised = [_randn((1, 80, 2 * len(t)), row, probe) for row, t in zip(rows, tokens)]
    z = torch.zeros(batch, 80, 2 * total, dtype=dtype, device=dev)
    for i, (row, n) in enumerate(zip(rows, lengths)):
        z[i, :, :2 * n] = _randn((1, 80, 2 * n), row, probe)[0]
        z[i, :, 2 * len(prompts[i]):2 * n] = noised[i][0]

    token = torch.zeros(batch, total, dtype=torch.long, device=dev)
    for i, (p, t) in enumerate(zip(prompts, tokens)):
        token[i, :len(p)], token[i, len(p):lengths[i]] = p, t
    token_len = torch.tensor(lengths, device=dev)
    embedding = torch.cat([torch.atleast_2d(ref["embedding"]) for ref in refs])
    embedding = flow.spk_embed_affine_layer(F.normalize(embedding, dim=1))
    x = flow.input_embedding(token) * _lengths_mask(token_len, total).unsqueeze(-1).to(embedding)
    with _zeroed_past([flow.encoder.pre_lookahead_layer], lengths, total, time_dim=1, device=dev):
        h, _ = flow.encoder(x, token_len)
    mu = flow.encoder_proj(h).transpose(1, 2).contiguous()  # [B, 80, 2 * total]
    cond = torch.zeros_like(mu)
    for i, feat in enumerate(feats):
        cond[i, :, :len(feat)] = feat.T
    mel_len = 2 * token_len
    mask = _lengths_mask(mel_len, mu.shape[2]).unsqueeze(1).to(mu)

    estimator = flow.decoder.estimator
    x, mu, mask, embedding, cond = (t.to(estimator.dtype) for t in (z, mu, mask, embedding, cond))
    t_span = torch.linspace(0, 1, N_TIMESTEPS + 1, device=dev, dtype=x.dtype)
    for t, r in zip(t_span[:-1], t_span[1:]):
        t, r = t[None], r[None]
        x = x + (r - t) * estimator.forward(x, mask=mask, mu=mu, t=t, spks=embedding, cond=cond, r=r)
    x = x.to(dtype)

    starts = [len(feat) for feat in feats]  # upstream cuts at the prompt mels' length
    counts = [2 * n - start for n, start in zip(lengths, starts)]
    out = torch.zeros(batch, 80, max(counts), dtype=dtype, device=dev)
    for i, (start, count) in enumerate(zip(starts, counts)):
        out[i, :, :count] = x[i, :, start:start + count]
    return out, counts


def _hift(hift: HiFTGenerator, mel: torch.Tensor, frames: list[int],
          generators: Sequence[torch.Generator]) -> list[torch.Tensor]:
    """``HiFTGenerator.inference`` (no cache source) for every row at once; audio [samples] per row."""
    base = mel.shape[2]
    with _zeroed_past(_convs(hift), frames, base, time_dim=2, device=mel.device):
        f0 = hift.f0_predictor(mel)
        s = hift.f0_upsamp(f0[:, None]).transpose(1, 2)  # [B, samples, 1]
        samples = [n * (s.shape[1] // base) for n in frames]
        s = _source(hift, s, samples, generators).transpose(1, 2)  # [B, 1, samples]
        return _decode(hift, mel, s, samples)


def _source(hift: HiFTGenerator, f0: torch.Tensor, samples: list[int],
            generators: Sequence[torch.Generator]) -> torch.Tensor:
    """``SourceModuleHnNSF.forward`` (its ``SineGen`` included) with each row's phases and noise from its own
    generator. Its last draw (the noise branch, unused by ``inference``) is skipped: nothing is drawn after it."""
    source = hift.m_source
    sine_gen = source.l_sin_gen
    f0 = f0.transpose(1, 2)  # [B, 1, samples]
    harmonics = sine_gen.harmonic_num + 1
    f_mat = torch.cat([f0 * (i + 1) / sine_gen.sampling_rate for i in range(harmonics)], dim=1)
    theta = 2 * np.pi * (torch.cumsum(f_mat, dim=-1) % 1)
    low, high = torch.tensor(-np.pi), torch.tensor(np.pi)  # as torch.distributions.Uniform(-pi, pi) samples
    phase = torch.stack([low + torch.rand((harmonics, 1), generator=g, device=g.device) * (high - low)
                         for g in generators]).to(f_mat.device)
    phase[:, 0, :] = 0
    sine = sine_gen.sine_amp * torch.sin(theta + phase)
    uv = (f0 > sine_gen.voiced_threshold).type(torch.float32)
    noise_amp = uv * sine_gen.noise_std + (1 - uv) * sine_gen.sine_amp / 3
    draws = torch.zeros_like(sine)
    for i, g in enumerate(generators):
        n = samples[i]
        draws[i, :, :n] = torch.randn((1, harmonics, n), generator=g, dtype=sine.dtype, device=g.device)[0]
    sine = sine * uv + noise_amp * draws
    return source.l_tanh(source.l_linear(sine.transpose(1, 2)))


def _decode(hift: HiFTGenerator, x: torch.Tensor, s: torch.Tensor, samples: list[int]) -> list[torch.Tensor]:
    """``HiFTGenerator.decode`` with the STFT and inverse STFT per row (their edges depend on the row's length)."""
    specs = []
    for i in range(x.shape[0]):
        real, imag = hift._stft(s[i:i + 1, 0, :samples[i]])
        specs.append(torch.cat([real, imag], dim=1)[0])
    s_stft = torch.zeros(x.shape[0], specs[0].shape[0], max(sp.shape[1] for sp in specs), dtype=x.dtype,
                         device=x.device)
    for i, spec in enumerate(specs):
        s_stft[i, :, :spec.shape[1]] = spec

    x = hift.conv_pre(x)
    for i in range(hift.num_upsamples):
        x = F.leaky_relu(x, hift.lrelu_slope)
        x = hift.ups[i](x)
        if i == hift.num_upsamples - 1:
            x = hift.reflection_pad(x)
        x = x + hift.source_resblocks[i](hift.source_downs[i](s_stft))
        xs = hift.resblocks[i * hift.num_kernels](x)
        for j in range(1, hift.num_kernels):
            xs += hift.resblocks[i * hift.num_kernels + j](x)
        x = xs / hift.num_kernels
    x = hift.conv_post(F.leaky_relu(x))
    half = hift.istft_params["n_fft"] // 2 + 1
    wavs = []
    for i, spec in enumerate(specs):
        row = x[i:i + 1, :, :spec.shape[1]]
        wav = hift._istft(torch.exp(row[:, :half]), torch.sin(row[:, half:]))
        wavs.append(torch.clamp(wav, -hift.audio_limit, hift.audio_limit)[0])
    return wavs
