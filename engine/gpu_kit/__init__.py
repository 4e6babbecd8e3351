"""The GPU measurement kit (``scripts/gpu-bench``): the figures one H200 call measures, and the operation counter."""
