"""The clang toolkit's ``bin/fatbinary``: NVIDIA's fatbinary's job, over libnvfatbin.

Standalone on purpose (see _clang_nvcc): run by a sh trampoline with ``-I -S`` on
wheelcuda's Python, which sets ``WHEELCUDA_NVFATBIN`` to the ``libnvfatbin.so.12`` of
the nvidia-nvfatbin-cu12 wheel. clang calls ``fatbinary`` for every CUDA compile, even
without relocatable device code, and takes one from PATH when ``--cuda-path`` has none,
so the tree must have this one.

It takes the two forms clang writes: clang 19's ``--image=profile=sm_90,file=F`` (and
``profile=compute_90`` for PTX) and clang 20+'s ``--image3=kind=elf,sm=90,file=F`` (and
``kind=ptx``). ``WHEELCUDA_FATBIN_SASS`` (set by the clang toolkit's nvcc) lists the
archs whose SASS was asked for; SASS clang made only on the way to PTX is left out, so
``code=compute_90`` gives PTX alone, as nvcc does. Anything else stops with a message.
"""

from __future__ import annotations

import ctypes
import os
import sys


class Image:
    def __init__(self, kind: str, arch: str, path: str) -> None:
        self.kind = kind  # "elf" or "ptx"
        self.arch = arch  # "90", "90a"
        self.path = path


class Usage(Exception):
    pass


def _fields(value: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for part in value.split(","):
        key, sep, val = part.partition("=")
        if not sep:
            raise Usage(f"--image {value}: {part!r} is not key=value")
        out[key] = val
    return out


def _image(word: str, value: str) -> Image:
    f = _fields(value)
    if "file" not in f:
        raise Usage(f"{word}={value}: no file=")
    if word == "--image3":
        kind = f.get("kind", "")
        if kind not in ("elf", "ptx"):
            raise Usage(f"{word}={value}: image kind {kind!r} is not one this fatbinary "
                        "makes (elf, ptx); LTO and relocatable images need NVIDIA's "
                        "toolkit (--toolkit redist or --toolkit local)")
        return Image(kind, f.get("sm", ""), f["file"])
    profile = f.get("profile", "")
    if profile.startswith("sm_"):
        return Image("elf", profile[3:], f["file"])
    if profile.startswith("compute_"):
        return Image("ptx", profile[8:], f["file"])
    raise Usage(f"{word}={value}: profile {profile!r} is neither sm_X nor compute_X")


def parse(args: list[str]) -> tuple[str, list[Image]]:
    """(output path, images) from a fatbinary call (pure)."""
    out = ""
    images: list[Image] = []
    words = iter(args)
    for word in words:
        key, sep, value = word.partition("=")
        if key in ("--image", "--image3"):
            images.append(_image(key, value if sep else next(words, "")))
        elif key in ("--create", "-create"):
            out = value if sep else next(words, "")
        elif word in ("-64", "--64", "--cuda", "-cuda", "-g", "--compress-all", "-c"):
            continue
        else:
            raise Usage(f"option {word}: not one this fatbinary takes")
    if not out:
        raise Usage("no --create OUTPUT")
    if not images:
        raise Usage("no --image to put in it")
    return out, images


def select(images: list[Image], sass: str | None) -> list[Image]:
    """Leave out SASS for archs not in ``sass`` (comma list); None keeps all (pure)."""
    if not images:
        raise Usage("no device code to put in the fatbin")
    if sass is None:
        return images
    keep = {a for a in sass.split(",") if a}
    kept = [i for i in images if i.kind == "ptx" or i.arch in keep]
    if not kept:  # an empty fatbin links, and the kernel is missing at run time
        made = ", ".join(f"{i.kind} {i.arch}" for i in images)
        raise Usage(f"none of the device code made ({made}) is for the archs asked "
                    f"({sass or 'PTX only'}): the fatbin would hold no kernel")
    return kept


def _check(lib: ctypes.CDLL, result: int, what: str) -> None:
    if result != 0:
        lib.nvFatbinGetErrorString.restype = ctypes.c_char_p
        text = lib.nvFatbinGetErrorString(result) or b"?"
        raise Usage(f"libnvfatbin: {what}: {text.decode(errors='replace')}")


def _library(path: str) -> ctypes.CDLL:
    lib = ctypes.CDLL(path)
    size_p, handle_p = ctypes.POINTER(ctypes.c_size_t), ctypes.POINTER(ctypes.c_void_p)
    signatures = {
        "nvFatbinCreate": [handle_p, ctypes.POINTER(ctypes.c_char_p), ctypes.c_size_t],
        "nvFatbinDestroy": [handle_p],
        "nvFatbinAddPTX": [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p,
                           ctypes.c_char_p, ctypes.c_char_p],
        "nvFatbinAddCubin": [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t,
                             ctypes.c_char_p, ctypes.c_char_p],
        "nvFatbinSize": [ctypes.c_void_p, size_p],
        "nvFatbinGet": [ctypes.c_void_p, ctypes.c_void_p],
    }
    for name, argtypes in signatures.items():
        function = getattr(lib, name)
        function.argtypes = argtypes
        function.restype = ctypes.c_int
    return lib


def build(library: str, images: list[Image]) -> bytes:
    lib = _library(library)
    handle = ctypes.c_void_p()
    kept: list[bytes] = []  # each image stays alive until the fatbin is made
    options = (ctypes.c_char_p * 2)(b"-64", b"-cuda")
    _check(lib, lib.nvFatbinCreate(ctypes.byref(handle), options, ctypes.c_size_t(2)),
           "create")
    try:
        for image in images:
            with open(image.path, "rb") as f:
                data = f.read()
            kept.append(data)
            name = os.path.basename(image.path).encode()
            arch = image.arch.encode()
            if image.kind == "ptx":
                data += b"\0"
                kept.append(data)
                _check(lib, lib.nvFatbinAddPTX(handle, data, ctypes.c_size_t(len(data)), arch,
                                               name, b""), f"PTX for {image.arch}")
            else:
                _check(lib, lib.nvFatbinAddCubin(handle, data, ctypes.c_size_t(len(data)),
                                                 arch, name), f"SASS for sm_{image.arch}")
        size = ctypes.c_size_t()
        _check(lib, lib.nvFatbinSize(handle, ctypes.byref(size)), "size")
        buf = ctypes.create_string_buffer(size.value)
        _check(lib, lib.nvFatbinGet(handle, buf), "get")
        return buf.raw
    finally:
        lib.nvFatbinDestroy(ctypes.byref(handle))


def main() -> None:
    try:
        out, images = parse(sys.argv[1:])
        images = select(images, os.environ.get("WHEELCUDA_FATBIN_SASS"))
        data = build(os.environ.get("WHEELCUDA_NVFATBIN", "libnvfatbin.so.12"), images)
        with open(out, "wb") as f:
            f.write(data)
    except (Usage, OSError, AttributeError) as exc:  # AttributeError: a libnvfatbin without
        # a function this needs
        sys.stderr.write(f"fatbinary (wheelcuda, clang toolkit): error: {exc}\n")
        sys.exit(1)


if __name__ == "__main__":
    main()
