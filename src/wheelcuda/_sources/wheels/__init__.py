"""NVIDIA's CUDA wheels: the target environment's own (:mod:`.venv`) and those wheelcuda
fetched into its store (:mod:`.store`), which count as one source."""
