"""Compaction-recovery packets (seeds 000/001, hooks-contract §5.3).

capture.py reads the live transcript's bounded tail at PreCompact;
extract.py picks the items; keep.py carries the keep-until-closed list and
standing instructions across captures; repo.py fingerprints the repository;
render.py frames the packet for delivery; store.py keeps packets in the
catalog; metric.py measures recovery from the usage log.
"""
