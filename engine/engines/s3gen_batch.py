"""S3Gen over several chunks in one call: each row's audio equals its solo ``S3Gen.inference`` (float tolerance).

Upstream's ``S3Gen.inference`` handles one chunk; at the Turbo sizes a call dispatches thousands of small operations
whatever its length, so on a GPU each chunk costs its launch time. Here rows of any voices and lengths are padded to a
common ``Shape`` and go together through upstream's own modules, in upstream's order: the flow encoder, the 2 meanflow
steps of the estimator and the HiFT vocoder, then each row is cut back to its length.

The call is two stages over plain tensors (``flow_stage``; ``hift_stage``: HiFT's source, STFT, decoder and inverse
STFT) with a little per-row work around them (each row's noise and inputs, the prompt cut, each row's audio cut back).
The stages have static shapes and no host synchronisation, so ``s3gen_graphs`` captures each as a CUDA graph per
bucket; eagerly (``vocode_rows``) they run at the call's exact sizes.

Why each row stays its solo run:
- Flow: a row is ``[its voice's prompt tokens][its tokens]`` then padding, with its own lengths; the encoder and the
  estimator take padding masks (attention and every block are masked; the estimator's convolutions are causal). The one
  look-ahead convolution (``PreLookaheadLayer``) would see padding where the solo run sees zeros, so its input is
  zeroed there. Conditions and the prompt-part cut are per row (voices' prompts differ in length).
- HiFT is convolutions without masks, so every convolution's input is zeroed past the row's length (the zeros its
  solo run pads with). Its STFT reflects each row at the row's own end (a gather), and its inverse STFT overlap-adds
  only the row's own frames, window envelope included, so both edges are the solo run's.
- Noise: each row draws from its own generator exactly what the solo run draws from torch's global one, same shapes,
  same order (the flow's noise, the estimator's initial noise, HiFT's sine phases and noise). So seeding a row's
  generator with ``s`` reproduces ``torch.manual_seed(s); s3gen.inference(...)`` on the same device.
- Rows added to fill a batch bucket copy the first row's inputs; their audio is dropped.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import torch
import torch.nn.functional as F
from chatterbox.models.s3gen import S3Gen
from chatterbox.models.s3gen.hifigan import HiFTGenerator
from chatterbox.models.s3gen.utils import mask as upstream_mask
from chatterbox.models.s3gen.utils.mask import make_pad_mask

N_TIMESTEPS = 2  # Turbo's meanflow steps (``n_cfm_timesteps=2``)
MAX_BATCH = 16  # the most chunks vocoded in one call
MEL_PER_TOKEN = 2  # the flow's mel frames per speech token


@dataclass(frozen=True)
class VocodeRow:
    """One chunk: speech tokens [T] (silence already appended), its voice's ``ref_dict``, its own generator."""

    tokens: torch.Tensor
    ref: dict[str, Any]
    generator: torch.Generator


@dataclass(frozen=True)
class Shape:
    """A call's padded sizes: rows, flow positions (a row's prompt tokens then its chunk's) and generated mel frames."""

    batch: int
    positions: int
    frames: int


@dataclass
class FlowInputs:
    token: torch.Tensor  # [B, positions] long: prompt then chunk tokens, zero-padded
    token_len: torch.Tensor  # [B] long
    embedding: torch.Tensor  # [B, E] the voices' x-vectors as stored
    cond: torch.Tensor  # [B, 80, 2 * positions] the prompt mels, zero after
    z: torch.Tensor  # [B, 80, 2 * positions] the estimator's initial noise, the flow's noise placed in it


@dataclass
class HiftInputs:
    starts: torch.Tensor  # [B] long: where a row's generated mels begin in the flow's output (its prompt mels' length)
    frames: torch.Tensor  # [B] long: a row's generated mel frames
    phase: torch.Tensor  # [B, harmonics, 1] the sine generator's initial phases
    draws: torch.Tensor  # [B, harmonics, samples] the sine generator's noise, zero past a row's samples


@dataclass
class Prepared:
    """One call's inputs at its ``shape``, and each row's sizes (rows past ``count`` only fill a bucket)."""

    shape: Shape
    flow: FlowInputs
    hift: HiftInputs
    samples: list[int]  # per batch row
    count: int


class Stages(Protocol):
    """The two static-shape parts of a call: run eagerly (``EagerStages``) or replayed (``s3gen_graphs``)."""

    def flow(self, shape: Shape, inputs: FlowInputs) -> torch.Tensor: ...

    def hift(self, shape: Shape, mel: torch.Tensor, inputs: HiftInputs) -> torch.Tensor: ...


def _lengths_mask(lengths: torch.Tensor, total: int) -> torch.Tensor:
    """[B, total] True where a row is valid."""
    return ~make_pad_mask(lengths, total)


def graph_safe_chunk_mask(xs: torch.Tensor, masks: torch.Tensor, use_dynamic_chunk: bool,
                          use_dynamic_left_chunk: bool, decoding_chunk_size: int, static_chunk_size: int,
                          num_decoding_left_chunks: int, enable_full_context: bool = True) -> torch.Tensor:
    """Upstream's ``add_optional_chunk_mask`` without its host synchronisation, so the flow can be captured as a CUDA
    graph: upstream asks (``.item()``) whether a row's mask is all false, logs, and sets such rows true; this sets them
    true unconditionally (the same mask, no warning). Padded positions of a batch are such rows. Dynamic chunks (a
    training path, never taken by inference) go to upstream's own function."""
    if use_dynamic_chunk:
        return _UPSTREAM_CHUNK_MASK(xs, masks, use_dynamic_chunk, use_dynamic_left_chunk, decoding_chunk_size,
                                    static_chunk_size, num_decoding_left_chunks, enable_full_context)
    if static_chunk_size > 0:
        chunk = upstream_mask.subsequent_chunk_mask(xs.size(1), static_chunk_size, num_decoding_left_chunks, xs.device)
        masks = masks & chunk.unsqueeze(0)
    return masks | (masks.sum(dim=-1, keepdim=True) == 0)


_UPSTREAM_CHUNK_MASK = upstream_mask.add_optional_chunk_mask


def _install_graph_safe_masks() -> None:
    """Point the flow encoder's and estimator's ``add_optional_chunk_mask`` at ``graph_safe_chunk_mask``, once, on
    import: every S3Gen call in the process then uses the same masks, only the synchronisation and its warning go."""
    from chatterbox.models.s3gen import decoder
    from chatterbox.models.s3gen.transformer import upsample_encoder

    for module in (decoder, upsample_encoder):
        module.add_optional_chunk_mask = graph_safe_chunk_mask


_install_graph_safe_masks()


class _PastZeroing:
    """Forward pre-hooks, installed once on a set of modules, that zero each module's input past its row's length
    while a stage runs (``start``/``stop``) and leave it untouched otherwise. Installed once, not per call: hooks
    registered inside a stage break a torch.compile graph. ``lengths`` [B] are at a base resolution of ``base`` steps;
    a module seeing ``T = r * base + c`` steps (an up- or down-sampled stage) has ``r * length + c``. One mask per
    resolution, computed on the device (no host synchronisation)."""

    def __init__(self, modules: Sequence[torch.nn.Module], time_dim: int) -> None:
        self.time_dim = time_dim
        self.lengths: torch.Tensor | None = None
        self.base = 1
        self.masks: dict[tuple[int, torch.dtype], torch.Tensor] = {}
        for module in modules:
            module.register_forward_pre_hook(self._hook)

    def start(self, lengths: torch.Tensor, base: int) -> None:
        self.lengths, self.base, self.masks = lengths, base, {}

    def stop(self) -> None:
        self.lengths, self.masks = None, {}

    def _hook(self, _: torch.nn.Module, args: tuple[torch.Tensor, ...]) -> tuple[torch.Tensor, ...] | None:
        if self.lengths is None:
            return None
        x = args[0]
        steps = x.shape[self.time_dim]
        if (steps, x.dtype) not in self.masks:
            shape = [x.shape[0], 1, 1]
            shape[self.time_dim] = steps
            valid = steps - (steps // self.base) * (self.base - self.lengths)
            self.masks[steps, x.dtype] = _lengths_mask(valid, steps).to(x.dtype).view(shape)
        return (x * self.masks[steps, x.dtype],) + args[1:]


def _zeroings(s3gen: S3Gen) -> tuple[_PastZeroing, _PastZeroing]:
    """The flow encoder's and HiFT's ``_PastZeroing``, installed on first use (an eager call: the warm-up's). HiFT's
    convolution sizes are made plain ints then too: upstream builds some from numpy ints, which torch.compile's
    guards mishandle under inference mode (seen: "Guard failed on the same frame it was created")."""
    zeroings = s3gen.__dict__.get("_cbf_zeroings")
    if zeroings is None:
        convs = _convs(s3gen.mel2wav)
        for conv in convs:
            for size in ("kernel_size", "stride", "padding", "dilation", "output_padding"):
                if isinstance(getattr(conv, size), tuple):
                    setattr(conv, size, tuple(int(n) for n in getattr(conv, size)))
        zeroings = s3gen.__dict__["_cbf_zeroings"] = (
            _PastZeroing([s3gen.flow.encoder.pre_lookahead_layer], time_dim=1), _PastZeroing(convs, time_dim=2))
    return zeroings


def _convs(module: torch.nn.Module) -> list[torch.nn.Module]:
    return [m for m in module.modules() if isinstance(m, (torch.nn.Conv1d, torch.nn.ConvTranspose1d))]


def samples_per_frame(hift: HiFTGenerator) -> int:
    return int(hift.f0_upsamp.scale_factor)


# ----- inputs -----

def exact_shape(rows: Sequence[VocodeRow]) -> Shape:
    """The smallest shape holding ``rows``."""
    positions = [r.ref["prompt_token"].numel() + r.tokens.numel() for r in rows]
    frames = [MEL_PER_TOKEN * n - r.ref["prompt_feat"].reshape(-1, 80).shape[0] for n, r in zip(positions, rows)]
    return Shape(len(rows), max(positions), max(frames))


def zero_inputs(s3gen: S3Gen, shape: Shape) -> tuple[FlowInputs, HiftInputs]:
    """A call's input tensors at ``shape``, all zero."""
    dev, dtype = s3gen.device, s3gen.dtype
    hift = s3gen.mel2wav
    harmonics = hift.m_source.l_sin_gen.harmonic_num + 1
    batch, total = shape.batch, shape.positions
    cond = torch.zeros(batch, 80, MEL_PER_TOKEN * total, dtype=dtype, device=dev)
    flow = FlowInputs(token=torch.zeros(batch, total, dtype=torch.long, device=dev),
                      token_len=torch.zeros(batch, dtype=torch.long, device=dev),
                      embedding=torch.zeros(batch, s3gen.flow.spk_embed_affine_layer.in_features, dtype=dtype,
                                            device=dev),
                      cond=cond, z=torch.zeros_like(cond))
    return flow, HiftInputs(starts=torch.zeros(batch, dtype=torch.long, device=dev),
                            frames=torch.zeros(batch, dtype=torch.long, device=dev),
                            phase=torch.zeros(batch, harmonics, 1, dtype=dtype, device=dev),
                            draws=torch.zeros(batch, harmonics, shape.frames * samples_per_frame(hift), dtype=dtype,
                                              device=dev))


def prepare(s3gen: S3Gen, rows: Sequence[VocodeRow], shape: Shape) -> Prepared:
    """The call's inputs at ``shape`` (which must hold every row), each row's noise drawn from its generator in the
    order of its solo run."""
    dev, dtype = s3gen.device, s3gen.dtype
    hift = s3gen.mel2wav
    flow, source = zero_inputs(s3gen, shape)
    token, token_len, embedding, cond, z = flow.token, flow.token_len, flow.embedding, flow.cond, flow.z
    starts, frames, phase, draws = source.starts, source.frames, source.phase, source.draws
    harmonics, total = phase.shape[1], shape.positions
    samples: list[int] = []
    sizes: list[tuple[int, int, int]] = []  # per row: positions, prompt mels, generated frames
    low, high = torch.tensor(-np.pi), torch.tensor(np.pi)  # as torch.distributions.Uniform(-pi, pi) samples
    for i, row in enumerate(rows):
        g = row.generator
        prompt = row.ref["prompt_token"].reshape(-1).to(dev).long()
        feat = row.ref["prompt_feat"].reshape(-1, 80).to(device=dev, dtype=dtype)  # [2P, 80]
        chunk = row.tokens.to(dev).reshape(-1)
        n = len(prompt) + len(chunk)
        generated = MEL_PER_TOKEN * n - len(feat)
        if n > total or generated > shape.frames:
            raise ValueError(f"a row of {n} positions and {generated} frames does not fit {shape}")
        # the solo run's draws, in its order: flow_inference's noise for the generated mels, the estimator's z, then
        # HiFT's sine phases and noise
        noised = torch.randn((1, 80, MEL_PER_TOKEN * len(chunk)), generator=g, dtype=dtype, device=dev)
        z[i, :, :MEL_PER_TOKEN * n] = torch.randn((1, 80, MEL_PER_TOKEN * n), generator=g, dtype=dtype, device=dev)[0]
        z[i, :, MEL_PER_TOKEN * len(prompt):MEL_PER_TOKEN * n] = noised[0]
        phase[i] = (low + torch.rand((harmonics, 1), generator=g, device=g.device) * (high - low)).to(phase)
        samples.append(generated * samples_per_frame(hift))
        draws[i, :, :samples[-1]] = torch.randn((1, harmonics, samples[-1]), generator=g, dtype=dtype, device=dev)[0]
        token[i, :len(prompt)], token[i, len(prompt):n] = prompt, chunk
        sizes.append((n, len(feat), generated))
        embedding[i] = torch.atleast_2d(row.ref["embedding"])[0].to(embedding)
        cond[i, :, :len(feat)] = feat.T
    token_len[:len(rows)], starts[:len(rows)], frames[:len(rows)] = torch.tensor(sizes, device=dev).T
    phase[:, 0, :] = 0
    for tensor in (token, token_len, embedding, cond, z, starts, frames, phase, draws):
        tensor[len(rows):] = tensor[0]  # rows that only fill the bucket repeat the first
    samples += samples[:1] * (shape.batch - len(rows))
    return Prepared(shape, flow, source, samples, len(rows))


# ----- the static-shape stages -----

def flow_stage(s3gen: S3Gen, inputs: FlowInputs) -> torch.Tensor:
    """Mels [B, 80, 2 * positions] (prompt part included): upstream's ``flow_inference`` ->
    ``CausalMaskedDiffWithXvec.inference`` -> ``CausalConditionalCFM.forward`` -> ``basic_euler``, every row at once."""
    flow, dtype = s3gen.flow, s3gen.dtype
    total = inputs.token.shape[1]
    embedding = flow.spk_embed_affine_layer(F.normalize(inputs.embedding, dim=1))
    x = flow.input_embedding(inputs.token) * _lengths_mask(inputs.token_len, total).unsqueeze(-1).to(embedding)
    zeroing = _zeroings(s3gen)[0]
    zeroing.start(inputs.token_len, total)
    try:
        h, _ = flow.encoder(x, inputs.token_len)
    finally:
        zeroing.stop()
    mu = flow.encoder_proj(h).transpose(1, 2).contiguous()  # [B, 80, 2 * positions]
    mask = _lengths_mask(MEL_PER_TOKEN * inputs.token_len, mu.shape[2]).unsqueeze(1).to(mu)
    estimator = flow.decoder.estimator
    x, mu, mask, embedding, cond = (t.to(estimator.dtype) for t in (inputs.z, mu, mask, embedding, inputs.cond))
    t_span = torch.linspace(0, 1, N_TIMESTEPS + 1, device=x.device, dtype=x.dtype)
    for t, r in zip(t_span[:-1], t_span[1:]):
        t, r = t[None], r[None]
        x = x + (r - t) * estimator.forward(x, mask=mask, mu=mu, t=t, spks=embedding, cond=cond, r=r)
    return x.to(dtype)


def generated_mels(mels: torch.Tensor, hift: HiftInputs, frames: int) -> torch.Tensor:
    """[B, 80, frames]: each row's mels from its prompt's end (upstream cuts at the prompt mels' length), zero after."""
    at = hift.starts[:, None] + torch.arange(frames, device=mels.device)[None]
    picked = mels.gather(2, at.clamp(max=mels.shape[2] - 1)[:, None, :].expand(-1, mels.shape[1], -1))
    return picked * _lengths_mask(hift.frames, frames)[:, None, :].to(picked)


def hift_stage(s3gen: S3Gen, mel: torch.Tensor, inputs: HiftInputs) -> torch.Tensor:
    """Audio [B, samples], each row valid up to its own length and faded in: ``HiFTGenerator.inference`` (no cache
    source) for every row at once, then upstream's fade."""
    hift = s3gen.mel2wav
    samples = inputs.frames * samples_per_frame(hift)
    zeroing = _zeroings(s3gen)[1]
    zeroing.start(inputs.frames, mel.shape[2])
    try:
        s = _source(hift, mel, inputs)
        x = _decode(hift, mel, _stft(hift, s, samples))
    finally:
        zeroing.stop()
    wav = torch.clamp(_istft(hift, x, samples), -hift.audio_limit, hift.audio_limit)
    wav[:, :len(s3gen.trim_fade)] *= s3gen.trim_fade
    return wav


def _source(hift: HiFTGenerator, mel: torch.Tensor, inputs: HiftInputs) -> torch.Tensor:
    """HiFT's source [B, samples]: ``inference`` up to ``m_source``, with the phases and noise drawn beforehand. Its
    last draw (the noise branch, unused by ``inference``) is skipped: nothing is drawn after it."""
    f0 = hift.f0_upsamp(hift.f0_predictor(mel)[:, None])  # [B, 1, samples]
    source, sine_gen = hift.m_source, hift.m_source.l_sin_gen
    harmonics = sine_gen.harmonic_num + 1
    f_mat = torch.cat([f0 * (i + 1) / sine_gen.sampling_rate for i in range(harmonics)], dim=1)
    theta = 2 * np.pi * (torch.cumsum(f_mat, dim=-1) % 1)
    sine = sine_gen.sine_amp * torch.sin(theta + inputs.phase)
    uv = (f0 > sine_gen.voiced_threshold).type(torch.float32)
    noise_amp = uv * sine_gen.noise_std + (1 - uv) * sine_gen.sine_amp / 3
    sine = sine * uv + noise_amp * inputs.draws
    return source.l_tanh(source.l_linear(sine.transpose(1, 2)))[..., 0]


def _stft(hift: HiFTGenerator, s: torch.Tensor, samples: torch.Tensor) -> torch.Tensor:
    """[B, n_fft + 2, frames]: ``HiFTGenerator._stft`` of each row at its own length (centred: reflected at both of
    its ends); frames past a row's end are left as they come (the decoder's inputs are zeroed there)."""
    n_fft, hop = hift.istft_params["n_fft"], hift.istft_params["hop_len"]
    pad, total = n_fft // 2, s.shape[1]
    at = torch.arange(-pad, total + pad, device=s.device)[None]
    last = (samples - 1)[:, None]
    at = torch.where(at < 0, -at, torch.where(at > last, 2 * last - at, at)).clamp(0, total - 1)
    spec = torch.stft(s.gather(1, at), n_fft, hop, n_fft, window=hift.stft_window, center=False, return_complex=True)
    spec = torch.view_as_real(spec)
    return torch.cat([spec[..., 0], spec[..., 1]], dim=1)


def _decode(hift: HiFTGenerator, x: torch.Tensor, s_stft: torch.Tensor) -> torch.Tensor:
    """``HiFTGenerator.decode`` between its STFT and its inverse STFT."""
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
    return hift.conv_post(F.leaky_relu(x))


def _istft(hift: HiFTGenerator, x: torch.Tensor, samples: torch.Tensor) -> torch.Tensor:
    """[B, samples]: ``HiFTGenerator._istft`` (``torch.istft``, centred) of each row over its own frames only: the
    overlap-add and its window envelope both leave out the frames past the row, as the row's solo run has none."""
    n_fft, hop = hift.istft_params["n_fft"], hift.istft_params["hop_len"]
    half, steps = n_fft // 2 + 1, x.shape[2]
    magnitude = torch.clip(torch.exp(x[:, :half]), max=1e2)
    phase = torch.sin(x[:, half:])
    spec = torch.complex(magnitude * torch.cos(phase), magnitude * torch.sin(phase))
    own = _lengths_mask(samples // hop + 1, steps).to(magnitude)[:, None, :]  # [B, 1, steps]
    window = hift.stft_window[None, :, None]
    length = n_fft + hop * (steps - 1)

    def overlap_add(columns: torch.Tensor) -> torch.Tensor:
        return F.fold(columns, output_size=(1, length), kernel_size=(1, n_fft), stride=(1, hop))[:, 0, 0]

    y = overlap_add(torch.fft.irfft(spec, n=n_fft, dim=1) * window * own)
    envelope = overlap_add((window * window * own).expand(x.shape[0], -1, -1))
    y = torch.where(envelope > 1e-11, y / envelope, 0.0)
    return y[:, n_fft // 2:n_fft // 2 + hop * (steps - 1)]


class EagerStages:
    def __init__(self, s3gen: S3Gen) -> None:
        self.s3gen = s3gen

    def flow(self, shape: Shape, inputs: FlowInputs) -> torch.Tensor:
        return flow_stage(self.s3gen, inputs)

    def hift(self, shape: Shape, mel: torch.Tensor, inputs: HiftInputs) -> torch.Tensor:
        return hift_stage(self.s3gen, mel, inputs)


@torch.inference_mode()
def run(s3gen: S3Gen, call: Prepared, stages: Stages) -> list[torch.Tensor]:
    """Audio [samples] for each of the call's rows (those that fill a bucket dropped): views of the stage's output."""
    mels = generated_mels(stages.flow(call.shape, call.flow), call.hift, call.shape.frames).to(s3gen.dtype)
    wav = stages.hift(call.shape, mels, call.hift)
    return [wav[i, :n] for i, n in enumerate(call.samples[:call.count])]


def vocode_rows(s3gen: S3Gen, rows: Sequence[VocodeRow]) -> list[torch.Tensor]:
    """Audio [samples] per row, as ``s3gen.inference(speech_tokens=row.tokens, ref_dict=row.ref,
    n_cfm_timesteps=2)`` gives it with torch's global generator in the state of ``row.generator``; eager, at the
    rows' exact sizes."""
    with torch.inference_mode():
        return run(s3gen, prepare(s3gen, rows, exact_shape(rows)), EagerStages(s3gen))
