"""The only writer: wheelcuda's cache folder and everything kept in it.

- :mod:`.layout`: where each thing lives (one object, one spelling of every folder);
- :mod:`.fs`: atomic writes, folder swaps and locks, used by everything below;
- :mod:`.memo`: one memo format (answers kept until a stamped file changes);
- :mod:`.trees`: synthesized CUDA_HOME trees (and :mod:`.stub`, their driver stub);
- :mod:`.toolkits`: compiler sets fetched once, shared by every environment;
- :mod:`.wheels`: the wheel cache, keyed by what a binary depends on;
- :mod:`.prune`: what no run can use any more.

Kept empty so that the warm path of ``wheelcuda env`` imports only what it uses.
"""

__all__: list[str] = []
