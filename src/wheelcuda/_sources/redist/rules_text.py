"""What wheelcuda says of NVIDIA's archives (pure): what to bring to a machine without the
network (``install --no-fetch``, and a fetch whose network failed), doctor's one line,
sizes in MB, and the fixes of an archive that cannot be read or does not match.

The store (:mod:`wheelcuda._sources.redist.store_archives`) reads what these need (the
manifest, when it can) and hands it over; nothing here reads anything.
"""

from __future__ import annotations

from collections.abc import Sequence

from . import data
from . import rules as redist

#: The fix of a manifest or an archive that cannot be read.
UNREACHABLE_FIX = (f"check the address; a mirror laid out like {data.BASE_URL} is named by "
                   f"{data.MIRROR_VAR}")
#: The fix of an archive whose size or sha256 is not the manifest's.
DAMAGED_FIX = ("run again to download it anew; if it fails the same way, the server or mirror "
               "serves a damaged file: use NVIDIA's (unset WHEELCUDA_REDIST_URL)")


def mb(n: int, total: int) -> str:
    """``n`` bytes in MB, with a decimal when the whole (``total`` bytes) is under 10 MB."""
    return f"{n / 1e6:.1f}" if total < 10_000_000 else f"{n / 1e6:.0f}"


def total(archives: Sequence[redist.Archive]) -> str:
    return f"{sum(a.size for a in archives) / 1e6:.0f} MB"


def next_step(location: str, *, local: bool, known: bool) -> str:
    """The command run once the files are in DIR: a known release's manifest is found
    there; a manifest the user named (``location``) is named again, in DIR when it was
    read from a URL (not ``local``)."""
    named = location if local else f"DIR/{location.rsplit('/', 1)[-1]}"
    return ("wheelcuda fetch --from DIR" if known else
            f"wheelcuda fetch --redist-manifest {named} --from DIR")


def listing_planned(plan: redist.Plan, cuda: str, then: str) -> str:
    """What to bring, from a manifest read: its files, each with its URL, size and sha256."""
    lines = redist.listing(plan.archives, plan.manifest_url, plan.manifest_sha256)
    return "\n".join([
        f"the CUDA {cuda} compiler from NVIDIA's archives (release {plan.label}, "
        f"{plan.platform}) is these files: download them into one folder DIR, then run: "
        f"{then}", *(f"  {line}" for line in lines)])


def listing_offline(cuda: str, release: data.Release | None, *, platform: str,
                    location: str, known: tuple[redist.Archive, ...] | None, base: str,
                    then: str) -> str:
    """What to bring, without reading the manifest at ``location``: the files of a known
    release (``known``), else the manifest to download first and what to take from it
    (the archives' paths under ``base``)."""
    pin = f" (sha256 {release.manifest_sha256})" if release and release.manifest_sha256 else ""
    if release and known:
        lines = redist.listing(known, location, release.manifest_sha256 or "(not pinned)")
        return "\n".join([
            f"the CUDA {cuda} compiler from NVIDIA's archives (release {release.label}, "
            f"{platform}, {total(known)}): the manifest and these files (as "
            f"wheelcuda knows them; each is checked by size and sha256), in one folder DIR, "
            f"then: {then}", *(f"  {line}" for line in lines)])
    names = ", ".join(p.name for p in data.PARTS[int(cuda.split(".", 1)[0])])
    return (f"the CUDA {cuda} compiler from NVIDIA's archives ({platform}): "
            f"download {location}{pin} and the {names} archives it lists for {platform} "
            f"(each entry's relative_path under {base}) into one folder DIR, "
            f"then run: {then}")


def summary_listed(plan: redist.Plan, location: str) -> str:
    """Doctor's line for a manifest read from a file."""
    return (f"release {plan.label}, {plan.platform}, {total(plan.archives)}, as {location} "
            "lists them")


def summary(release: data.Release | None, location: str, *, platform: str,
            known: Sequence[redist.Archive] | None, base: str) -> str:
    """Doctor's line without the manifest: the release, its size when wheelcuda knows
    its archives, and where they come from (``base``)."""
    label = f"release {release.label}" if release else f"the release {location} names"
    size = f", {total(known)}" if known else " (sizes as its manifest lists them)"
    return f"{label}, {platform}{size}, from {base}"
