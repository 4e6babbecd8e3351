"""WHEP (WebRTC-HTTP Egress Protocol, draft-ietf-wish-whep): the standard way for media tools and phone bridges to
receive a WebRTC stream, here the gateway's speech.

``POST /v1/whep[/{voice}]`` with an ``application/sdp`` offer → ``201 Created``, the SDP answer as the body, and
``Location: /v1/whep/sessions/{id}``; ``DELETE`` on that location ends the session. ICE is gathered in full before
answering, so there is nothing to trickle: ``PATCH`` answers 405. The session's speech is driven by a controller
attached by its id (gateway/webrtc/control.py), or by a data channel if the offer has one.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from gateway.http.body import bounded_body
from gateway.guard.auth import presented_key, tenant_of
from gateway.http.errors import ApiError, error_response
from gateway.shared_state import GatewayState
from gateway.webrtc.signalling import MAX_SDP_BYTES, checked_codec, find_peer, open_peer

SDP = "application/sdp"
SESSIONS = "/v1/whep/sessions/"


async def offer(request: Request) -> Response:
    """An SDP offer → 201 with the answer; ``?codec=pcmu|pcma|opus`` to choose (else the offer's order)."""
    state: GatewayState = request.app.state.gateway
    if request.headers.get("content-type", "").split(";")[0].strip().lower() != SDP:
        raise ApiError(415, "unsupported_media_type", f"a WHEP offer is a body of type {SDP}")
    raw = await bounded_body(request, MAX_SDP_BYTES, ApiError(413, "too_large", f"the SDP is over {MAX_SDP_BYTES} bytes"))
    try:
        sdp = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ApiError(400, "bad_sdp", "the SDP is not UTF-8") from None
    peer = await open_peer(state, sdp, request.path_params.get("voice", "default"),
                           checked_codec(request.query_params.get("codec")), presented_key(request),
                           tenant_of(request))
    return Response(peer.pc.localDescription.sdp, status_code=201, media_type=SDP,
                    headers={"Location": SESSIONS + peer.id})


async def endpoint_options(request: Request) -> Response:
    """What the WHEP endpoint takes (a CORS preflight is answered by the CORS middleware before this)."""
    return Response(status_code=204, headers={"Accept-Post": SDP, "Allow": "OPTIONS, POST"})


async def end_session(request: Request) -> Response:
    """``DELETE /v1/whep/sessions/{session}``: end the session and its peer connection."""
    peer = find_peer(request.app.state.gateway, request.path_params["session"])
    if peer is None:
        raise ApiError(404, "unknown_session", "no live WebRTC session has this id")
    await peer.close("the session was ended with DELETE")
    return Response(status_code=200)


async def session_patch(request: Request) -> Response:
    """No trickle ICE, no ICE restart: the answer already carries every candidate."""
    return error_response(405, "method_not_allowed", "this server does not trickle ICE or restart it: the answer "
                          "carries every candidate; PATCH is not supported", {"Allow": "DELETE, OPTIONS"})


async def session_options(request: Request) -> Response:
    return Response(status_code=204, headers={"Allow": "DELETE, OPTIONS"})
