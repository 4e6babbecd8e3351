"""/v1/lexicons: pronunciation lexicons (W3C PLS or ElevenLabs' rules JSON) listed, stored and deleted on every
engine worker. A lexicon is named in an utterance's ``lexicons`` (or ElevenLabs' ``pronunciation_dictionary_locators``);
``default`` applies to every utterance, one named after a voice to that voice's (docs/text.md)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from engine.protocol import MAX_LEXICON_BYTES
from gateway.http.body import bounded_body
from gateway.http.errors import ApiError, engine_call
from gateway.shared_state import GatewayState


async def list_lexicons(request: Request) -> Response:
    state: GatewayState = request.app.state.gateway
    return JSONResponse({"lexicons": await engine_call(state.engine.list_lexicons())})


async def put_lexicon(request: Request) -> Response:
    """The body is the lexicon file itself (``application/pls+xml`` or JSON); a lexicon of that name is replaced."""
    state: GatewayState = request.app.state.gateway
    data = await bounded_body(request, MAX_LEXICON_BYTES,
                              ApiError(413, "too_large", f"a lexicon is at most {MAX_LEXICON_BYTES} bytes"))
    lexicon = await engine_call(state.engine.add_lexicon(request.path_params["name"], data))
    state.prompts.drop("lexicons", request.path_params["name"])  # prompts read with the old one
    return JSONResponse({"lexicon": lexicon}, status_code=201)


async def delete_lexicon(request: Request) -> Response:
    state: GatewayState = request.app.state.gateway
    await engine_call(state.engine.delete_lexicon(request.path_params["name"]))
    state.prompts.drop("lexicons", request.path_params["name"])
    return Response(status_code=204)
