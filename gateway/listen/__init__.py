"""The caller's side of a call: their audio to the controller, voice activity, barge-in at the edge.

``aec.py`` (the echo canceller: what the gateway sent on the call taken out of what the caller sends, before the
VAD), ``silero.py`` (the VAD model on onnxruntime), ``detector.py`` (pure: speech onsets and ends from the model's
probabilities, with the echo guard), ``echo.py`` (pure: how loud the gateway's own voice is now), ``barge_in.py``
(pure: what an onset does to the speech under way), ``feed.py`` (pure: the bounded caller audio a controller
reads), ``caller.py`` (a call's inbound audio through all of them), ``messages.py`` (pure: ``listen`` and
``barge_in`` from the controller).
"""
