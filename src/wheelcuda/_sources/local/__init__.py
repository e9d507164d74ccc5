"""A CUDA toolkit already on this machine, offered through a shim of links (see
:mod:`.source`)."""
