"""WebRTC's audio-processing module (AEC3) through LiveKit's binding (``livekit.rtc``), at the least cost per 10 ms.

The binding's ``AudioProcessingModule`` builds, serialises and parses a protobuf message and wraps the samples in an
``AudioFrame`` for every block: about a quarter of a block's cost at 8 kHz (measured: 78 -> 59 us a block, far and
near end). Its requests name the samples by address, so here each module has two fixed buffers and each of its two
per-block requests is serialised once, at the start, and sent as is: a block is two copies into the buffers, two
native calls and a copy out. Replies are compared with the bytes of a reply without an error and parsed only where they
differ. ``livekit`` is pinned to one version in pyproject.toml: these are its own messages, sent through its own
library (``FfiClient``); ``set_stream_delay_ms``, rarely called, goes through its public method.
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

_BYTES = ctypes.POINTER(ctypes.c_ubyte)


class _Request:
    """One FFI request, serialised once and sent as is; ``kind`` its field in ``FfiRequest`` and ``FfiResponse``."""

    def __init__(self, client: Any, proto: Any, kind: str, fields: dict[str, int]) -> None:
        request = proto.FfiRequest()
        for name, value in fields.items():
            setattr(getattr(request, kind), name, value)
        self._data = request.SerializeToString()  # kept: the pointer below is into it
        self._pointer = ctypes.cast(ctypes.c_char_p(self._data), _BYTES)
        ok = proto.FfiResponse()
        getattr(ok, kind).SetInParent()
        self._ok = ok.SerializeToString()
        self._proto, self._kind = proto, kind
        self._client = client
        self._send = client._ffi_lib.livekit_ffi_request
        self._drop = client._ffi_lib.livekit_ffi_drop_handle
        self._reply, self._reply_size = _BYTES(), ctypes.c_size_t()

    def __call__(self) -> None:
        handle = self._send(self._pointer, len(self._data), ctypes.byref(self._reply), ctypes.byref(self._reply_size))
        reply = ctypes.string_at(self._reply, self._reply_size.value)
        self._drop(handle)
        if reply != self._ok:
            response = self._proto.FfiResponse()
            response.ParseFromString(reply)
            error = getattr(response, self._kind).error
            if error:
                raise RuntimeError(error)


class WebRtcApm:
    """WebRTC's AEC3 (with its high-pass filter; no noise suppression or gain control: the VAD and the controller's
    STT want the caller as they spoke) on 10 ms blocks of s16 at ``rate``."""

    def __init__(self, rate: int) -> None:
        from livekit import rtc  # imported on first use: only calls with caller audio need it
        from livekit.rtc._ffi_client import FfiClient
        from livekit.rtc._proto import ffi_pb2

        self.rate = rate
        self._apm = rtc.AudioProcessingModule(echo_cancellation=True, high_pass_filter=True)
        block = rate // 100
        self._buffers = (bytearray(2 * block), bytearray(2 * block))  # far, near: their addresses are in the requests
        self._far, self._near = (np.frombuffer(b, dtype="<i2") for b in self._buffers)
        self._reverse, self._stream = (
            _Request(FfiClient.instance, ffi_pb2, kind, {
                "apm_handle": self._apm._ffi_handle.handle,
                "data_ptr": ctypes.addressof(ctypes.c_char.from_buffer(buffer)), "size": len(buffer),
                "sample_rate": rate, "num_channels": 1})
            for kind, buffer in (("apm_process_reverse_stream", self._buffers[0]),
                                 ("apm_process_stream", self._buffers[1])))
        self._delay_ms: int | None = None  # the delay the module was last told

    def process(self, far: np.ndarray, near: np.ndarray, delay_ms: int) -> np.ndarray:
        self._far[:] = far
        self._reverse()
        self._near[:] = near
        if delay_ms != self._delay_ms:  # the module keeps it (the same output as telling it every block, a tenth
            self._apm.set_stream_delay_ms(delay_ms)  # of the block's cost saved)
            self._delay_ms = delay_ms
        self._stream()
        return self._near.copy()
